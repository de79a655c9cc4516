/* Unit tests for backend/jail.c with real files: a hard link on the same
 * file system, a copy across file systems (a real EXDEV: the test picks two
 * temporary directories whose st_dev differ, e.g. /tmp and /dev/shm), and
 * the refusals: a planted symlink or an existing file at the destination
 * (never followed, never overwritten), a symlink, fifo, directory or device
 * as the source, names that are not one component. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/jail.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* base[0]: the source side; base[1]: a directory on another file system
 * (empty when the machine has none: the cross tests are skipped). */
static char base[2][PATH_MAX];
static char path_bufs[4][PATH_MAX * 2];
static unsigned path_next;

/* base[side]/rel, in one of four rotating buffers (two may be live in one call). */
static const char *
at (int side, const char *rel)
{
	char *p = path_bufs[path_next++ % 4];
	snprintf (p, sizeof path_bufs[0], "%s/%s", base[side], rel);
	return p;
}

static int
make_tmp (const char *root, char *out)
{
	struct stat st;
	if (!root || !*root || stat (root, &st) < 0 || !S_ISDIR (st.st_mode))
		return -1;
	snprintf (out, PATH_MAX, "%s/ab-jail-XXXXXX", root);
	return mkdtemp (out) ? 0 : -1;
}

static int
setup (void **state)
{
	(void)state;
	const char *roots[] = { getenv ("TMPDIR"), "/tmp", "/var/tmp", "/dev/shm", "/run" };
	struct stat a, b;
	char cand[PATH_MAX];

	if (make_tmp ("/tmp", base[0]) < 0 || stat (base[0], &a) < 0)
		return -1;
	for (size_t i = 0; i < N (roots) && !base[1][0]; i++) {
		if (make_tmp (roots[i], cand) < 0)
			continue;
		if (stat (cand, &b) == 0 && b.st_dev != a.st_dev)
			strcpy (base[1], cand);
		else
			rmdir (cand);
	}
	if (base[1][0])
		fprintf (stderr, "  same fs: %s; other fs: %s\n", base[0], base[1]);
	else
		fprintf (stderr, "  no second file system among the temp dirs: cross tests skip\n");
	return 0;
}

static int
teardown (void **state)
{
	(void)state;
	char cmd[PATH_MAX * 2 + 32];
	int rc = 0;
	for (int i = 0; i < 2; i++) {
		if (!base[i][0])
			continue;
		snprintf (cmd, sizeof cmd, "rm -rf '%s'", base[i]);
		rc |= system (cmd);
	}
	return rc == 0 ? 0 : -1;
}

static void
need_cross (void)
{
	if (!base[1][0])
		skip ();
}

static void
write_file (const char *path, const char *content, mode_t mode)
{
	int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true (fd >= 0);
	assert_int_equal (write (fd, content, strlen (content)), (ssize_t)strlen (content));
	assert_int_equal (fchmod (fd, mode), 0);
	close (fd);
}

static void
read_file (const char *path, char *buf, size_t cap)
{
	int fd = open (path, O_RDONLY | O_CLOEXEC);
	assert_true (fd >= 0);
	ssize_t n = read (fd, buf, cap - 1);
	assert_true (n >= 0);
	buf[n] = '\0';
	close (fd);
}

/* Byte-for-byte equal, read in chunks. */
static bool
same_content (int a, int b)
{
	static char x[65536], y[65536];
	for (off_t off = 0;; off += (off_t)sizeof x) {
		ssize_t n = pread (a, x, sizeof x, off), m = pread (b, y, sizeof y, off);
		if (n != m || n < 0)
			return false;
		if (n == 0)
			return true;
		if (memcmp (x, y, (size_t)n) != 0)
			return false;
	}
}

static int
open_dir (const char *path)
{
	int fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true (fd >= 0);
	return fd;
}

/* A fresh, empty jail directory under base[side]. */
static int
new_jail (int side, const char *name)
{
	const char *p = at (side, name);
	assert_int_equal (mkdir (p, 0700), 0);
	return open_dir (p);
}

static size_t
entries (int dirfd)
{
	size_t n = 0;
	DIR *d = fdopendir (dup (dirfd));
	struct dirent *e;
	assert_non_null (d);
	rewinddir (d);
	while ((e = readdir (d)))
		n += strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0;
	closedir (d);
	return n;
}

