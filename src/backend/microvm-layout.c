/* The microVM's filesystem layout from the spec (the layout every backend
 * gives, ARCHITECTURE.md): the host's /usr /bin /sbin /lib* /etc read-only
 * (symlinks such as /bin -> usr/bin recreated as links), the --rootfs
 * image as the root, or a layered root's disk (microvm-disk.c); /workspace read-write; the spec's
 * binds and tmpfs mounts.  Each directory is a 9p share of QEMU's.
 *
 * The guest's commands run as uid 0, and 9p shows host ownership as is,
 * so a host file of root's that "others" may not read (/etc/shadow,
 * /etc/ssl/private) would be readable by its "owner" inside.  Those
 * entries of /etc are hidden twice: QEMU runs in a mount namespace where
 * they are covered (it cannot serve them at all), and the guest masks them
 * too.  (/usr is not scanned: 165,000 entries cost half a second per
 * start; Debian keeps nothing secret there.) */
#include "backend/host-mask.h"
#include "backend/microvm-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

static void
add_share (struct ab_microvm_layout_s *l, const char *tag, const char *path, bool ro)
{
	l->shares = xrealloc (l->shares, (l->n_shares + 1) * sizeof *l->shares);
	l->shares[l->n_shares++] = (struct ab_qemu_share_s){ .tag = xstrdup (tag),
		                                             .path = xstrdup (path),
		                                             .readonly = ro };
}

/* ---- what others cannot read ------------------------------------------------- */

/* The paths under dir that others cannot read (host-mask.c's walk, shared
 * with the gVisor and Docker backends), NULL-terminated. */
char **
ab_microvm_unreadable (const char *dir, ab_error_t *err)
{
	struct ab_oci_mask_s *masks = NULL;
	size_t n = 0;
	char **out;

	if (ab_host_masks_cached (dir, &masks, &n, err) < 0)
		return NULL;
	out = xcalloc (n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = steal_pointer (&masks[i].path);
	ab_host_masks_free (masks, n);
	return out;
}

/* ---- the layout ------------------------------------------------------------------ */

static int
host_root (struct ab_microvm_layout_s *l, ab_error_t *err)
{
	for (size_t i = 0; ab_host_trees[i]; i++) {
		const char *path = ab_host_trees[i];
		char target[4096], tag[16];
		struct stat st;
		ssize_t n;

		if (lstat (path, &st) < 0)
			continue;
		if (S_ISLNK (st.st_mode)) {
			n = readlink (path, target, sizeof target - 1);
			if (n <= 0)
				return ab_error (err, errno, AB_E_SYSTEM, "readlink %s", path);
			target[n] = '\0';
			ab_vm_boot_add (&l->boot, AB_VM_LINK, NULL, path, target, 0);
		} else if (S_ISDIR (st.st_mode)) {
			snprintf (tag, sizeof tag, "h%zu", i);
			add_share (l, tag, path, true);
			ab_vm_boot_add (&l->boot, AB_VM_RO, tag, path, NULL, 0);
		}
	}
	l->masks = xcalloc (1, sizeof *l->masks);
	for (size_t i = 0; ab_host_trees[i]; i++) {
		struct stat st;
		char **v;

		if (lstat (ab_host_trees[i], &st) < 0 || !S_ISDIR (st.st_mode))
			continue; /* a link's target is a tree of its own */
		if (!(v = ab_microvm_unreadable (ab_host_trees[i], err)))
			return -1;
		for (size_t k = 0; v[k]; k++)
			ab_strv_push (&l->masks, v[k]);
		ab_cleanup_strvp (&v);
	}
	for (size_t i = 0; l->masks[i]; i++)
		ab_vm_boot_add (&l->boot, AB_VM_MASK, NULL, l->masks[i], NULL, 0);
	return 0;
}

static int
spec_mounts (const struct ab_spec_s *spec, struct ab_microvm_layout_s *l, ab_error_t *err)
{
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct ab_mount_s *m = &spec->mounts[i];
		bool ro = m->kind == AB_MOUNT_RO_BIND;
		struct stat st;
		char tag[16];

		if (m->kind == AB_MOUNT_TMPFS) {
			ab_vm_boot_add (&l->boot, AB_VM_TMPFS, NULL, m->destination, NULL, m->size);
			continue;
		}
		if (stat (m->source, &st) < 0)
			return ab_error (err, errno, AB_E_INVALID, "mount source %s", m->source);
		if (!S_ISDIR (st.st_mode))
			return ab_error (err, 0, AB_E_INVALID,
			                 "microvm shares directories only (9p): %s is not one",
			                 m->source);
		snprintf (tag, sizeof tag, "m%zu", i);
		add_share (l, tag, m->source, ro);
		ab_vm_boot_add (&l->boot, ro ? AB_VM_RO : AB_VM_RW, tag, m->destination, NULL, 0);
	}
	return 0;
}

int
ab_microvm_layout (const struct ab_spec_s *spec, struct ab_microvm_layout_s *l, ab_error_t *err)
{
	memset (l, 0, sizeof *l);
	l->boot.hostname = xstrdup (spec->hostname);
	l->boot.pids = spec->limits.pids;
	if (spec->root.layers) {
		/* The layers' disk (microvm-disk.c), QEMU's drive; no host tree. */
		ab_vm_boot_add (&l->boot, AB_VM_DISK, spec->root.read_only ? "ro" : "rw", NULL,
		                NULL, 0);
	} else if (spec->rootfs) {
		add_share (l, "root", spec->rootfs, true);
		ab_vm_boot_add (&l->boot, AB_VM_ROOT, "root", NULL, NULL, 0);
	} else if (host_root (l, err) < 0) {
		return -1;
	}
	if (spec->workspace) {
		add_share (l, "ws", spec->workspace, false);
		ab_vm_boot_add (&l->boot, AB_VM_RW, "ws", AB_WORKSPACE_DIR, NULL, 0);
	}
	if (!l->masks)
		l->masks = xcalloc (1, sizeof (char *));
	return spec_mounts (spec, l, err);
}

void
ab_microvm_layout_free (struct ab_microvm_layout_s *l)
{
	for (size_t i = 0; i < l->n_shares; i++) {
		free ((char *)l->shares[i].tag);
		free ((char *)l->shares[i].path);
	}
	free (l->shares);
	for (size_t i = 0; l->masks && l->masks[i]; i++)
		free (l->masks[i]);
	free (l->masks);
	ab_vm_boot_free (&l->boot);
	memset (l, 0, sizeof *l);
}
