/* Snapshot metadata: strict JSON in and out (one table of fields drives
 * the checks, the parser and the writer), an atomic write, and the
 * pre-restore verification that re-hashes the rootfs and the kernel. */
#include "backend/snapshot-meta.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"

enum field_kind { F_U32, F_I64, F_NAME, F_SHA256 };

static const struct field_s {
	const char *key;
	enum field_kind kind;
	long long min, max; /* F_U32, F_I64: inclusive range */
	size_t offset;
} fields[] = {
	{ "backend", F_NAME, 0, 0, offsetof (struct ab_snapshot_meta_s, backend) },
	{ "vcpu_count", F_U32, AB_SNAPSHOT_VCPU_MIN, AB_SNAPSHOT_VCPU_MAX,
	  offsetof (struct ab_snapshot_meta_s, vcpu_count) },
	{ "mem_size_mib", F_U32, AB_SNAPSHOT_MEM_MIB_MIN, AB_SNAPSHOT_MEM_MIB_MAX,
	  offsetof (struct ab_snapshot_meta_s, mem_size_mib) },
	{ "rootfs_sha256", F_SHA256, 0, 0, offsetof (struct ab_snapshot_meta_s, rootfs_sha256) },
	{ "kernel_sha256", F_SHA256, 0, 0, offsetof (struct ab_snapshot_meta_s, kernel_sha256) },
	{ "created_at", F_I64, 0, LLONG_MAX, offsetof (struct ab_snapshot_meta_s, created_at) },
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static void
cleanup_jsonp (json_t **j)
{
	json_decref (*j);
}

#define cleanup_json __attribute__ ((cleanup (cleanup_jsonp)))

static bool
valid_name (const char *s)
{
	size_t n = strlen (s);
	if (n == 0 || n > AB_SNAPSHOT_BACKEND_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

static bool
valid_sha256 (const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == AB_SHA256_HEX_LEN;
}

static long long
get_number (const struct ab_snapshot_meta_s *m, const struct field_s *f)
{
	const char *p = (const char *)m + f->offset;
	if (f->kind == F_U32)
		return *(const uint32_t *)(const void *)p;
	return *(const int64_t *)(const void *)p;
}

static void
set_number (struct ab_snapshot_meta_s *m, const struct field_s *f, long long v)
{
	char *p = (char *)m + f->offset;
	if (f->kind == F_U32)
		*(uint32_t *)(void *)p = (uint32_t)v;
	else
		*(int64_t *)(void *)p = (int64_t)v;
}

static int
check_field (const struct field_s *f, const struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	const char *s = (const char *)m + f->offset;
	long long v;

	switch (f->kind) {
	case F_NAME:
		if (!valid_name (s))
			return ab_error (err, 0, AB_E_INVALID, "'%s' must be 1 to %d of [a-z0-9-]",
			                 f->key, AB_SNAPSHOT_BACKEND_MAX);
		return 0;
	case F_SHA256:
		if (!valid_sha256 (s))
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s' must be 64 lowercase hex digits", f->key);
		return 0;
	case F_U32:
	case F_I64:
		v = get_number (m, f);
		if (v < f->min || v > f->max)
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s' is %lld, must be in [%lld, %lld]", f->key, v, f->min,
			                 f->max);
		return 0;
	}
	return ab_error (err, 0, AB_E_INTERNAL, "field kind %d", (int)f->kind);
}

int
ab_snapshot_meta_check (const struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	if (m->format_version != AB_SNAPSHOT_META_FORMAT)
		return ab_error (err, 0, AB_E_INVALID, "'format_version' is %u, must be %d",
		                 m->format_version, AB_SNAPSHOT_META_FORMAT);
	for (size_t i = 0; i < N_FIELDS; i++)
		if (check_field (&fields[i], m, err) < 0)
			return ab_error_code (err);
	return 0;
}

int
ab_snapshot_meta_init (struct ab_snapshot_meta_s *m, const char *backend, uint32_t vcpu_count,
                       uint32_t mem_size_mib, int rootfs_fd, int kernel_fd, ab_error_t *err)
{
	struct ab_snapshot_meta_s r = { .format_version = AB_SNAPSHOT_META_FORMAT,
		                        .vcpu_count = vcpu_count,
		                        .mem_size_mib = mem_size_mib,
		                        .created_at = (int64_t)time (NULL) };

	if (strlen (backend) >= sizeof r.backend)
		return ab_error (err, 0, AB_E_INVALID, "backend name '%.40s' is too long", backend);
	strcpy (r.backend, backend);
	memset (r.rootfs_sha256, '0', AB_SHA256_HEX_LEN); /* placeholders until hashed */
	memset (r.kernel_sha256, '0', AB_SHA256_HEX_LEN);
	if (ab_snapshot_meta_check (&r, err) < 0)
		return ab_error_code (err);
	if (ab_sha256_fd (rootfs_fd, r.rootfs_sha256, NULL, err) < 0)
		return ab_error_wrap (err, "while hashing the rootfs");
	if (ab_sha256_fd (kernel_fd, r.kernel_sha256, NULL, err) < 0)
		return ab_error_wrap (err, "while hashing the kernel");
	*m = r;
	return 0;
}

/* A key from an untrusted file, made safe to put in a message. */
static void
printable_key (const char *key, char *buf, size_t size)
{
	size_t n = 0;
	for (; key[n] && n + 1 < size; n++)
		buf[n] = (key[n] >= 0x20 && key[n] < 0x7f) ? key[n] : '?';
	buf[n] = '\0';
}

static int
parse_field (const struct field_s *f, json_t *v, struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	if (f->kind == F_U32 || f->kind == F_I64) {
		/* json_is_integer: 2.0, "2", true and null are all refused. */
		if (!json_is_integer (v))
			return ab_error (err, 0, AB_E_INVALID, "'%s' must be an integer", f->key);
		long long n = json_integer_value (v);
		if (n < f->min || n > f->max)
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s' is %lld, must be in [%lld, %lld]", f->key, n, f->min,
			                 f->max);
		set_number (m, f, n);
		return 0;
	}
	if (!json_is_string (v))
		return ab_error (err, 0, AB_E_INVALID, "'%s' must be a string", f->key);
	size_t cap = f->kind == F_NAME ? AB_SNAPSHOT_BACKEND_MAX + 1 : AB_SHA256_HEX_LEN + 1;
	if (json_string_length (v) >= cap)
		return ab_error (err, 0, AB_E_INVALID, "'%s' is too long", f->key);
	memcpy ((char *)m + f->offset, json_string_value (v), json_string_length (v) + 1);
	return check_field (f, m, err);
}

/* The version first: a stale snapshot must say "stale", whatever else in
 * its layout changed since. */
static int
parse_format_version (json_t *root, struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	json_t *v = json_object_get (root, "format_version");

	if (!v)
		return ab_error (err, 0, AB_E_INVALID, "missing 'format_version'");
	if (!json_is_integer (v))
		return ab_error (err, 0, AB_E_INVALID, "'format_version' must be an integer");
	if (json_integer_value (v) != AB_SNAPSHOT_META_FORMAT)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "format version %lld is not %d: the snapshot is stale (made by "
		                 "another agentbox version) and cannot be restored; take a new one",
		                 (long long)json_integer_value (v), AB_SNAPSHOT_META_FORMAT);
	m->format_version = AB_SNAPSHOT_META_FORMAT;
	return 0;
}

