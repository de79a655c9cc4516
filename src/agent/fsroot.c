/* Confined paths for the file service.  Reads (read, stat, list) see what
 * the sandbox's own processes see: a path is resolved from the sandbox's
 * root, the agent's "/" opened once at CONFIG (the agent is PID 1 in the
 * sandbox's mount namespace, with the same root as every command), with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): `..` and absolute
 * symlinks stay inside that root as they do for a process, and /proc magic
 * links are refused.  Writes (write, mkdir, remove, rename) go only to the
 * file roots (the workspace and the read-write mounts, from CONFIG), each
 * resolved from the root's fd with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS:
 * `..` above the root, absolute symlinks and symlinks that climb out are
 * refused.  Where the kernel has no openat2 (gVisor) the same rules are
 * walked one component at a time (base/openat2-walk.c).  Either way the
 * kernel (or the walk) decides atomically: a symlink swapped in while a
 * call runs cannot redirect it (the runc CVE-2021-30465 class of
 * check-then-use races).  Operations then act on the resulting fd or on
 * (parent fd, last component) without resolving again.
 *
 * What the agent sees and its commands do not is kept out: procfs as a
 * whole (its "self" is the agent: its memory, environment and fds, which
 * a process of the sandbox cannot reach; see ab_fs_open), and the agent's
 * capabilities (ab_fs_as_user drops them, so a file only root with
 * CAP_DAC_OVERRIDE could read fails with EACCES as it does for a
 * command). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/service.h"
#include "base/log.h"
#include "base/openat2-walk.h"
#include "base/sys.h"
#include "base/xalloc.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

#define MAX_COMPONENTS  512
#define OPENAT2_RETRIES 8

static const struct {
	int errnum;
	ab_error_kind kind;
	const char *why; /* NULL = strerror */
} errno_kinds[] = {
	{ EXDEV, AB_E_DENIED, "leads outside its file root" },
	{ ELOOP, AB_E_DENIED, "symlink loop or link refused" },
	{ ENOENT, AB_E_NOT_FOUND, NULL },
	{ ENOTDIR, AB_E_INVALID, NULL },
	{ EACCES, AB_E_DENIED, NULL },
	{ EPERM, AB_E_DENIED, NULL },
	{ EROFS, AB_E_DENIED, NULL },
	{ EEXIST, AB_E_CONFLICT, NULL },
	{ ENOTEMPTY, AB_E_CONFLICT, NULL },
	{ EISDIR, AB_E_CONFLICT, NULL },
	{ EBUSY, AB_E_CONFLICT, NULL },
	{ ENOSPC, AB_E_LIMIT, NULL },
	{ EDQUOT, AB_E_LIMIT, NULL },
	{ EFBIG, AB_E_LIMIT, NULL },
	{ EMFILE, AB_E_LIMIT, NULL },
	{ ENFILE, AB_E_LIMIT, NULL },
	{ ENAMETOOLONG, AB_E_INVALID, NULL },
	{ EINVAL, AB_E_INVALID, NULL },
};

int
ab_fs_error (ab_error_t *err, int errnum, const char *what, const char *path)
{
	for (size_t i = 0; i < sizeof errno_kinds / sizeof *errno_kinds; i++) {
		if (errno_kinds[i].errnum != errnum)
			continue;
		if (errno_kinds[i].why)
			return ab_error (err, 0, errno_kinds[i].kind, "%s %s: %s", what, path,
			                 errno_kinds[i].why);
		return ab_error (err, errnum, errno_kinds[i].kind, "%s %s", what, path);
	}
	return ab_error (err, errnum, AB_E_SYSTEM, "%s %s", what, path);
}

/* Root with CAP_SETUID cannot fail to switch; if it ever did, the file
 * service would act with the wrong ids: end the sandbox instead. */
static void __attribute__ ((noreturn)) fsid_failure (void)
{
	ab_log (AB_LOG_ERROR, "cannot switch to the file user: %s", strerror (errno));
	_exit (125);
}

/* gVisor (runsc 2022-12) has no setfsuid/setfsgid: they fail with ENOSYS
 * and would leave file operations running as root. */
static bool
have_fsids (void)
{
	static int have = -1;

	if (have < 0)
		have = syscall (SYS_setfsuid, (uid_t)-1) != -1 || errno != ENOSYS;
	return have;
}

/* The commands of the sandbox hold no capabilities; the agent does.  Even
 * as uid 0, the file service must not override permissions a command is
 * subject to (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER): the
 * effective set is emptied while it acts and restored after (the
 * permitted set is untouched, so the way back is open). */
static struct __user_cap_data_struct saved_caps[2];

