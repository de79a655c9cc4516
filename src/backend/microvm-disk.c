/* The microVM's root disk for a layered root (spec->root.layers): the
 * layers' merged tree as one ext4 image, built once per layer list and
 * cached under the host-derived cache directory:
 *
 *   CACHE/microvm-roots/KEY.ext4
 *
 * KEY is a SHA-256 over the layers' real paths and the lstat of each
 * layer's top directory (as Docker's layered-root tag: the store's layers
 * are renamed into place whole and never change; a layer directory made
 * by hand and edited below its top keeps its old disk, see docs/images.md).
 *
 * Why a disk and not 9p: 9p cannot carry the overlay's whiteouts and
 * opaque directories to the guest (they are device nodes and trusted.*
 * xattrs on the host), and every lookup under emulation costs a round
 * trip.  The image is built from the overlay the other backends mount
 * (isolate/overlay.c), read in a mount namespace of a child's own, so the
 * merged view has the whiteouts applied; `mke2fs -d` (e2fsprogs) copies
 * it with owners, modes, links and xattrs.  QEMU opens it read-only and
 * every sandbox of the same layers shares it; the guest puts a tmpfs
 * upper over it (agent/vm-root.c).
 *
 * The merged tree is walked first to size the image (a sparse file: the
 * margin costs nothing on disk). */
#include "backend/microvm-internal.h"

#include <dirent.h>
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

#include "backend/backend.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "isolate/mountfd.h"
#include "isolate/overlay.h"

#define DISK_DIR       "microvm-roots"
#define WALK_MAX_DEPTH 128
#define MKE2FS_MS      600000
/* Bumped when the image's format changes, so old disks are not reused. */
#define DISK_FORMAT "ext4-1"

struct tree_size_s {
	uint64_t bytes, entries;
};

static void
free_md_ctx (EVP_MD_CTX **ctx)
{
	EVP_MD_CTX_free (*ctx);
}