static int
parse_object (json_t *root, struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object (root))
		return ab_error (err, 0, AB_E_INVALID, "must be a JSON object");
	if (parse_format_version (root, m, err) < 0)
		return ab_error_code (err);
	json_object_foreach (root, key, v)
	{
		bool known = strcmp (key, "format_version") == 0;
		for (size_t i = 0; i < N_FIELDS && !known; i++)
			known = strcmp (key, fields[i].key) == 0;
		if (!known) {
			char shown[48];
			printable_key (key, shown, sizeof shown);
			return ab_error (err, 0, AB_E_INVALID, "unknown key '%s'", shown);
		}
	}
	for (size_t i = 0; i < N_FIELDS; i++) {
		v = json_object_get (root, fields[i].key);
		if (!v)
			return ab_error (err, 0, AB_E_INVALID, "missing '%s'", fields[i].key);
		if (parse_field (&fields[i], v, m, err) < 0)
			return ab_error_code (err);
	}
	return 0;
}

int
ab_snapshot_meta_parse (const char *text, size_t len, struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	struct ab_snapshot_meta_s r = { 0 };
	json_error_t je;
	cleanup_json json_t *root = json_loadb (text, len, JSON_REJECT_DUPLICATES, &je);

	if (!root)
		return ab_error (err, 0, AB_E_INVALID,
		                 "snapshot metadata: not valid JSON: %s (line %d)", je.text,
		                 je.line);
	if (parse_object (root, &r, err) < 0)
		return ab_error_wrap (err, "snapshot metadata");
	*m = r;
	return 0;
}

json_t *
ab_snapshot_meta_to_json (const struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	cleanup_json json_t *j = json_object ();

	if (ab_snapshot_meta_check (m, err) < 0) {
		ab_error_wrap (err, "snapshot metadata");
		return NULL;
	}
	json_object_set_new (j, "format_version", json_integer (m->format_version));
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct field_s *f = &fields[i];
		const char *s = (const char *)m + f->offset;
		json_object_set_new (j, f->key,
		                     f->kind == F_U32 || f->kind == F_I64
		                             ? json_integer (get_number (m, f))
		                             : json_string (s));
	}
	return steal_pointer (&j);
}

static bool
plain_name (const char *name)
{
	return name[0] && !strchr (name, '/') && strcmp (name, ".") != 0
	       && strcmp (name, "..") != 0;
}

/* Create tmp exclusively, write text, fsync (when durable), close
 * (close's error too: NFS reports write-back failures there). */