static void
test_same_fs_hard_link (void **state)
{
	(void)state;
	int jail = new_jail (0, "jail-link");
	struct stat s, d;
	ab_error_t err = AB_ERROR_INIT;

	write_file (at (0, "vmlinux"), "kernel bytes", 0644);
	assert_int_equal (ab_jail_place (at (0, "vmlinux"), jail, "vmlinux", &err), AB_JAIL_LINKED);
	assert_int_equal (stat (at (0, "vmlinux"), &s), 0);
	assert_int_equal (fstatat (jail, "vmlinux", &d, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal (s.st_ino, d.st_ino);
	assert_int_equal (s.st_dev, d.st_dev);
	assert_int_equal (d.st_nlink, 2);
	close (jail);
}

/* Without CAP_DAC_READ_SEARCH, linkat(AT_EMPTY_PATH) fails with ENOENT
 * before Linux 6.10 (later kernels allow it for a file the caller opened
 * itself); either way ab_jail_place must still make a hard link, via the
 * /proc/self/fd route on older kernels.  In a child that drops the
 * capability from its effective set. */
static void
test_link_without_cap (void **state)
{
	(void)state;
	int jail = new_jail (0, "jail-nocap");
	const char *src = at (0, "nocap-src");
	pid_t pid;
	int status;

	write_file (src, "x", 0644);
	pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		ab_error_t err = AB_ERROR_INIT;
		struct stat a, b;
		if (syscall (SYS_capget, &h, d) < 0)
			_exit (10);
		d[0].effective &= ~(1u << CAP_DAC_READ_SEARCH);
		if (syscall (SYS_capset, &h, d) < 0)
			_exit (11);
		int fd = open (src, O_RDONLY | O_CLOEXEC);
		bool direct = linkat (fd, "", jail, "probe", AT_EMPTY_PATH) == 0;
		if (!direct && errno != ENOENT)
			_exit (12);
		if (ab_jail_place (src, jail, "linked", &err) != AB_JAIL_LINKED)
			_exit (13);
		if (stat (src, &a) < 0 || fstatat (jail, "linked", &b, 0) < 0
		    || a.st_ino != b.st_ino)
			_exit (14);
		_exit (direct ? 20 : 0);
	}
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status));
	if (WEXITSTATUS (status) == 20)
		fprintf (stderr, "  this kernel links an fd of our own without the capability "
		                 "(>= 6.10): the /proc/self/fd route was not needed\n");
	else
		assert_int_equal (WEXITSTATUS (status), 0);
	close (jail);
}

static void
test_cross_fs_copy (void **state)
{
	(void)state;
	need_cross ();
	for (int dir = 0; dir < 2; dir++) { /* both directions: ext4 -> tmpfs and back */
		int src_side = dir, jail_side = 1 - dir;
		char jname[32];
		snprintf (jname, sizeof jname, "jail-copy-%d", dir);
		int jail = new_jail (jail_side, jname);
		struct stat s, d;
		ab_error_t err = AB_ERROR_INIT;

		/* setuid and group/other write on the source: not carried over. */
		write_file (at (src_side, "rootfs"), "root file system", 04775);
		assert_int_equal (ab_jail_place (at (src_side, "rootfs"), jail, "rootfs", &err),
		                  AB_JAIL_COPIED);
		assert_int_equal (stat (at (src_side, "rootfs"), &s), 0);
		assert_int_equal (fstatat (jail, "rootfs", &d, AT_SYMLINK_NOFOLLOW), 0);
		assert_int_not_equal (s.st_dev, d.st_dev);
		assert_int_equal (s.st_nlink, 1);
		assert_int_equal (s.st_mode & 07777, 04775); /* source untouched */
		assert_true (S_ISREG (d.st_mode));
		assert_int_equal (d.st_mode & 07777, 0755);
		assert_int_equal (d.st_uid, geteuid ());
		assert_int_equal (d.st_gid, getegid ());
		int a = open (at (src_side, "rootfs"), O_RDONLY | O_CLOEXEC);
		int b = openat (jail, "rootfs", O_RDONLY | O_CLOEXEC);
		assert_true (same_content (a, b));
		close (a);
		close (b);
		close (jail);
	}
}

/* A 16 MiB image that is mostly hole: the copy has the same bytes and
 * stays sparse. */
