/* The microVM's root disk for a layered root (spec->root.layers): the
 * layers' merged tree as one ext4 image, built once per layer list and
 * cached under the host-derived cache directory:
 *
 *   CACHE/microvm-roots/KEY.v1.ext4
 *
 * KEY is the layer list's key (backend/layers-tree.c, Docker's tag uses
 * it too: the store's layers are renamed into place whole and never
 * change; a layer directory made by hand and edited below its top keeps
 * its old disk, see docs/images.md).
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
 * The merged tree is measured first with du(1) (blocks and inodes) to
 * size the image: a sparse file, so the margin costs nothing on disk. */
#include "backend/microvm-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/layers-tree.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define DISK_DIR "microvm-roots"
#define TOOL_MS  600000
/* In the file name: a disk of an older format is never reused. */
#define DISK_FORMAT "v1"

/* The first number du prints for its argv. */
static int
du_number (char **argv, uint64_t *out, ab_error_t *err)
{
	char buf[256] = "";
	char *end;

	if (ab_run_tool (argv, buf, sizeof buf, TOOL_MS, err) < 0)
		return ab_error_wrap (err, "measuring the layered root");
	errno = 0;
	*out = strtoull (buf, &end, 10);
	if (errno || end == buf)
		return ab_error (err, 0, AB_E_SYSTEM, "du printed '%.40s'", buf);
	return 0;
}

/* In the child, the merged tree at root: size the image, then mke2fs -d
 * from it.  No journal (the disk is never written by the guest), no
 * metadata checksums, no resize inode (it never grows). */
static int
make_fs (const char *root, void *ctx, ab_error_t *err)
{
	const char *image = ctx;
	char *du_kib[] = { (char *)"du", (char *)"-s", (char *)"-x",
		           (char *)"-k", (char *)root, NULL };
	char *du_inodes[] = { (char *)"du",       (char *)"-s", (char *)"-x",
		              (char *)"--inodes", (char *)root, NULL };
	cleanup_close int fd = -1;
	uint64_t kib, inodes;
	char n_inodes[32], out[512] = "";

	if (du_number (du_kib, &kib, err) < 0 || du_number (du_inodes, &inodes, err) < 0)
		return -1;
	/* Room for the data, a block per inode (directories, small files
	 * rounded up), a quarter more and 64 MiB for ext4's own tables. */
	uint64_t bytes = (kib << 10) + inodes * 4096;
	fd = open (image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate (fd, (off_t)(bytes + bytes / 4 + (64ULL << 20))) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", image);
	snprintf (n_inodes, sizeof n_inodes, "%llu", (unsigned long long)(inodes + 4096));
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
		         n_inodes,
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
	if (ab_run_tool (argv, out, sizeof out, TOOL_MS, err) < 0)
		return ab_error_wrap (err, "mke2fs of the layered root");
	return 0;
}

int
ab_microvm_root_disk (char *const *layers, char *out, size_t cap, ab_error_t *err)
{
	cleanup_free char *cache = ab_backend_cache_dir ();
	cleanup_free char *dir = NULL, *image = NULL, *tmp = NULL, *scratch = NULL;
	char key[40];
	int r;

	if (!cache)
		return ab_error (err, 0, AB_E_NOT_FOUND,
		                 "no cache directory for the microVM's root disk "
		                 "(set AGENTBOX_CACHE_DIR)");
	if (ab_layers_key (layers, key, sizeof key, err) < 0)
		return -1;
	dir = xasprintf ("%s/%s", cache, DISK_DIR);
	image = xasprintf ("%s/%s.%s.ext4", dir, key, DISK_FORMAT);
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
	scratch = xasprintf ("%s/.mnt-%d", dir, (int)getpid ());
	if (mkdir (scratch, 0700) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", scratch);
	r = ab_layers_with_tree (layers, scratch, make_fs, tmp, err);
	rmdir (scratch);
	if (r < 0) {
		unlink (tmp);
		return ab_error_wrap (err, "the microVM's root disk");
	}
	if (rename (tmp, image) < 0) {
		unlink (tmp);
		return ab_error (err, errno, AB_E_SYSTEM, "rename %s", image);
	}
	return 0;
}
