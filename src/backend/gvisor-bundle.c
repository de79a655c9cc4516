/* The gVisor sandbox's private directory and OCI bundle (layout in
 * gvisor-internal.h).  Runs in the monitor, as root, before runsc. */
#include "backend/gvisor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend/host-mask.h"
#include "backend/oci-bundle.h"
#include "backend/sandbox-dir.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "isolate/mountfd.h"
#include "isolate/overlay.h"

/* The door directory and the mask covers belong to an id that is neither
 * root nor the sandbox's user.  Door, mode 0711: the agent (root with
 * CAP_DAC_OVERRIDE) binds its socket there, while the sandbox's commands
 * (no capabilities: only the "others" bits apply to them) can reach the
 * socket but cannot remove it or put their own in its place.  Covers,
 * mode 0000: opening a masked path fails with EACCES. */
#define STRANGER     65534 /* nobody */
#define STRANGER_ALT 65533

struct bundle_parts_s {
	char **host_dirs;
	struct ab_oci_mask_s *masks;
	size_t n_masks;
};

static int
make_dirs (int dfd, const struct ab_spec_s *spec, ab_error_t *err)
{
	uid_t stranger = spec->uid == STRANGER ? STRANGER_ALT : STRANGER;

	if (mkdirat (dfd, "state", 0700) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sandbox directory");
	if (ab_sandbox_dir_entry (dfd, AB_GVISOR_DOOR, true, 0711, stranger, err) < 0)
		return ab_error_wrap (err, "sandbox directory");
	if (spec->rootfs)
		return 0;
	if (mkdirat (dfd, "rootfs", 0755) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sandbox root directory");
	if (spec->root.layers)
		return 0;
	return ab_host_mask_covers (dfd, "mask-file", "mask-dir", stranger, err);
}

/* Host binds (the host trees, ab_host_trees): which top-level directories
 * to bind read-only, the symlinks (bin -> usr/bin on a merged-/usr
 * system) recreated here, and the masks over /etc. */
static int
host_layout (int dfd, struct bundle_parts_s *p, ab_error_t *err)
{
	cleanup_close int root = openat (dfd, "rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (root < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sandbox root directory");
	for (size_t i = 0; ab_host_trees[i]; i++) {
		const char *host = ab_host_trees[i], *name = host + 1;
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (lstat (host, &st) < 0)
			continue;
		if (S_ISDIR (st.st_mode)) {
			ab_strv_push (&p->host_dirs, name);
			continue;
		}
		if (!S_ISLNK (st.st_mode) || (n = readlink (host, target, sizeof target - 1)) < 0)
			continue;
		target[n] = '\0';
		if (symlinkat (target, root, name) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "symlink %s", name);
	}
	for (size_t i = 0; p->host_dirs && p->host_dirs[i]; i++) {
		cleanup_free char *tree = xasprintf ("/%s", p->host_dirs[i]);
		if (ab_host_masks_cached (tree, &p->masks, &p->n_masks, err) < 0)
			return ab_error_wrap (err, "masking %s", tree);
	}
	return 0;
}

static int
write_config (int dfd, const struct ab_gvisor_s *g, const struct ab_spec_s *spec,
              const struct bundle_parts_s *p, ab_error_t *err)
{
	cleanup_free char *root = spec->rootfs ? NULL : xasprintf ("%s/rootfs", g->dir);
	cleanup_free char *door = xasprintf ("%s/%s", g->dir, AB_GVISOR_DOOR);
	cleanup_free char *mask_file = xasprintf ("%s/mask-file", g->dir);
	cleanup_free char *mask_dir = xasprintf ("%s/mask-dir", g->dir);
	bool own_root = spec->rootfs || spec->root.layers;
	struct ab_oci_bundle_s b = {
		.spec = spec,
		.root_path = spec->rootfs ? spec->rootfs : root,
		.root_writable = spec->root.layers && !spec->root.read_only,
		.agent_path = g->agent,
		/* The host's own libc runs the commands only on the host's trees. */
		.shim_path = own_root ? NULL : g->shim,
		.door_dir = door,
		/* runsc's cgroup is the one it runs in (ours, gvisor.c): a
		 * relative cgroupsPath is taken from runsc's own group in each
		 * hierarchy, so "." names exactly ours, memory below the
		 * delegated /process_api/... included.  Without a path runsc
		 * would pick a group of its own, one absolute path for every
		 * hierarchy (measured: memory:/agentbox-<id>, outside our
		 * memory group); below ours, the kernel would count the OOM
		 * kill in runsc's group only (v1 counts it in the victim's
		 * group) and runsc would remove that group, count and all,
		 * before the monitor could read it. */
		.cgroup_path = g->cgroup ? "." : NULL,
		.cgroup_premade = true,
		.host_dirs = p->host_dirs,
		.masks = p->masks,
		.n_masks = p->n_masks,
		.mask_file = mask_file,
		.mask_dir = mask_dir,
	};
	json_t *cfg = ab_oci_config (&b, err);
	cleanup_close int fd = -1;
	int r;

	if (!cfg)
		return -1;
	fd = openat (dfd, "config.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	r = fd < 0 ? -1 : json_dumpfd (cfg, fd, JSON_INDENT (1));
	json_decref (cfg);
	if (r < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s/config.json", g->dir);
	return 0;
}

/* root-upper/{upper,work}: the overlay's writable layer on the host.
 * runsc makes its mount points (/workspace, /tmp...) in the root on the
 * host side, so even a read-only root needs one (then the OCI root is
 * read-only and only those land in it). */
static int
upper_dirs (const struct ab_gvisor_s *g, int *upper, int *work, ab_error_t *err)
{
	cleanup_free char *base = xasprintf ("%s/" AB_GVISOR_ROOT_UPPER, g->dir);
	cleanup_close int dfd = -1;

	if (mkdir (base, 0700) < 0
	    || (dfd = open (base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0
	    || mkdirat (dfd, "upper", 0755) < 0 || mkdirat (dfd, "work", 0700) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "root upper directory %s", base);
	*upper = openat (dfd, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*work = openat (dfd, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*upper < 0 || *work < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "root upper directory %s", base);
	return 0;
}

/* A layered root: overlayfs of its layers and root-upper/ at rootfs/,
 * mounted in a mount namespace of the monitor's own, which runsc
 * inherits: nothing of it is on the host's mount table, and it ends with
 * the last process of the sandbox, even after a SIGKILL.  The writes stay
 * in root-upper/, removed with the sandbox directory. */
static int
mount_layers (const struct ab_gvisor_s *g, const struct ab_spec_s *spec, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/rootfs", g->dir);
	cleanup_close int target = -1, mnt = -1, upper = -1, work = -1;

	/* Every path opened after the unshare: overlayfs and move_mount take
	 * only mounts of the current namespace. */
	if (unshare (CLONE_NEWNS) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "unshare a mount namespace for the root");
	if (mount (NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "make / a slave mount");
	if (upper_dirs (g, &upper, &work, err) < 0)
		return -1;
	mnt = ab_overlay_mount_fd (spec->root.layers, upper, work, -1, err);
	if (mnt < 0)
		return ab_error_wrap (err, "layered root");
	target = open (path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sandbox root directory");
	return ab_mount_attach (mnt, target, "the layered root", err);
}

/* What spec->service_socket links to: "<name>.d/door/agent.sock"
 * (relative: the pair can be moved together). */
static char *
link_target (const struct ab_gvisor_s *g)
{
	cleanup_free char *copy = xstrdup (g->dir);

	return xasprintf ("%s/%s/%s", basename (copy), AB_GVISOR_DOOR, AB_GVISOR_SOCKET_NAME);
}

static int
link_socket (const struct ab_gvisor_s *g, const struct ab_spec_s *spec, ab_error_t *err)
{
	cleanup_free char *target = link_target (g);

	if (ab_service_link_claim (spec->service_socket, err) < 0)
		return -1;
	if (symlink (target, spec->service_socket) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "agent socket %s", spec->service_socket);
	return 0;
}

/* runsc's gofer binds the agent's socket by its absolute host path
 * (runsc/fsgofer/lisafs.go BindAt), so that path must fit in sun_path. */
static bool
door_socket_too_long (const struct ab_gvisor_s *g, ab_error_t *err)
{
	struct sockaddr_un sun;
	size_t len = strlen (g->dir) + strlen ("/" AB_GVISOR_DOOR "/" AB_GVISOR_SOCKET_NAME);

	if (len < sizeof sun.sun_path)
		return false;
	ab_error (err, 0, AB_E_INVALID,
	          "%s: too long for gVisor (the agent's host socket would need %zu of %zu bytes)",
	          g->dir, len + 1, sizeof sun.sun_path);
	return true;
}

int
ab_gvisor_prepare (struct ab_gvisor_s *g, const struct ab_spec_s *spec, ab_error_t *err)
{
	struct bundle_parts_s p = { 0 };
	cleanup_close int dfd = -1;
	int r;

	if (spec->rootfs && spec->rootfs[0] != '/')
		return ab_error (err, 0, AB_E_INVALID, "--rootfs %s is not absolute", spec->rootfs);
	if (door_socket_too_long (g, err))
		return -1;
	dfd = ab_sandbox_dir_create (g->dir, err);
	if (dfd < 0)
		return -1;
	g->own_dir = true;
	r = make_dirs (dfd, spec, err);
	if (r == 0 && spec->root.layers)
		r = mount_layers (g, spec, err);
	else if (r == 0 && !spec->rootfs)
		r = host_layout (dfd, &p, err);
	if (r == 0)
		r = write_config (dfd, g, spec, &p, err);
	if (r == 0)
		r = link_socket (g, spec, err);
	ab_cleanup_strvp (&p.host_dirs);
	ab_host_masks_free (p.masks, p.n_masks);
	return r;
}

/* Keep going on errors: remove what can be removed. */
static int
remove_one (const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	(void)(type == FTW_DP ? rmdir (path) : unlink (path));
	return 0;
}

void
ab_gvisor_remove_dir (const struct ab_gvisor_s *g)
{
	/* FTW_PHYS: never follow a link (rootfs/bin -> usr/bin is one);
	 * FTW_MOUNT: never cross into a mounted filesystem (a layered root's
	 * overlay, in our own mount namespace, goes first). */
	if (g->layered) {
		cleanup_free char *root = xasprintf ("%s/rootfs", g->dir);
		umount2 (root, MNT_DETACH);
	}
	nftw (g->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void
ab_gvisor_remove_link (const struct ab_gvisor_s *g, const struct ab_spec_s *spec)
{
	cleanup_free char *target = link_target (g);

	ab_service_link_remove (spec->service_socket, target);
}

void
ab_gvisor_log_tail (const struct ab_gvisor_s *g, char *buf, size_t size)
{
	cleanup_free char *path = xasprintf ("%s/%s", g->dir, AB_GVISOR_LOG);
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	off_t end;
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0 || size < 2 || (end = lseek (fd, 0, SEEK_END)) < 0)
		return;
	n = pread (fd, buf, size - 1, end > (off_t)(size - 1) ? end - (off_t)(size - 1) : 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == '\n' || (unsigned char)*c < 0x20)
			*c = ' ';
}