static void
caps_save (void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };

	if (syscall (SYS_capget, &hdr, saved_caps) < 0)
		fsid_failure ();
}

static void
caps_effective (bool none)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memcpy (data, saved_caps, sizeof data);
	if (none)
		data[0].effective = data[1].effective = 0;
	if (syscall (SYS_capset, &hdr, data) < 0)
		fsid_failure ();
}

static void
switch_ids (bool on)
{
	/* Group first while still privileged; back to root in reverse. */
	if (have_fsids ()) {
		if (on) {
			setfsgid (ab_config.file_gid);
			setfsuid (ab_config.file_uid);
		} else {
			setfsuid (0);
			setfsgid (0);
		}
		return;
	}
	/* Without fsids, the effective ids: the real and saved uid stay 0, so
	 * the way back is open; leaving euid 0 clears the effective
	 * capabilities and returning restores them from the permitted set
	 * (capabilities(7), "Effect of user ID changes on capabilities"): a
	 * superset of what a fsuid switch drops.  kill(2) and ptrace look at
	 * the real and saved ids too, so the agent is no more exposed. */
	if (on ? setegid (ab_config.file_gid) < 0 || seteuid (ab_config.file_uid) < 0
	       : seteuid (0) < 0 || setegid (0) < 0)
		fsid_failure ();
}

void
ab_fs_as_user (bool on)
{
	/* Saved before the ids change (leaving fsuid 0 clears some effective
	 * capabilities); restored after going back, which refills the
	 * effective set from the permitted one. */
	if (on)
		caps_save ();
	switch_ids (on);
	caps_effective (on);
}

/* Split into components, dropping empty ones and "."; NULL with an error
 * on "..".  comps points into buf. */
static int
split (char *buf, char **comps, size_t *n, const char *shown, ab_error_t *err)
{
	char *save = NULL;

	*n = 0;
	for (char *c = strtok_r (buf, "/", &save); c; c = strtok_r (NULL, "/", &save)) {
		if (strcmp (c, ".") == 0)
			continue;
		if (strcmp (c, "..") == 0)
			return ab_error (err, 0, AB_E_DENIED,
			                 "%s: `..` is not allowed in file paths", shown);
		if (*n >= MAX_COMPONENTS)
			return ab_error (err, 0, AB_E_LIMIT, "%s: too many path components", shown);
		comps[(*n)++] = c;
	}
	return 0;
}

/* Number of leading components of path that equal root's, or -1. */
static ssize_t
root_match (char **comps, size_t n, const char *root)
{
	char buf[AB_MSG_MAX_PATH + 1];
	char *rc[MAX_COMPONENTS];
	size_t rn;
	ab_error_t ignored = AB_ERROR_INIT;

	snprintf (buf, sizeof buf, "%s", root);
	if (split (buf, rc, &rn, root, &ignored) < 0 || rn > n)
		return -1;
	for (size_t i = 0; i < rn; i++)
		if (strcmp (rc[i], comps[i]) != 0)
			return -1;
	return (ssize_t)rn;
}

static char *
join (char **comps, size_t n)
{
	size_t len = 2;
	char *s, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen (comps[i]) + 1;
	p = s = xmalloc (len);
	if (n == 0)
		return strcpy (s, ".");
	for (size_t i = 0; i < n; i++)
		p += sprintf (p, "%s%s", i ? "/" : "", comps[i]);
	return s;
}

/* A write: the longest file root that contains the path. */
static int
pick_root (const char *path, char **comps, size_t n, size_t *skip, ab_error_t *err)
{
	ssize_t best_len = -1;
	int best = -1;

	if (ab_config.n_roots == 0)
		return ab_error (err, 0, AB_E_DENIED, "%s: the sandbox has no writable file roots",
		                 path);
	if (path[0] != '/') {
		*skip = 0;
		return 0; /* relative: the first root (the workspace) */
	}
	for (size_t i = 0; i < ab_config.n_roots; i++) {
		ssize_t k = root_match (comps, n, ab_config.roots[i]);
		if (k > best_len) {
			best_len = k;
			best = (int)i;
		}
	}
	if (best < 0)
		return ab_error (err, 0, AB_E_DENIED,
		                 "%s is outside the sandbox's writable file roots", path);
	*skip = (size_t)best_len;
	return best;
}

/* A read: the whole path beneath the sandbox's root; a relative one is
 * taken in the first file root (the workspace), so it gets that root's
 * components in front. */
