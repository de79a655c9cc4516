/* Unit tests for backend/snapshot-meta.c and backend/sha256-file.c: what
 * the metadata parser accepts and refuses (every boundary, type, missing,
 * unknown and duplicate key, stale version), the atomic write, the refusal
 * to read through a symlink, verification after one byte of the rootfs or
 * kernel changed, and a 64 MiB file hashed with bounded memory.  Real files
 * in a temporary directory; sha256sum(1) is the reference hash. */
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
#include <stdbool.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/snapshot-meta.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

#define HA "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""
#define HB "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\""
/* A document with one value replaced; the others are valid. */
#define DOC(fv, be, vc, mem, rh, kh, ca)                                                           \
	"{\"format_version\": " fv ", \"backend\": " be ", \"vcpu_count\": " vc                    \
	", \"mem_size_mib\": " mem ", \"rootfs_sha256\": " rh ", \"kernel_sha256\": " kh           \
	", \"created_at\": " ca "}"
#define FV(x)  DOC (x, "\"microvm\"", "2", "512", HA, HB, "1767225600")
#define BE(x)  DOC ("1", x, "2", "512", HA, HB, "1767225600")
#define VC(x)  DOC ("1", "\"microvm\"", x, "512", HA, HB, "1767225600")
#define MEM(x) DOC ("1", "\"microvm\"", "2", x, HA, HB, "1767225600")
#define RH(x)  DOC ("1", "\"microvm\"", "2", "512", x, HB, "1767225600")
#define KH(x)  DOC ("1", "\"microvm\"", "2", "512", HA, x, "1767225600")
#define CA(x)  DOC ("1", "\"microvm\"", "2", "512", HA, HB, x)
#define GOOD   FV ("1")

