/* Streaming SHA-256 of a file with OpenSSL's EVP interface: one buffer of
 * AB_SHA256_CHUNK bytes, reused, however large the file (no mmap either:
 * mapped pages of a huge image would count against our RSS just the same). */
#include "backend/sha256-file.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

static void
free_md_ctx (EVP_MD_CTX **ctx)
{
	EVP_MD_CTX_free (*ctx);
}

static void
to_hex (const unsigned char *md, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[2 * n] = '\0';
}

/* pread that retries EINTR; the size is bounded by the caller's buffer. */
static ssize_t
pread_retry (int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t r;
	do
		r = pread (fd, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r;
}

/* Feed bytes [0, size) to ctx, one chunk at a time; then make sure the
 * file did not grow meanwhile (the hash must describe the whole file). */
static int
hash_range (int fd, EVP_MD_CTX *ctx, uint64_t size, unsigned char *buf,
            struct ab_sha256_stats_s *st, ab_error_t *err)
{
	uint64_t off = 0;
	ssize_t r;

	while (off < size) {
		size_t want = size - off < AB_SHA256_CHUNK ? (size_t)(size - off) : AB_SHA256_CHUNK;
		r = pread_retry (fd, buf, want, off);
		if (r < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "read at offset %llu",
			                 (unsigned long long)off);
		if (r == 0)
			return ab_error (err, 0, AB_E_CONFLICT,
			                 "file shrank while it was hashed (%llu of %llu bytes)",
			                 (unsigned long long)off, (unsigned long long)size);
		if (EVP_DigestUpdate (ctx, buf, (size_t)r) != 1)
			return ab_error (err, 0, AB_E_INTERNAL, "EVP_DigestUpdate failed");
		off += (uint64_t)r;
		st->bytes += (uint64_t)r;
		st->reads++;
		if ((size_t)r > st->max_read)
			st->max_read = (size_t)r;
	}
	r = pread_retry (fd, buf, 1, size);
	if (r < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read at offset %llu",
		                 (unsigned long long)size);
	if (r > 0)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "file grew while it was hashed (past %llu bytes)",
		                 (unsigned long long)size);
	return 0;
}

int
ab_sha256_fd (int fd, char hex[AB_SHA256_HEX_LEN + 1], struct ab_sha256_stats_s *stats,
              ab_error_t *err)
{
	__attribute__ ((cleanup (free_md_ctx))) EVP_MD_CTX *ctx = NULL;
	cleanup_free unsigned char *buf = NULL;
	struct ab_sha256_stats_s st = { 0 };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	struct stat sb;

	if (fstat (fd, &sb) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fstat");
	if (!S_ISREG (sb.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "not a regular file");
	ctx = EVP_MD_CTX_new ();
	if (!ctx || EVP_DigestInit_ex (ctx, EVP_sha256 (), NULL) != 1)
		return ab_error (err, 0, AB_E_INTERNAL, "cannot initialise SHA-256");
	buf = xmalloc (AB_SHA256_CHUNK);
	if (hash_range (fd, ctx, (uint64_t)sb.st_size, buf, &st, err) < 0)
		return ab_error_code (err);
	if (EVP_DigestFinal_ex (ctx, md, &md_len) != 1 || md_len * 2 != AB_SHA256_HEX_LEN)
		return ab_error (err, 0, AB_E_INTERNAL, "EVP_DigestFinal_ex failed");
	to_hex (md, md_len, hex);
	if (stats)
		*stats = st;
	return 0;
}

int
ab_sha256_file (int dirfd, const char *path, char hex[AB_SHA256_HEX_LEN + 1], ab_error_t *err)
{
	/* O_NONBLOCK: opening a fifo must not hang; a regular file ignores it. */
	cleanup_close int fd = openat (dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "open %s", path);
	if (ab_sha256_fd (fd, hex, NULL, err) < 0)
		return ab_error_wrap (err, "while hashing %s", path);
	return 0;
}