static int
read_components (const char *path, char *root_buf, char **comps, size_t *n, ab_error_t *err)
{
	size_t rn = 0;

	if (path[0] != '/') {
		if (ab_config.n_roots == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s: a relative path needs a workspace", path);
		snprintf (root_buf, AB_MSG_MAX_PATH + 1, "%s", ab_config.roots[0]);
		if (split (root_buf, comps, &rn, ab_config.roots[0], err) < 0)
			return -1;
	}
	if (rn + *n > MAX_COMPONENTS)
		return ab_error (err, 0, AB_E_LIMIT, "%s: too many path components", path);
	memmove (comps + rn, comps + MAX_COMPONENTS, *n * sizeof *comps);
	*n += rn;
	return 0;
}

int
ab_fspath_parse (const char *path, ab_fs_access how, struct ab_fspath_s *out, ab_error_t *err)
{
	char buf[AB_MSG_MAX_PATH + 1], root_buf[AB_MSG_MAX_PATH + 1];
	char *comps[2 * MAX_COMPONENTS];
	size_t n, skip = 0;
	int root;

	memset (out, 0, sizeof *out);
	if (!ab_config.configured)
		return ab_error (err, 0, AB_E_CONFLICT, "the sandbox's files are not configured");
	if (path[0] == '\0')
		return ab_error (err, 0, AB_E_INVALID, "empty path");
	if (strlen (path) > AB_MSG_MAX_PATH)
		return ab_error (err, 0, AB_E_INVALID, "path too long");
	strcpy (buf, path);
	if (how == AB_FS_READ) {
		/* Split past the first MAX_COMPONENTS slots: the workspace's go in front. */
		if (split (buf, comps + MAX_COMPONENTS, &n, path, err) < 0
		    || read_components (path, root_buf, comps, &n, err) < 0)
			return -1;
		/* By name too, before any lookup, so that every /proc path gets the
		 * same answer whatever is mounted there. */
		if (n > 0 && strcmp (comps[0], "proc") == 0)
			return ab_error (err, 0, AB_E_DENIED,
			                 "%s is in /proc, which the file service does not serve",
			                 path);
		out->root_fd = ab_config.sandbox_root_fd;
		out->resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	} else {
		if (split (buf, comps, &n, path, err) < 0
		    || (root = pick_root (path, comps, n, &skip, err)) < 0)
			return -1;
		out->root_fd = ab_config.root_fds[root];
		out->resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	}
	out->rel = join (comps + skip, n - skip);
	if (n > skip) {
		out->base = xstrdup (comps[n - 1]);
		out->dir_rel = join (comps + skip, n - skip - 1);
	}
	return 0;
}

void
ab_fspath_free (struct ab_fspath_s *p)
{
	free (p->rel);
	free (p->dir_rel);
	free (p->base);
	memset (p, 0, sizeof *p);
}

/* procfs is the agent's own view: "self" and PID 1 are the agent (its
 * memory, environment and fds; a process reads its own /proc/self, not
 * the agent's), and what it holds open shows there.  Nothing of it is
 * served, whichever path or symlink led there. */
static int
refuse_procfs (int fd, const char *shown, ab_error_t *err)
{
	struct statfs sfs;

	/* Fail closed: gVisor's procfs answers ENOSYS for its files. */
	if (fstatfs (fd, &sfs) < 0)
		return ab_error (err, errno, AB_E_DENIED,
		                 "%s: its file system cannot be told, so it is not served", shown);
	if (sfs.f_type == PROC_SUPER_MAGIC)
		return ab_error (err, 0, AB_E_DENIED,
		                 "%s is in /proc, which the file service does not serve", shown);
	return 0;
}

int
ab_fs_open (const struct ab_fspath_s *p, const char *rel, int flags, const char *shown,
            ab_error_t *err)
{
	int fd = -1;

	/* EAGAIN: a concurrent rename raced the lookup; the kernel asks to retry. */
	for (int i = 0; i < OPENAT2_RETRIES; i++) {
		fd = ab_openat2_or_walk (p->root_fd, rel, (uint64_t)(flags | O_CLOEXEC), 0,
		                         p->resolve);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	if (fd < 0)
		return ab_fs_error (err, errno, "open", shown);
	if (refuse_procfs (fd, shown, err) < 0) {
		close (fd);
		return -1;
	}
	return fd;
}

int
ab_fs_open_parent (const struct ab_fspath_s *p, const char *shown, ab_error_t *err)
{
	if (!p->dir_rel || strcmp (p->dir_rel, ".") == 0) {
		int fd = fcntl (p->root_fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? ab_error (err, errno, AB_E_LIMIT, "dup") : fd;
	}
	return ab_fs_open (p, p->dir_rel, O_PATH | O_DIRECTORY, shown, err);
}