static const struct {
	const char *json;
	ab_error_kind kind; /* AB_E_NONE = accepted */
	const char *msg;    /* substring of the error */
} cases[] = {
	{ GOOD, AB_E_NONE, NULL },
	{ VC ("1"), AB_E_NONE, NULL },
	{ VC ("32"), AB_E_NONE, NULL },
	{ VC ("0"), AB_E_INVALID, "'vcpu_count' is 0, must be in [1, 32]" },
	{ VC ("33"), AB_E_INVALID, "'vcpu_count' is 33" },
	{ VC ("-1"), AB_E_INVALID, "'vcpu_count' is -1" },
	{ VC ("4294967297"), AB_E_INVALID, "'vcpu_count'" }, /* 2^32 + 1 would wrap to 1 */
	{ VC ("9223372036854775807"), AB_E_INVALID, "'vcpu_count'" },
	{ VC ("99999999999999999999"), AB_E_INVALID, "not valid JSON" },
	{ VC ("2.0"), AB_E_INVALID, "'vcpu_count' must be an integer" },
	{ VC ("2e0"), AB_E_INVALID, "'vcpu_count' must be an integer" },
	{ VC ("\"2\""), AB_E_INVALID, "'vcpu_count' must be an integer" },
	{ VC ("true"), AB_E_INVALID, "'vcpu_count' must be an integer" },
	{ VC ("null"), AB_E_INVALID, "'vcpu_count' must be an integer" },
	{ VC ("[2]"), AB_E_INVALID, "'vcpu_count' must be an integer" },
	{ MEM ("128"), AB_E_NONE, NULL },
	{ MEM ("65536"), AB_E_NONE, NULL },
	{ MEM ("127"), AB_E_INVALID, "'mem_size_mib' is 127, must be in [128, 65536]" },
	{ MEM ("65537"), AB_E_INVALID, "'mem_size_mib' is 65537" },
	{ MEM ("0"), AB_E_INVALID, "'mem_size_mib' is 0" },
	{ MEM ("4294967424"), AB_E_INVALID, "'mem_size_mib'" }, /* 2^32 + 128 */
	{ MEM ("512.5"), AB_E_INVALID, "'mem_size_mib' must be an integer" },
	{ MEM ("\"512\""), AB_E_INVALID, "'mem_size_mib' must be an integer" },
	{ FV ("0"), AB_E_CONFLICT, "stale" },
	{ FV ("2"), AB_E_CONFLICT, "format version 2 is not 1" },
	{ FV ("-1"), AB_E_CONFLICT, "stale" },
	{ FV ("\"1\""), AB_E_INVALID, "'format_version' must be an integer" },
	{ FV ("1.0"), AB_E_INVALID, "'format_version' must be an integer" },
	/* A stale snapshot with an older layout still says "stale". */
	{ "{\"format_version\": 0, \"vcpus\": 2}", AB_E_CONFLICT, "stale" },
	{ BE ("\"firecracker-2\""), AB_E_NONE, NULL },
	{ BE ("\"\""), AB_E_INVALID, "'backend'" },
	{ BE ("\"MicroVM\""), AB_E_INVALID, "'backend'" },
	{ BE ("\"a/b\""), AB_E_INVALID, "'backend'" },
	{ BE ("\"micro\\u0000vm\""), AB_E_INVALID, "not valid JSON" },
	{ BE ("\"abcdefghijklmnopqrstuvwxyz012345\""), AB_E_INVALID, "'backend' is too long" },
	{ BE ("7"), AB_E_INVALID, "'backend' must be a string" },
	{ RH (HB), AB_E_NONE, NULL },
	{ RH ("\"aaaa\""), AB_E_INVALID, "'rootfs_sha256' must be 64" },
	{ RH ("\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""), AB_E_INVALID,
	  "'rootfs_sha256' must be 64" }, /* 63 */
	{ RH ("\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""),
	  AB_E_INVALID, "'rootfs_sha256' is too long" }, /* 65 */
	{ RH ("\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\""), AB_E_INVALID,
	  "lowercase hex" },
	{ RH ("\"gaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""), AB_E_INVALID,
	  "lowercase hex" },
	{ RH ("null"), AB_E_INVALID, "'rootfs_sha256' must be a string" },
	{ KH ("\"\""), AB_E_INVALID, "'kernel_sha256' must be 64" },
	{ KH ("1"), AB_E_INVALID, "'kernel_sha256' must be a string" },
	{ CA ("0"), AB_E_NONE, NULL },
	{ CA ("-1"), AB_E_INVALID, "'created_at' is -1" },
	{ CA ("\"2026-01-01T00:00:00Z\""), AB_E_INVALID, "'created_at' must be an integer" },
	{ CA ("1.5"), AB_E_INVALID, "'created_at' must be an integer" },
	/* shape */
	{ "", AB_E_INVALID, "not valid JSON" },
	{ "[]", AB_E_INVALID, "must be a JSON object" },
	{ "\"x\"", AB_E_INVALID, "not valid JSON" },
	{ "{}", AB_E_INVALID, "missing 'format_version'" },
	{ GOOD " x", AB_E_INVALID, "not valid JSON" },
	{ "{\"format_version\": 1}", AB_E_INVALID, "missing 'backend'" },
	{ "{\"format_version\": 1, \"backend\": \"microvm\", \"vcpu_count\": 2, "
	  "\"mem_size_mib\": 512, \"rootfs_sha256\": " HA ", \"kernel_sha256\": " HB "}",
	  AB_E_INVALID, "missing 'created_at'" },
	{ "{\"format_version\": 1, \"backend\": \"microvm\", \"mem_size_mib\": 512, "
	  "\"rootfs_sha256\": " HA ", \"kernel_sha256\": " HB ", \"created_at\": 0}",
	  AB_E_INVALID, "missing 'vcpu_count'" },
	{ "{\"format_version\": 1, \"vcpu_count\": 2, \"vcpu_count\": 3}", AB_E_INVALID,
	  "duplicate" },
	{ "{\"format_version\": 1, \"format_version\": 1}", AB_E_INVALID, "duplicate" },
	{ "{\"format_version\": 1, \"backend\": \"microvm\", \"vcpu_count\": 2, "
	  "\"mem_size_mib\": 512, \"rootfs_sha256\": " HA ", \"kernel_sha256\": " HB
	  ", \"created_at\": 0, \"memory_file\": \"/etc/shadow\"}",
	  AB_E_INVALID, "unknown key 'memory_file'" },
	{ "{\"format_version\": 1, \"x\\u001by\": 1}", AB_E_INVALID, "unknown key 'x?y'" },
};

static void
test_parse_table (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (cases); i++) {
		struct ab_snapshot_meta_s m;
		ab_error_t err = AB_ERROR_INIT;
		int r = ab_snapshot_meta_parse (cases[i].json, strlen (cases[i].json), &m, &err);

		if (cases[i].kind == AB_E_NONE) {
			if (r != 0)
				fail_msg ("row %zu refused: %s\n  %s", i, err.msg, cases[i].json);
			/* What parses is what we would write, and it writes back equal. */
			ab_error_t e2 = AB_ERROR_INIT;
			json_t *j = ab_snapshot_meta_to_json (&m, &e2);
			if (!j)
				fail_msg ("row %zu: to_json: %s", i, e2.msg);
			json_t *orig = json_loads (cases[i].json, 0, NULL);
			assert_true (json_equal (j, orig));
			json_decref (j);
			json_decref (orig);
			continue;
		}
		if (r == 0)
			fail_msg ("row %zu accepted: %s", i, cases[i].json);
		if (err.kind != cases[i].kind || !strstr (err.msg, cases[i].msg))
			fail_msg ("row %zu: %s '%s', want %s '%s'", i,
			          ab_error_kind_name (err.kind), err.msg,
			          ab_error_kind_name (cases[i].kind), cases[i].msg);
	}
}

/* ------------------------------------------------------------------ files */

static char tmpdir[64];
static int dirfd_ = -1;

static int
setup (void **state)
{
	(void)state;
	strcpy (tmpdir, "/tmp/ab-snapmeta-XXXXXX");
	if (!mkdtemp (tmpdir))
		return -1;
	dirfd_ = open (tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dirfd_ < 0 ? -1 : 0;
}

static int
teardown (void **state)
{
	(void)state;
	char cmd[128];
	close (dirfd_);
	snprintf (cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system (cmd) == 0 ? 0 : -1;
}

/* A file of size bytes with a recognisable pattern (or a hole when sparse). */
static int
make_file (const char *name, size_t size, bool sparse)
{
	int fd = openat (dirfd_, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true (fd >= 0);
	if (sparse) {
		assert_int_equal (ftruncate (fd, (off_t)size), 0);
		assert_int_equal (pwrite (fd, "edge", 4, (off_t)size - 4), 4);
	} else {
		char buf[4096];
		for (size_t off = 0; off < size; off += sizeof buf) {
			size_t n = size - off < sizeof buf ? size - off : sizeof buf;
			for (size_t k = 0; k < n; k++)
				buf[k] = (char)((off + k) * 131 + 7);
			assert_int_equal (pwrite (fd, buf, n, (off_t)off), (ssize_t)n);
		}
	}
	return fd;
}

/* sha256sum(1), the reference implementation. */
static void
reference_sha256 (const char *name, char out[65])
{
	char cmd[256];
	snprintf (cmd, sizeof cmd, "sha256sum '%s/%s'", tmpdir, name);
	FILE *p = popen (cmd, "r");
	assert_non_null (p);
	assert_non_null (fgets (out, 65, p));
	assert_int_equal (strlen (out), 64);
	assert_int_equal (pclose (p), 0);
}

static size_t
count_entries (void)
{
	size_t n = 0;
	DIR *d = opendir (tmpdir);
	struct dirent *e;
	assert_non_null (d);
	while ((e = readdir (d)))
		n += e->d_name[0] != '.' || (strcmp (e->d_name, ".") && strcmp (e->d_name, ".."));
	closedir (d);
	return n;
}

static void
test_sha256_matches_reference (void **state)
{
	(void)state;
	static const size_t sizes[] = { 0,
		                        1,
		                        55,
		                        56,
		                        64,
		                        4095,
		                        AB_SHA256_CHUNK - 1,
		                        AB_SHA256_CHUNK,
		                        AB_SHA256_CHUNK + 1,
		                        3 * AB_SHA256_CHUNK + 17 };
	for (size_t i = 0; i < N (sizes); i++) {
		char ours[65], ref[65];
		struct ab_sha256_stats_s st;
		ab_error_t err = AB_ERROR_INIT;
		int fd = make_file ("f", sizes[i], false);
		assert_int_equal (lseek (fd, 5, SEEK_SET), 5);
		assert_int_equal (ab_sha256_fd (fd, ours, &st, &err), 0);
		assert_int_equal (lseek (fd, 0, SEEK_CUR), 5); /* offset untouched */
		reference_sha256 ("f", ref);
		assert_string_equal (ours, ref);
		assert_int_equal (st.bytes, sizes[i]);
		assert_true (st.max_read <= AB_SHA256_CHUNK);
		close (fd);
	}
	char hex[65];
	ab_error_t err = AB_ERROR_INIT;
	assert_int_equal (ab_sha256_file (dirfd_, "f", hex, &err), 0);
	assert_true (ab_sha256_file (dirfd_, "nope", hex, &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);
	unlinkat (dirfd_, "f", 0);
}

static void
test_sha256_refuses_non_regular (void **state)
{
	(void)state;
	char hex[65];
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (mkfifoat (dirfd_, "fifo", 0600), 0);
	/* Opening a fifo must not hang, and hashing it is refused. */
	assert_true (ab_sha256_file (dirfd_, "fifo", hex, &err) < 0);
	assert_non_null (strstr (err.msg, "not a regular file"));
	ab_error_clear (&err);
	assert_true (ab_sha256_file (dirfd_, ".", hex, &err) < 0);
	unlinkat (dirfd_, "fifo", 0);
	/* A regular file whose content outruns its size (procfs reports 0):
	 * "grew while hashed", never a hash of a prefix. */
	ab_error_clear (&err);
	assert_true (ab_sha256_file (AT_FDCWD, "/proc/self/status", hex, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_non_null (strstr (err.msg, "grew"));
}

static long
maxrss_kib (void)
{
	struct rusage ru;
	getrusage (RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* 64 MiB sparse file: the hash is right, the reader went in chunks, and
 * the peak RSS of the hashing process grew by far less than the file.  The
 * same measurement then sees a 64 MiB buffer, so it can tell the two apart. */
static void
test_sha256_bounded_memory (void **state)
{
	(void)state;
	const size_t size = 64u << 20;
	char ref[65];
	int fd = make_file ("big", size, true);
	int small = make_file ("small", 100, false);
	pid_t pid;
	int status;

	reference_sha256 ("big", ref);
	pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		char hex[65];
		struct ab_sha256_stats_s st;
		ab_error_t err = AB_ERROR_INIT;
		/* OpenSSL loads its default provider on first use (~3 MiB):
		 * pay that before measuring. */
		if (ab_sha256_fd (small, hex, NULL, &err) < 0)
			_exit (5);
		long before = maxrss_kib ();
		if (ab_sha256_fd (fd, hex, &st, &err) < 0 || strcmp (hex, ref) != 0)
			_exit (1);
		long grew = maxrss_kib () - before;
		if (st.bytes != size || st.max_read != AB_SHA256_CHUNK
		    || st.reads != size / AB_SHA256_CHUNK)
			_exit (2);
		fprintf (stderr, "  hashing 64 MiB: peak RSS +%ld KiB in %llu reads\n", grew,
		         (unsigned long long)st.reads);
		if (grew > 1024)
			_exit (3);
		char *buf = malloc (size); /* the control: a whole-file read */
		memset (buf, 1, size);
		__asm__ volatile("" : : "r"(buf) : "memory"); /* keep the stores */
		long grew2 = maxrss_kib () - before;
		fprintf (stderr, "  control, 64 MiB buffer: peak RSS +%ld KiB\n", grew2);
		_exit (buf[size - 1] == 1 && grew2 > 48 * 1024 ? 0 : 4);
	}
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status));
	assert_int_equal (WEXITSTATUS (status), 0);
	close (fd);
	close (small);
	unlinkat (dirfd_, "big", 0);
	unlinkat (dirfd_, "small", 0);
}

static void
test_write_read_roundtrip (void **state)
{
	(void)state;
	struct ab_snapshot_meta_s m, back;
	ab_error_t err = AB_ERROR_INIT;
	int rootfs = make_file ("rootfs.img", 300000, false);
	int kernel = make_file ("vmlinux", 70000, false);
	struct stat st1, st2;
	char ref[65];

	assert_int_equal (ab_snapshot_meta_init (&m, "microvm", 2, 512, rootfs, kernel, &err), 0);
	reference_sha256 ("rootfs.img", ref);
	assert_string_equal (m.rootfs_sha256, ref);
	reference_sha256 ("vmlinux", ref);
	assert_string_equal (m.kernel_sha256, ref);
	assert_true (m.created_at > 1700000000);

	size_t before = count_entries ();
	assert_int_equal (ab_snapshot_meta_write (dirfd_, AB_SNAPSHOT_META_NAME, &m, &err), 0);
	assert_int_equal (count_entries (), before + 1); /* no tmp left behind */
	assert_int_equal (fstatat (dirfd_, AB_SNAPSHOT_META_NAME, &st1, 0), 0);
	assert_int_equal (st1.st_mode & 07777, 0600);
	assert_int_equal (ab_snapshot_meta_read (dirfd_, AB_SNAPSHOT_META_NAME, &back, &err), 0);
	assert_memory_equal (&m, &back, sizeof m);

	/* Rewriting replaces the file by rename: a new inode, never a rewrite in place. */
	m.vcpu_count = 4;
	assert_int_equal (ab_snapshot_meta_write (dirfd_, AB_SNAPSHOT_META_NAME, &m, &err), 0);
	assert_int_equal (fstatat (dirfd_, AB_SNAPSHOT_META_NAME, &st2, 0), 0);
	assert_int_not_equal (st1.st_ino, st2.st_ino);
	assert_int_equal (ab_snapshot_meta_read (dirfd_, AB_SNAPSHOT_META_NAME, &back, &err), 0);
	assert_int_equal (back.vcpu_count, 4);
	assert_int_equal (count_entries (), before + 1);

	/* What we would refuse to read is never written, and nothing is left. */
	m.vcpu_count = 33;
	assert_true (ab_snapshot_meta_write (dirfd_, "other.json", &m, &err) < 0);
	assert_non_null (strstr (err.msg, "vcpu_count"));
	assert_int_equal (count_entries (), before + 1);
	m.vcpu_count = 2;
	assert_true (ab_snapshot_meta_write (dirfd_, "../escape.json", &m, &err) < 0);
	assert_true (ab_snapshot_meta_write (dirfd_, "..", &m, &err) < 0);
	/* init checks the ranges before hashing anything. */
	assert_true (ab_snapshot_meta_init (&m, "microvm", 0, 512, rootfs, kernel, &err) < 0);
	assert_true (ab_snapshot_meta_init (&m, "microvm", 2, 65537, rootfs, kernel, &err) < 0);
	assert_true (ab_snapshot_meta_init (&m, "Micro VM", 2, 512, rootfs, kernel, &err) < 0);
	close (rootfs);
	close (kernel);
}

static void
test_read_refusals (void **state)
{
	(void)state;
	struct ab_snapshot_meta_s m;
	ab_error_t err = AB_ERROR_INIT;
	int fd;

	/* A planted symlink to a valid metadata file is not followed. */
	assert_int_equal (symlinkat (AB_SNAPSHOT_META_NAME, dirfd_, "link.json"), 0);
	assert_true (ab_snapshot_meta_read (dirfd_, "link.json", &m, &err) < 0);
	assert_int_equal (err.errnum, ELOOP);
	ab_error_clear (&err);
	assert_true (ab_snapshot_meta_read (dirfd_, "missing.json", &m, &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);
	ab_error_clear (&err);
	assert_int_equal (mkfifoat (dirfd_, "fifo.json", 0600), 0);
	assert_true (ab_snapshot_meta_read (dirfd_, "fifo.json", &m, &err) < 0);
	assert_non_null (strstr (err.msg, "not a regular file"));
	ab_error_clear (&err);
	/* Larger than the cap: refused before parsing, whatever it holds. */
	fd = make_file ("huge.json", AB_SNAPSHOT_META_MAX + 1, true);
	close (fd);
	assert_true (ab_snapshot_meta_read (dirfd_, "huge.json", &m, &err) < 0);
	assert_int_equal (err.kind, AB_E_LIMIT);
	ab_error_clear (&err);
	/* A stale file on disk reads as stale. */
	fd = openat (dirfd_, "stale.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true (fd >= 0);
	const char *stale = FV ("0");
	assert_int_equal (write (fd, stale, strlen (stale)), (ssize_t)strlen (stale));
	close (fd);
	assert_true (ab_snapshot_meta_read (dirfd_, "stale.json", &m, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_non_null (strstr (err.msg, "stale"));
}

static void
test_verify (void **state)
{
	(void)state;
	struct ab_snapshot_meta_s m;
	ab_error_t err = AB_ERROR_INIT;
	int rootfs = make_file ("rootfs2.img", 1 << 20, false);
	int kernel = make_file ("vmlinux2", 100000, false);
	char c, flipped;

	assert_int_equal (ab_snapshot_meta_init (&m, "microvm", 1, 128, rootfs, kernel, &err), 0);
	assert_int_equal (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err), 0);

	/* One byte of the rootfs changed, in the middle: refused, naming it. */
	assert_int_equal (pread (rootfs, &c, 1, 777777), 1);
	flipped = (char)(c ^ 1);
	assert_int_equal (pwrite (rootfs, &flipped, 1, 777777), 1);
	assert_true (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_non_null (strstr (err.msg, "the rootfs changed"));
	assert_non_null (strstr (err.msg, m.rootfs_sha256));
	assert_int_equal (pwrite (rootfs, &c, 1, 777777), 1);
	assert_int_equal (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err), 0);

	/* One byte appended, then the last byte dropped. */
	assert_int_equal (pwrite (rootfs, "", 1, 1 << 20), 1);
	assert_true (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err) < 0);
	assert_int_equal (ftruncate (rootfs, (1 << 20) - 1), 0);
	assert_true (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err) < 0);
	close (rootfs);
	rootfs = make_file ("rootfs2.img", 1 << 20, false);
	assert_int_equal (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err), 0);

	/* The first byte of the kernel. */
	assert_int_equal (pread (kernel, &c, 1, 0), 1);
	flipped = (char)(c ^ 0x80);
	assert_int_equal (pwrite (kernel, &flipped, 1, 0), 1);
	ab_error_clear (&err);
	assert_true (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err) < 0);
	assert_non_null (strstr (err.msg, "the kernel changed"));
	assert_int_equal (pwrite (kernel, &c, 1, 0), 1);

	/* Another backend, or metadata edited in memory out of range. */
	ab_error_clear (&err);
	assert_true (ab_snapshot_meta_verify (&m, "gvisor", rootfs, kernel, &err) < 0);
	assert_non_null (strstr (err.msg, "taken by backend 'microvm', not 'gvisor'"));
	m.mem_size_mib = 127;
	assert_true (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err) < 0);
	m.mem_size_mib = 128;
	m.format_version = 0;
	assert_true (ab_snapshot_meta_verify (&m, "microvm", rootfs, kernel, &err) < 0);
	close (rootfs);
	close (kernel);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_parse_table),
		cmocka_unit_test (test_sha256_bounded_memory),
		cmocka_unit_test (test_sha256_matches_reference),
		cmocka_unit_test (test_sha256_refuses_non_regular),
		cmocka_unit_test (test_write_read_roundtrip),
		cmocka_unit_test (test_read_refusals),
		cmocka_unit_test (test_verify),
	};
	return cmocka_run_group_tests (tests, setup, teardown);
}
