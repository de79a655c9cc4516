/* Hard link into a jail, copy only across file systems, never through a
 * name someone else planted (jail.h says why). */
#include "backend/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define COPY_CHUNK (1u << 20) /* per system call, so a signal or a huge file never pins us */
#define RW_BUFFER  (128u * 1024)

static int
check_name (const char *name, ab_error_t *err)
{
	size_t n = strlen (name);
	if (n == 0 || n > NAME_MAX || strchr (name, '/') || strcmp (name, ".") == 0
	    || strcmp (name, "..") == 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'%.64s' is not a single file name for the jail", name);
	return 0;
}

/* O_NOFOLLOW: a symlink as the last component is refused (ELOOP), so what
 * we check is what we link.  O_NONBLOCK: opening a fifo must not hang. */
static int
open_source (const char *src, struct stat *st, ab_error_t *err)
{
	cleanup_close int fd =
	        open (src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0 && errno == ELOOP)
		return ab_error (err, ELOOP, AB_E_DENIED, "%s is a symlink", src);
	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "open %s", src);
	if (fstat (fd, st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fstat %s", src);
	if (!S_ISREG (st->st_mode))
		return ab_error (err, 0, AB_E_INVALID, "%s is not a regular file", src);
	return steal_fd (&fd);
}

/* Link the file we opened (not the path again: no window to swap it).
 * AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (ENOENT without it); the
 * /proc/self/fd magic link does the same for anyone (see linkat(2), the
 * O_TMPFILE example in open(2)). */
static int
link_fd (int fd, int dirfd, const char *name)
{
	char proc[64];

	if (linkat (fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
	return linkat (AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
}

static bool
unsupported (int e)
{
	return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == ENOTSUP;
}

/* One read and the writes it takes; the count written, or -1. */
static ssize_t
copy_rw (int src, int dst, uint64_t off, size_t want, char *buf)
{
	ssize_t r = pread (src, buf, want < RW_BUFFER ? want : RW_BUFFER, (off_t)off);

	for (ssize_t done = 0; r > 0 && done < r;) {
		ssize_t w = pwrite (dst, buf + done, (size_t)(r - done), (off_t)off + done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		done += w;
	}
	return r;
}

/* One method over [*off, end).  0 = done, 1 = this method is not
 * supported here (nothing lost: *off says how far we got), -1 = error. */
static int
copy_region (enum ab_jail_copy_method m, int src, int dst, uint64_t *off, uint64_t end, char *buf)
{
	while (*off < end) {
		size_t want = end - *off < COPY_CHUNK ? (size_t)(end - *off) : COPY_CHUNK;
		loff_t in = (loff_t)*off, out = (loff_t)*off;
		ssize_t r;

		if (m == AB_JAIL_COPY_RANGE)
			r = copy_file_range (src, &in, dst, &out, want, 0);
		else if (m == AB_JAIL_COPY_SENDFILE)
			r = lseek (dst, (off_t)*off, SEEK_SET) < 0 ? -1
			                                           : sendfile (dst, src, &in, want);
		else
			r = copy_rw (src, dst, *off, want, buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return m != AB_JAIL_COPY_RW && unsupported (errno) ? 1 : -1;
		if (r == 0) {
			errno = ENODATA; /* the source shrank under us */
			return -1;
		}
		*off += (uint64_t)r;
	}
	return 0;
}

/* [off, end) with the requested method, or under AUTO each method in turn
 * from where the previous one stopped. */
static int
copy_with_fallback (enum ab_jail_copy_method method, int src, int dst, uint64_t off, uint64_t end,
                    char *buf)
{
	enum ab_jail_copy_method m = method == AB_JAIL_COPY_AUTO ? AB_JAIL_COPY_RANGE : method;

	for (;;) {
		int r = copy_region (m, src, dst, &off, end, buf);
		if (r <= 0)
			return r;
		if (method != AB_JAIL_COPY_AUTO) {
			errno = EOPNOTSUPP;
			return -1;
		}
		m = m == AB_JAIL_COPY_RANGE ? AB_JAIL_COPY_SENDFILE : AB_JAIL_COPY_RW;
	}
}

/* The data extents of src below size, one at a time (SEEK_DATA/SEEK_HOLE;
 * a file system without them is one extent). */
static int
next_extent (int src, uint64_t off, uint64_t size, uint64_t *start, uint64_t *end)
{
	off_t d = lseek (src, (off_t)off, SEEK_DATA), h;

	if (d < 0 && errno == ENXIO) {
		*start = *end = size; /* only a hole is left */
		return 0;
	}
	if (d < 0) {
		if (errno != EINVAL && errno != EOPNOTSUPP)
			return -1;
		*start = off;
		*end = size;
		return 0;
	}
	h = lseek (src, d, SEEK_HOLE);
	*start = (uint64_t)d < size ? (uint64_t)d : size;
	*end = h < 0 || (uint64_t)h > size ? size : (uint64_t)h;
	return 0;
}

int
ab_jail_copy_data (int src_fd, int dst_fd, uint64_t size, enum ab_jail_copy_method method,
                   ab_error_t *err)
{
	cleanup_free char *buf = xmalloc (RW_BUFFER);
	uint64_t off = 0, start, end;
	struct stat st;
	char probe;
	ssize_t r;

	if (ftruncate (dst_fd, (off_t)size) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "extend the copy to %llu bytes",
		                 (unsigned long long)size);
	while (off < size) {
		if (next_extent (src_fd, off, size, &start, &end) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "find data at %llu",
			                 (unsigned long long)off);
		if (start < end && copy_with_fallback (method, src_fd, dst_fd, start, end, buf) < 0)
			return ab_error (err, errno, errno == ENODATA ? AB_E_CONFLICT : AB_E_SYSTEM,
			                 "copy bytes %llu-%llu", (unsigned long long)start,
			                 (unsigned long long)end);
		off = end > off ? end : size;
	}
	/* Past the end SEEK_DATA sees a hole, so a source that shrank would
	 * leave zeros: compare the size again, and probe one byte past it for
	 * files whose size does not tell (procfs says 0). */
	if (fstat (src_fd, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fstat the source");
	if ((uint64_t)st.st_size != size)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "the source changed size while it was copied (%llu, not %llu)",
		                 (unsigned long long)st.st_size, (unsigned long long)size);
	do
		r = pread (src_fd, &probe, 1, (off_t)size);
	while (r < 0 && errno == EINTR);
	if (r != 0)
		return ab_error (err, r < 0 ? errno : 0, r < 0 ? AB_E_SYSTEM : AB_E_CONFLICT,
		                 "the source grew while it was copied");
	return 0;
}

static int
copy_into (int sfd, const struct stat *st, int dirfd, const char *name, ab_error_t *err)
{
	/* O_EXCL: fails on any existing entry, symlinks included, and never
	 * follows one (open(2)); O_NOFOLLOW says the same twice. */
	cleanup_close int dfd = openat (
	        dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);

	if (dfd < 0)
		return ab_error (err, errno, errno == EEXIST ? AB_E_CONFLICT : AB_E_SYSTEM,
		                 "create %s in the jail", name);
	if (ab_jail_copy_data (sfd, dfd, (uint64_t)st->st_size, AB_JAIL_COPY_AUTO, err) < 0) {
		unlinkat (dirfd, name, 0);
		return ab_error_wrap (err, "while copying into the jail as %s", name);
	}
	if (fchmod (dfd, st->st_mode & 0755) < 0) {
		int e = errno;
		unlinkat (dirfd, name, 0);
		return ab_error (err, e, AB_E_SYSTEM, "chmod %s in the jail", name);
	}
	return AB_JAIL_COPIED;
}

int
ab_jail_place (const char *src, int jail_dirfd, const char *name, ab_error_t *err)
{
	struct stat st;
	cleanup_close int sfd = -1;

	if (check_name (name, err) < 0)
		return ab_error_code (err);
	sfd = open_source (src, &st, err);
	if (sfd < 0)
		return ab_error_code (err);
	if (link_fd (sfd, jail_dirfd, name) == 0)
		return AB_JAIL_LINKED;
	if (errno == EEXIST)
		return ab_error (err, EEXIST, AB_E_CONFLICT, "%s already exists in the jail", name);
	if (errno != EXDEV)
		return ab_error (err, errno, AB_E_SYSTEM, "link %s into the jail as %s", src, name);
	return copy_into (sfd, &st, jail_dirfd, name, err);
}
