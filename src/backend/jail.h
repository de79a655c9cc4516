/* Putting host files (kernel, rootfs) into a jail directory: the chroot
 * Firecracker's jailer builds, or any directory a VMM is confined to.
 *
 * The jail directory may hold entries we did not make (a leftover jail, a
 * process that already runs in it), so a name in it is never trusted: the
 * file is hard-linked (linkat(2) never follows or replaces the destination)
 * and, only when the jail is on another file system (EXDEV), copied into a
 * file created with O_CREAT|O_EXCL|O_NOFOLLOW, which fails on any existing
 * entry, a planted symlink (dangling or not) included.  Any other link
 * error is an error, never a reason to copy.  docs/microvm-firecracker.md. */
#ifndef AB_BACKEND_JAIL_H
#define AB_BACKEND_JAIL_H

#include <stdint.h>

#include "base/error.h"

enum ab_jail_placed {
	AB_JAIL_LINKED = 0, /* a hard link: same inode, owner and mode as the source */
	AB_JAIL_COPIED = 1, /* a copy: see ab_jail_place */
};

/* Place the regular file at src (the last component must not be a symlink)
 * into jail_dirfd as name (one path component: no '/', not "." or "..").
 * Returns AB_JAIL_LINKED or AB_JAIL_COPIED, or a negative error:
 * AB_E_INVALID (bad name, source not a regular file), AB_E_DENIED (source is
 * a symlink), AB_E_CONFLICT (name already exists in the jail, whatever it
 * is), AB_E_NOT_FOUND, AB_E_SYSTEM.
 *
 * A copy is owned by the caller's effective uid and gid (not chowned: the
 * caller decides who may use it) and gets the source's permission bits
 * without setuid, setgid, sticky and group/other write (mode & 0755); it is
 * created 0600 and widened only once complete, so nobody reads a half copy.
 * Holes in a sparse source stay holes.  On failure nothing is left. */
int ab_jail_place (const char *src, int jail_dirfd, const char *name, ab_error_t *err);

/* How ab_jail_copy_data moves bytes; AUTO tries them in this order, each
 * falling back to the next when the kernel or file system does not do it. */
enum ab_jail_copy_method {
	AB_JAIL_COPY_AUTO,
	AB_JAIL_COPY_RANGE,    /* copy_file_range(2): in-kernel, may share extents */
	AB_JAIL_COPY_SENDFILE, /* sendfile(2): in-kernel */
	AB_JAIL_COPY_RW,       /* read(2)/write(2) with one bounded buffer */
};

/* Copy bytes [0, size) of src_fd into dst_fd at the same offsets (dst_fd
 * is an empty regular file; it is extended to size, holes kept where
 * SEEK_DATA/SEEK_HOLE find them), then make sure src did not grow.  Uses
 * explicit offsets: neither fd's offset matters. */
int ab_jail_copy_data (int src_fd, int dst_fd, uint64_t size, enum ab_jail_copy_method method,
                       ab_error_t *err);

#endif
