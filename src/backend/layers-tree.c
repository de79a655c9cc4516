/* A layered root's merged tree on the host (see layers-tree.h): Docker's
 * import (docker-image.c) and the microVM's disk (microvm-disk.c). */
#include "backend/layers-tree.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "isolate/mountfd.h"
#include "isolate/overlay.h"

static void
free_md_ctx (EVP_MD_CTX **ctx)
{
	EVP_MD_CTX_free (*ctx);
}

int
ab_layers_key (char *const *layers, char *hex, size_t cap, ab_error_t *err)
{
	__attribute__ ((cleanup (free_md_ctx))) EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char real[PATH_MAX];
	struct stat st;

	if (cap < 33)
		return ab_error (err, 0, AB_E_INTERNAL, "layers key buffer too small");
	if (!ctx || EVP_DigestInit_ex (ctx, EVP_sha256 (), NULL) != 1)
		return ab_error (err, 0, AB_E_INTERNAL, "SHA-256 unavailable");
	for (char *const *l = layers; *l; l++) {
		if (!realpath (*l, real) || lstat (real, &st) < 0)
			return ab_error (err, errno, AB_E_INVALID, "root layer %s", *l);
		const unsigned long long f[] = {
			(unsigned long long)st.st_ino,
			(unsigned long long)st.st_mode,
			(unsigned long long)st.st_uid,
			(unsigned long long)st.st_gid,
			(unsigned long long)st.st_mtim.tv_sec,
			(unsigned long long)st.st_mtim.tv_nsec,
			(unsigned long long)st.st_ctim.tv_sec,
			(unsigned long long)st.st_ctim.tv_nsec,
		};
		EVP_DigestUpdate (ctx, real, strlen (real) + 1);
		EVP_DigestUpdate (ctx, f, sizeof f);
	}
	if (EVP_DigestFinal_ex (ctx, md, &n) != 1 || n < 16)
		return ab_error (err, 0, AB_E_INTERNAL, "SHA-256 failed");
	/* 128 bits: a cache key, not a security boundary. */
	for (unsigned i = 0; i < 16; i++)
		snprintf (hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

static void __attribute__ ((noreturn))
tree_child (char *const *layers, const char *root, ab_layers_tree_fn fn, void *ctx, int out)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_close int mnt = -1, target = -1;

	/* Slave: nothing mounted here reaches the host; the mounts end with
	 * this process. */
	if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		ab_error (&err, errno, AB_E_SYSTEM, "a mount namespace for the layered root");
	else if ((mnt = ab_overlay_mount_fd (layers, -1, -1, -1, &err)) < 0)
		ab_error_wrap (&err, "layered root");
	else if ((target = open (root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		ab_error (&err, errno, AB_E_SYSTEM, "open %s", root);
	else if (ab_mount_attach (mnt, target, "the layered root", &err) == 0)
		fn (root, ctx, &err);
	if (err.kind != AB_E_NONE)
		ab_write_all (out, err.msg, strlen (err.msg));
	_exit (err.kind == AB_E_NONE ? 0 : 1);
}

/* Up to cap bytes until EOF (the child's end closes when it exits). */
static ssize_t
read_some (int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t r = read (fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

int
ab_layers_with_tree (char *const *layers, const char *scratch_dir, ab_layers_tree_fn fn, void *ctx,
                     ab_error_t *err)
{
	cleanup_free char *root = xasprintf ("%s/root", scratch_dir);
	char msg[AB_ERROR_MSG_MAX];
	int pipefd[2], status = 0;
	ssize_t n;
	pid_t pid;

	if (mkdir (root, 0700) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", root);
	if (pipe2 (pipefd, O_CLOEXEC) < 0) {
		rmdir (root);
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	}
	pid = fork ();
	if (pid == 0) {
		close (pipefd[0]);
		tree_child (layers, root, fn, ctx, pipefd[1]);
	}
	close (pipefd[1]);
	n = pid < 0 ? -1 : read_some (pipefd[0], msg, sizeof msg - 1);
	close (pipefd[0]);
	while (pid > 0 && waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	rmdir (root);
	if (pid < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fork");
	if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
		return 0;
	msg[n > 0 ? n : 0] = '\0';
	return ab_error (err, 0, AB_E_SYSTEM, "%s", n > 0 ? msg : "failed");
}