static void
test_cross_fs_sparse (void **state)
{
	(void)state;
	need_cross ();
	int jail = new_jail (1, "jail-sparse");
	int fd = open (at (0, "sparse.img"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ab_error_t err = AB_ERROR_INIT;
	struct stat d;

	assert_true (fd >= 0);
	assert_int_equal (ftruncate (fd, 16 << 20), 0);
	assert_int_equal (pwrite (fd, "head", 4, 0), 4);
	assert_int_equal (pwrite (fd, "middle", 6, 8 << 20), 6);
	assert_int_equal (ab_jail_place (at (0, "sparse.img"), jail, "rootfs.img", &err),
	                  AB_JAIL_COPIED);
	int b = openat (jail, "rootfs.img", O_RDONLY | O_CLOEXEC);
	assert_true (b >= 0);
	assert_true (same_content (fd, b));
	assert_int_equal (fstat (b, &d), 0);
	assert_int_equal (d.st_size, 16 << 20);
	assert_true ((long long)d.st_blocks * 512 < (1 << 20)); /* holes stayed holes */
	close (b);
	close (fd);
	close (jail);
}

/* A symlink planted at the destination (to a file, or dangling) is never
 * followed nor replaced, on the link path and on the copy path. */
static void
test_planted_symlink (void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++) {
		if (!base[side][0])
			continue;
		char jname[32], buf[64];
		snprintf (jname, sizeof jname, "jail-sym-%d", side);
		int jail = new_jail (side, jname);
		ab_error_t err = AB_ERROR_INIT;
		struct stat st;

		write_file (at (0, "precious"), "precious", 0600);
		write_file (at (0, "payload"), "payload", 0644);
		assert_int_equal (symlinkat (at (0, "precious"), jail, "rootfs"), 0);
		assert_true (ab_jail_place (at (0, "payload"), jail, "rootfs", &err) < 0);
		assert_int_equal (err.kind, AB_E_CONFLICT);
		assert_int_equal (err.errnum, EEXIST);
		read_file (at (0, "precious"), buf, sizeof buf);
		assert_string_equal (buf, "precious");
		assert_int_equal (fstatat (jail, "rootfs", &st, AT_SYMLINK_NOFOLLOW), 0);
		assert_true (S_ISLNK (st.st_mode));

		/* Dangling: O_CREAT without O_EXCL would create the target. */
		unlink (at (0, "nowhere"));
		assert_int_equal (symlinkat (at (0, "nowhere"), jail, "kernel"), 0);
		ab_error_clear (&err);
		assert_true (ab_jail_place (at (0, "payload"), jail, "kernel", &err) < 0);
		assert_int_equal (err.kind, AB_E_CONFLICT);
		assert_int_equal (access (at (0, "nowhere"), F_OK), -1);
		assert_int_equal (entries (jail), 2);
		close (jail);
		unlink (at (0, "precious"));
	}
}

static void
test_existing_file (void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++) {
		if (!base[side][0])
			continue;
		char jname[32], buf[64];
		snprintf (jname, sizeof jname, "jail-exist-%d", side);
		int jail = new_jail (side, jname);
		ab_error_t err = AB_ERROR_INIT;

		write_file (at (0, "payload"), "payload", 0644);
		int fd = openat (jail, "rootfs", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true (fd >= 0);
		assert_int_equal (write (fd, "old", 3), 3);
		close (fd);
		assert_true (ab_jail_place (at (0, "payload"), jail, "rootfs", &err) < 0);
		assert_int_equal (err.kind, AB_E_CONFLICT);
		snprintf (buf, sizeof buf, "%s/rootfs", jname);
		read_file (at (side, buf), buf, sizeof buf);
		assert_string_equal (buf, "old");

		/* Placing the same source twice is refused the second time too. */
		assert_true (ab_jail_place (at (0, "payload"), jail, "k", &err) >= 0);
		assert_true (ab_jail_place (at (0, "payload"), jail, "k", &err) < 0);
		assert_int_equal (err.kind, AB_E_CONFLICT);
		close (jail);
	}
}

static void
test_source_refusals (void **state)
{
	(void)state;
	int jail = new_jail (0, "jail-src");
	ab_error_t err = AB_ERROR_INIT;
	struct timespec t0, t1;

	write_file (at (0, "real"), "real", 0644);
	assert_int_equal (symlink (at (0, "real"), at (0, "link")), 0);
	assert_true (ab_jail_place (at (0, "link"), jail, "x", &err) < 0);
	assert_int_equal (err.kind, AB_E_DENIED);
	assert_int_equal (err.errnum, ELOOP);

	assert_int_equal (mkfifo (at (0, "fifo"), 0600), 0);
	ab_error_clear (&err);
	clock_gettime (CLOCK_MONOTONIC, &t0);
	assert_true (ab_jail_place (at (0, "fifo"), jail, "x", &err) < 0);
	clock_gettime (CLOCK_MONOTONIC, &t1);
	assert_int_equal (err.kind, AB_E_INVALID);
	assert_non_null (strstr (err.msg, "not a regular file"));
	assert_true (t1.tv_sec - t0.tv_sec < 2); /* no writer needed: open did not block */

	ab_error_clear (&err);
	assert_true (ab_jail_place (base[0], jail, "x", &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	ab_error_clear (&err);
	assert_true (ab_jail_place ("/dev/null", jail, "x", &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	ab_error_clear (&err);
	assert_true (ab_jail_place (at (0, "missing"), jail, "x", &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);
	assert_int_equal (entries (jail), 0);
	close (jail);
}

static void
test_names (void **state)
{
	(void)state;
	static const char *const bad[] = { "", "a/b", "/x", "x/", ".", "..", "../x", "./x" };
	int jail = new_jail (0, "jail-names");
	char longname[NAME_MAX + 2];
	ab_error_t err = AB_ERROR_INIT;

	write_file (at (0, "src-names"), "s", 0644);
	for (size_t i = 0; i < N (bad); i++) {
		ab_error_clear (&err);
		if (ab_jail_place (at (0, "src-names"), jail, bad[i], &err) >= 0)
			fail_msg ("name '%s' accepted", bad[i]);
		assert_int_equal (err.kind, AB_E_INVALID);
	}
	memset (longname, 'a', NAME_MAX + 1);
	longname[NAME_MAX + 1] = '\0';
	assert_true (ab_jail_place (at (0, "src-names"), jail, longname, &err) < 0);
	assert_int_equal (entries (jail), 0);
	longname[NAME_MAX] = '\0';
	assert_true (ab_jail_place (at (0, "src-names"), jail, longname, &err) >= 0);
	assert_true (ab_jail_place (at (0, "src-names"), jail, "..a", &err) >= 0);
	assert_int_equal (entries (jail), 2);
	close (jail);
}

/* Every copy method for real, on a file that is not a multiple of any
 * buffer and has a hole; then a size that lies about the source. */
static void
test_copy_methods (void **state)
{
	(void)state;
	static const enum ab_jail_copy_method methods[] = { AB_JAIL_COPY_AUTO, AB_JAIL_COPY_RANGE,
		                                            AB_JAIL_COPY_SENDFILE,
		                                            AB_JAIL_COPY_RW };
	const off_t size = (3 << 20) + 123;
	int src = open (at (0, "methods.src"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	char chunk[4096];

	assert_true (src >= 0);
	for (off_t off = 0; off < size; off += (off_t)sizeof chunk) {
		if (off >= (1 << 20) && off < (2 << 20))
			continue; /* a 1 MiB hole */
		for (size_t k = 0; k < sizeof chunk; k++)
			chunk[k] = (char)((off + (off_t)k) * 31 + 1);
		size_t n = size - off < (off_t)sizeof chunk ? (size_t)(size - off) : sizeof chunk;
		assert_int_equal (pwrite (src, chunk, n, off), (ssize_t)n);
	}
	for (int side = 0; side < 2; side++) {
		if (!base[side][0])
			continue;
		for (size_t i = 0; i < N (methods); i++) {
			char name[32];
			ab_error_t err = AB_ERROR_INIT;
			snprintf (name, sizeof name, "methods.dst-%d-%zu", side, i);
			int dst =
			        open (at (side, name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			assert_true (dst >= 0);
			int r = ab_jail_copy_data (src, dst, (uint64_t)size, methods[i], &err);
			/* copy_file_range may refuse another file system type (EXDEV):
			 * then forcing it fails cleanly; every other method must work. */
			if (r < 0 && !(side == 1 && methods[i] == AB_JAIL_COPY_RANGE))
				fail_msg ("side %d method %zu: %s", side, i, err.msg);
			if (r == 0 && !same_content (src, dst))
				fail_msg ("side %d method %zu: content differs", side, i);
			close (dst);
		}
	}
	/* The caller's size is below the file: "grew"; above it: "shrank". */
	int dst = open (at (0, "methods.lie"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ab_error_t err = AB_ERROR_INIT;
	assert_true (ab_jail_copy_data (src, dst, (uint64_t)size - 1, AB_JAIL_COPY_AUTO, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_non_null (strstr (err.msg, "changed size"));
	assert_int_equal (ftruncate (dst, 0), 0);
	ab_error_clear (&err);
	assert_true (ab_jail_copy_data (src, dst, (uint64_t)size + 10, AB_JAIL_COPY_RW, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_non_null (strstr (err.msg, "size"));
	close (dst);
	close (src);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_same_fs_hard_link), cmocka_unit_test (test_link_without_cap),
		cmocka_unit_test (test_cross_fs_copy),     cmocka_unit_test (test_cross_fs_sparse),
		cmocka_unit_test (test_planted_symlink),   cmocka_unit_test (test_existing_file),
		cmocka_unit_test (test_source_refusals),   cmocka_unit_test (test_names),
		cmocka_unit_test (test_copy_methods),
	};
	return cmocka_run_group_tests (tests, setup, teardown);
}
