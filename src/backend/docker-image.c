/* Images of Docker sandboxes, always made locally with `docker import`
 * (never pulled: no registry is involved):
 *
 * - the empty image (a tar with nothing in it) for sandboxes on the host's
 *   trees, which are all bind mounts; imported once per Docker daemon;
 * - a --rootfs directory, streamed by tar into `docker import` and tagged
 *   agentbox/rootfs:<key>.  The key is a SHA-256 over the directory's real
 *   path and the lstat of every entry below it (name, inode, type and
 *   mode, owner, size, mtime and ctime in ns): any change to the tree
 *   changes some entry's ctime, which no one can set back, so a changed
 *   tree is imported again while an unchanged one costs one stat walk
 *   (no file is read).  Old tags stay in Docker's image store (a cache).
 *
 * Nothing asks whether an image exists: `docker run --pull never` says so
 * when it does not (then the image is imported and the run tried again),
 * which saves a docker call on every start. */
#include "backend/docker-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "backend/layers-tree.h"

#define RMI_TIMEOUT_MS    30000
#define IMPORT_TIMEOUT_MS 300000
#define WALK_MAX_DEPTH    128
#define EMPTY_TAR_BYTES   10240 /* what tar writes for no member: zero blocks */

static void
free_md_ctx (EVP_MD_CTX **ctx)
{
	EVP_MD_CTX_free (*ctx);
}

static void
hash_stat (EVP_MD_CTX *ctx, const char *name, const struct stat *st)
{
	const unsigned long long f[] = {
		(unsigned long long)st->st_ino,          (unsigned long long)st->st_mode,
		(unsigned long long)st->st_uid,          (unsigned long long)st->st_gid,
		(unsigned long long)st->st_size,         (unsigned long long)st->st_mtim.tv_sec,
		(unsigned long long)st->st_mtim.tv_nsec, (unsigned long long)st->st_ctim.tv_sec,
		(unsigned long long)st->st_ctim.tv_nsec, (unsigned long long)st->st_rdev,
	};
	EVP_DigestUpdate (ctx, name, strlen (name) + 1);
	EVP_DigestUpdate (ctx, f, sizeof f);
}