static int
disk_key (char *const *layers, char *hex, size_t cap, ab_error_t *err)
{
	__attribute__ ((cleanup (free_md_ctx))) EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char real[PATH_MAX];
	struct stat st;

	if (!ctx || EVP_DigestInit_ex (ctx, EVP_sha256 (), NULL) != 1)
		return ab_error (err, 0, AB_E_INTERNAL, "SHA-256 unavailable");
	EVP_DigestUpdate (ctx, DISK_FORMAT, sizeof DISK_FORMAT);
	for (char *const *l = layers; *l; l++) {
		if (!realpath (*l, real) || lstat (real, &st) < 0)
			return ab_error (err, errno, AB_E_INVALID, "root layer %s", *l);
		const unsigned long long f[] = {
			(unsigned long long)st.st_ino,
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
	hex[0] = '\0';
	for (unsigned i = 0; i < 16 && 2 * i + 3 <= cap; i++)
		snprintf (hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* Takes dfd.  What the files and directories below take, in 4 KiB blocks. */
static int
walk (int dfd, int depth, struct tree_size_s *t, ab_error_t *err)
{
	cleanup_dir DIR *d = fdopendir (dfd);
	struct dirent *e;

	if (!d) {
		close (dfd);
		return ab_error (err, errno, AB_E_SYSTEM, "read the layered root");
	}
	if (depth > WALK_MAX_DEPTH)
		return ab_error (err, 0, AB_E_LIMIT, "the layered root is nested too deep");
	while ((errno = 0, e = readdir (d))) {
		struct stat st;
		int sub;
		if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
			continue;
		if (fstatat (dirfd (d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "stat %s", e->d_name);
		t->entries++;
		t->bytes += ((uint64_t)st.st_size + 4095) / 4096 * 4096 + 4096;
		if (!S_ISDIR (st.st_mode))
			continue;
		sub = openat (dirfd (d), e->d_name,
		              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "open %s", e->d_name);
		if (walk (sub, depth + 1, t, err) < 0)
			return -1;
	}
	return errno ? ab_error (err, errno, AB_E_SYSTEM, "read the layered root") : 0;
}

/* In the child, the merged tree attached at root: size the image, then
 * mke2fs -d from it.  No journal (the disk is never written by the guest),
 * no metadata checksums (the guest kernel then needs no crc32c driver). */
static int
make_fs (const char *root, const char *image, ab_error_t *err)
{
	struct tree_size_s t = { 0 };
	cleanup_close int fd = -1;
	char inodes[32], out[512] = "";
	int dfd = open (root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", root);
	if (walk (dfd, 0, &t, err) < 0)
		return -1;
	fd = open (image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate (fd, (off_t)(t.bytes + t.bytes / 4 + (64ULL << 20))) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", image);
	snprintf (inodes, sizeof inodes, "%llu", (unsigned long long)(t.entries + 4096));
	char *argv[] = { (char *)"mke2fs",
		         (char *)"-q",
		         (char *)"-F",
		         (char *)"-t",
		         (char *)"ext4",
		         (char *)"-b",
		         (char *)"4096",
		         (char *)"-m",
		         (char *)"0",
		         (char *)"-N",
		         inodes,
		         (char *)"-O",
		         (char *)"^has_journal,^metadata_csum,^resize_inode",
		         (char *)"-E",
		         (char *)"lazy_itable_init=1,nodiscard",
		         (char *)"-L",
		         (char *)"agentbox-root",
		         (char *)"-d",
		         (char *)root,
		         (char *)image,
		         NULL };
	if (ab_run_tool (argv, out, sizeof out, MKE2FS_MS, err) < 0)
		return ab_error_wrap (err, "mke2fs of the layered root");
	return 0;
}

static void __attribute__ ((noreturn))
build_child (char *const *layers, const char *root, const char *image, int out)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_close int mnt = -1, target = -1;

	if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		ab_error (&err, errno, AB_E_SYSTEM, "a mount namespace for the root disk");
	else if ((mnt = ab_overlay_mount_fd (layers, -1, -1, -1, &err)) < 0)
		ab_error_wrap (&err, "layered root");
	else if ((target = open (root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		ab_error (&err, errno, AB_E_SYSTEM, "open %s", root);
	else if (ab_mount_attach (mnt, target, "the layered root", &err) == 0)
		make_fs (root, image, &err);
	if (err.kind != AB_E_NONE)
		ab_write_all (out, err.msg, strlen (err.msg));
	_exit (err.kind == AB_E_NONE ? 0 : 1);
}

static int
build (char *const *layers, const char *dir, const char *image, const char *tmp, ab_error_t *err)
{
	cleanup_free char *root = xasprintf ("%s/mnt-%d", dir, (int)getpid ());
	char msg[AB_ERROR_MSG_MAX];
	int pipefd[2], status = 0;
	ssize_t n = 0, r;
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
		build_child (layers, root, tmp, pipefd[1]);
	}
	close (pipefd[1]);
	while (pid > 0 && n < (ssize_t)sizeof msg - 1
	       && ((r = read (pipefd[0], msg + n, sizeof msg - 1 - (size_t)n)) > 0
	           || (r < 0 && errno == EINTR)))
		n += r > 0 ? r : 0;
	close (pipefd[0]);
	while (pid > 0 && waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	rmdir (root);
	if (pid < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fork");
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
		unlink (tmp);
		msg[n > 0 ? n : 0] = '\0';
		return ab_error (err, 0, AB_E_SYSTEM, "the microVM's root disk: %s",
		                 n > 0 ? msg : "its builder failed");
	}
	if (rename (tmp, image) < 0) {
		unlink (tmp);
		return ab_error (err, errno, AB_E_SYSTEM, "rename %s", image);
	}
	return 0;
}

int
ab_microvm_root_disk (char *const *layers, char *out, size_t cap, ab_error_t *err)
{
	cleanup_free char *cache = ab_backend_cache_dir ();
	cleanup_free char *dir = NULL, *image = NULL, *tmp = NULL;
	char key[40];

	if (!cache)
		return ab_error (err, 0, AB_E_NOT_FOUND,
		                 "no cache directory for the microVM's root disk "
		                 "(set AGENTBOX_CACHE_DIR)");
	if (disk_key (layers, key, sizeof key, err) < 0)
		return -1;
	dir = xasprintf ("%s/%s", cache, DISK_DIR);
	image = xasprintf ("%s/%s.ext4", dir, key);
	if ((size_t)snprintf (out, cap, "%s", image) >= cap)
		return ab_error (err, ENAMETOOLONG, AB_E_INVALID, "%s", image);
	if (access (image, R_OK) == 0)
		return 0;
	if ((mkdir (cache, 0700) < 0 && errno != EEXIST)
	    || (mkdir (dir, 0700) < 0 && errno != EEXIST))
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", dir);
	/* Two sandboxes building the same disk at once each write their own
	 * file; the renames replace identical content. */
	tmp = xasprintf ("%s/.%s.%d.tmp", dir, key, (int)getpid ());
	return build (layers, dir, image, tmp, err);
}