static int
write_tmp (int dirfd, const char *tmp, const char *text, bool durable, ab_error_t *err)
{
	int fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", tmp);
	if (ab_write_all (fd, text, strlen (text)) < 0 || (durable && fsync (fd) < 0)) {
		int e = errno;
		close (fd);
		return ab_error (err, e, AB_E_SYSTEM, "write %s", tmp);
	}
	if (close (fd) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "close %s", tmp);
	return 0;
}

int
ab_snapshot_meta_write (int dirfd, const char *name, const struct ab_snapshot_meta_s *m,
                        ab_error_t *err)
{
	return ab_snapshot_meta_write_ex (dirfd, name, m, true, err);
}

int
ab_snapshot_meta_write_ex (int dirfd, const char *name, const struct ab_snapshot_meta_s *m,
                           bool durable, ab_error_t *err)
{
	cleanup_json json_t *j = NULL;
	cleanup_free char *text = NULL;
	cleanup_free char *tmp = NULL;
	cleanup_free char *body = NULL;

	if (!plain_name (name))
		return ab_error (err, 0, AB_E_INVALID, "'%s' is not a plain file name", name);
	j = ab_snapshot_meta_to_json (m, err);
	if (!j)
		return ab_error_code (err);
	text = json_dumps (j, JSON_INDENT (2) | JSON_PRESERVE_ORDER);
	if (!text)
		return ab_error (err, 0, AB_E_INTERNAL, "json_dumps failed");
	body = xasprintf ("%s\n", text);
	/* pid + counter: two writers (processes or threads) never share a tmp. */
	static unsigned long seq;
	tmp = xasprintf (".%s.tmp-%ld-%lu", name, (long)getpid (),
	                 __atomic_add_fetch (&seq, 1, __ATOMIC_RELAXED));
	if (write_tmp (dirfd, tmp, body, durable, err) < 0) {
		unlinkat (dirfd, tmp, 0);
		return ab_error_wrap (err, "while writing snapshot metadata");
	}
	if (renameat (dirfd, tmp, dirfd, name) < 0) {
		int e = errno;
		unlinkat (dirfd, tmp, 0);
		return ab_error (err, e, AB_E_SYSTEM, "rename %s to %s", tmp, name);
	}
	if (!durable)
		return 0;
	/* The rename itself is durable only once the directory is synced. */
	cleanup_close int dfd = openat (dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync (dfd) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fsync the directory of %s", name);
	return 0;
}

/* At most AB_SNAPSHOT_META_MAX bytes of a regular file that is not a symlink. */
static char *
read_small (int dirfd, const char *name, size_t *len, ab_error_t *err)
{
	cleanup_close int fd =
	        openat (dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	cleanup_free char *buf = NULL;
	struct stat sb;
	size_t n = 0;

	if (fd < 0) {
		ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM, "open %s",
		          name);
		return NULL;
	}
	if (fstat (fd, &sb) < 0 || !S_ISREG (sb.st_mode)) {
		ab_error (err, 0, AB_E_INVALID, "%s is not a regular file", name);
		return NULL;
	}
	buf = xmalloc (AB_SNAPSHOT_META_MAX + 1);
	for (;;) {
		ssize_t r = read (fd, buf + n, AB_SNAPSHOT_META_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ab_error (err, errno, AB_E_SYSTEM, "read %s", name);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > AB_SNAPSHOT_META_MAX) {
			ab_error (err, 0, AB_E_LIMIT, "%s is larger than %d bytes", name,
			          AB_SNAPSHOT_META_MAX);
			return NULL;
		}
	}
	*len = n;
	return steal_pointer (&buf);
}

int
ab_snapshot_meta_read (int dirfd, const char *name, struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	size_t len = 0;
	cleanup_free char *text = read_small (dirfd, name, &len, err);

	if (!text)
		return ab_error_code (err);
	return ab_snapshot_meta_parse (text, len, m, err);
}

/* Plain strcmp on the digests: they are not secrets (the recorded one sits
 * in a readable file, the other is a hash of a file the host chose), so a
 * timing difference tells an observer nothing; constant time is not needed. */
static int
verify_file (const char *what, int fd, const char *recorded, ab_error_t *err)
{
	char now[AB_SHA256_HEX_LEN + 1];

	if (ab_sha256_fd (fd, now, NULL, err) < 0)
		return ab_error_wrap (err, "while hashing the %s", what);
	if (strcmp (now, recorded) != 0)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "the %s changed since the snapshot was taken (SHA-256 %s, the "
		                 "snapshot recorded %s): refusing to restore",
		                 what, now, recorded);
	return 0;
}

int
ab_snapshot_meta_verify (const struct ab_snapshot_meta_s *m, const char *backend, int rootfs_fd,
                         int kernel_fd, ab_error_t *err)
{
	if (ab_snapshot_meta_check (m, err) < 0)
		return ab_error_wrap (err, "snapshot metadata");
	if (strcmp (m->backend, backend) != 0)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "the snapshot was taken by backend '%s', not '%s'", m->backend,
		                 backend);
	if (verify_file ("rootfs", rootfs_fd, m->rootfs_sha256, err) < 0)
		return ab_error_code (err);
	return verify_file ("kernel", kernel_fd, m->kernel_sha256, err);
}