/* Takes dfd. */
static int
walk (EVP_MD_CTX *ctx, int dfd, int depth, ab_error_t *err)
{
	cleanup_dir DIR *d = fdopendir (dfd);
	struct dirent *e;

	if (!d) {
		close (dfd);
		return ab_error (err, errno, AB_E_SYSTEM, "read the rootfs");
	}
	if (depth > WALK_MAX_DEPTH)
		return ab_error (err, 0, AB_E_LIMIT, "the rootfs is nested too deep");
	while ((errno = 0, e = readdir (d))) {
		struct stat st;
		int sub;
		if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
			continue;
		if (fstatat (dirfd (d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "stat %s in the rootfs",
			                 e->d_name);
		hash_stat (ctx, e->d_name, &st);
		if (!S_ISDIR (st.st_mode))
			continue;
		sub = openat (dirfd (d), e->d_name,
		              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "open %s in the rootfs",
			                 e->d_name);
		if (walk (ctx, sub, depth + 1, err) < 0)
			return -1;
		EVP_DigestUpdate (ctx, "..", 3); /* the tree's shape, not only its names */
	}
	return errno ? ab_error (err, errno, AB_E_SYSTEM, "read the rootfs") : 0;
}

static int
hex_tag (EVP_MD_CTX *ctx, const char *repo, char *tag, size_t cap, ab_error_t *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex (ctx, md, &n) != 1 || n < 16)
		return ab_error (err, 0, AB_E_INTERNAL, "SHA-256 failed");
	/* 128 bits of the digest: a tag, not a security boundary. */
	size_t used = (size_t)snprintf (tag, cap, "%s:", repo);
	for (unsigned i = 0; i < 16 && used + 3 <= cap; i++)
		used += (size_t)snprintf (tag + used, cap - used, "%02x", md[i]);
	return 0;
}

int
ab_docker_rootfs_tag (const char *rootfs, char *tag, size_t cap, ab_error_t *err)
{
	__attribute__ ((cleanup (free_md_ctx))) EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
	char real[PATH_MAX];
	struct stat st;
	int fd;

	if (!realpath (rootfs, real) || stat (real, &st) < 0)
		return ab_error (err, errno, AB_E_INVALID, "rootfs %s", rootfs);
	if (!S_ISDIR (st.st_mode))
		return ab_error (err, ENOTDIR, AB_E_INVALID, "rootfs %s", rootfs);
	if (!ctx || EVP_DigestInit_ex (ctx, EVP_sha256 (), NULL) != 1)
		return ab_error (err, 0, AB_E_INTERNAL, "SHA-256 unavailable");
	EVP_DigestUpdate (ctx, real, strlen (real) + 1);
	hash_stat (ctx, ".", &st);
	fd = open (real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open rootfs %s", real);
	if (walk (ctx, fd, 0, err) < 0)
		return ab_error_wrap (err, "rootfs %s", real);
	return hex_tag (ctx, AB_DOCKER_ROOTFS_REPO, tag, cap, err);
}

int
ab_docker_layers_tag (char *const *layers, char *tag, size_t cap, ab_error_t *err)
{
	char key[40];

	if (ab_layers_key (layers, key, sizeof key, err) < 0)
		return -1;
	snprintf (tag, cap, "%s:%s", AB_DOCKER_LAYERS_REPO, key);
	return 0;
}

static int
reap (pid_t pid)
{
	int status = 0;

	if (pid <= 0)
		return 0;
	kill (pid, SIGKILL); /* no-op once it exited; ends it on a timeout */
	while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED (status) && WEXITSTATUS (status) == 0 ? 0 : -1;
}

/* The output of both (their errors), bounded, then their status.  A tar
 * that failed (an unreadable file, a file that changed while read) makes
 * an incomplete image: it is removed, never used. */
static int
finish_import (const char *client, const char *tag, pid_t importer, pid_t producer, int out_r,
               ab_error_t *err)
{
	char msg[512] = "", line[256];
	struct pollfd p = { .fd = out_r, .events = POLLIN };
	size_t n = 0;
	int imp_ok, tar_ok;

	/* Until both closed it (EOF) or the deadline; past the buffer, drained. */
	while (poll (&p, 1, IMPORT_TIMEOUT_MS) == 1) {
		char sink[512];
		ssize_t r = n < sizeof msg - 1 ? read (out_r, msg + n, sizeof msg - 1 - n)
		                               : read (out_r, sink, sizeof sink);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (n < sizeof msg - 1)
			n += (size_t)r;
	}
	msg[n] = '\0';
	imp_ok = reap (importer) == 0;
	tar_ok = reap (producer) == 0;
	if (imp_ok && tar_ok)
		return 0;
	if (imp_ok) {
		char *rm[] = { (char *)client, (char *)"image", (char *)"rm",
			       (char *)"-f",   (char *)tag,     NULL };
		ab_run_tool (rm, NULL, 0, RMI_TIMEOUT_MS, &(ab_error_t)AB_ERROR_INIT);
	}
	ab_docker_first_line (msg, line, sizeof line);
	return ab_error (err, 0, AB_E_SYSTEM, "%s failed: %s",
	                 imp_ok ? "tar of the rootfs" : "docker import",
	                 line[0] ? line : "no message");
}

/* `docker import - TAG` fed by `tar -C dir -c .`, or by an empty tar. */
static int
import (const char *client, const char *tag, const char *dir, ab_error_t *err)
{
	char *imp[] = { (char *)client, (char *)"import", (char *)"-", (char *)tag, NULL };
	char *tar[] = { (char *)"tar",
		        (char *)"--numeric-owner",
		        (char *)"-C",
		        (char *)dir,
		        (char *)"--anchored",
		        (char *)"--exclude=./proc/*",
		        (char *)"--exclude=./sys/*",
		        (char *)"--exclude=./dev/*",
		        (char *)"-cf",
		        (char *)"-",
		        (char *)".",
		        NULL };
	static const char zeros[EMPTY_TAR_BYTES];
	int in[2], out[2], r;
	pid_t importer, producer = -1;

	if (pipe2 (in, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	if (pipe2 (out, O_CLOEXEC) < 0) {
		close (in[0]), close (in[1]);
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	}
	/* The empty tar fits in the pipe: written while we hold its read end,
	 * so no SIGPIPE can hit us. */
	if (!dir) {
		ab_write_all (in[1], zeros, sizeof zeros);
		close (in[1]);
		in[1] = -1;
	}
	importer = ab_spawn_tool (imp, in[0], out[1], out[1], err);
	close (in[0]);
	if (importer > 0 && dir)
		producer = ab_spawn_tool (tar, -1, in[1], out[1],
		                          err); /* its errors with the import's */
	if (in[1] >= 0)
		close (in[1]);
	close (out[1]);
	if (importer < 0 || (dir && producer < 0)) {
		if (importer > 0) {
			kill (importer, SIGKILL);
			waitpid (importer, NULL, 0);
		}
		close (out[0]);
		return -1;
	}
	r = finish_import (client, tag, importer, producer, out[0], err);
	close (out[0]);
	return r;
}

int
ab_docker_image_tag (const char *rootfs, char *tag, size_t cap, ab_error_t *err)
{
	if (rootfs)
		return ab_docker_rootfs_tag (rootfs, tag, cap, err);
	snprintf (tag, cap, "%s", AB_DOCKER_EMPTY_IMAGE);
	return 0;
}

int
ab_docker_import_image (const char *client, const char *rootfs, const char *tag, ab_error_t *err)
{
	return import (client, tag, rootfs, err);
}

struct import_ctx_s {
	const char *client, *tag;
};

static int
import_tree (const char *root, void *ctx, ab_error_t *err)
{
	const struct import_ctx_s *c = ctx;
	return import (c->client, c->tag, root, err);
}

int
ab_docker_import_layers (const char *client, char *const *layers, const char *scratch_dir,
                         const char *tag, ab_error_t *err)
{
	struct import_ctx_s c = { .client = client, .tag = tag };

	if (ab_layers_with_tree (layers, scratch_dir, import_tree, &c, err) < 0)
		return ab_error_wrap (err, "import of the layered root");
	return 0;
}
