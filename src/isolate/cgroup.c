/* cgroups: layout detection, the directory handling shared by v1 and v2, and
 * the public functions (the version-specific files are written by the
 * drivers in cgroup-v1.c and cgroup-v2.c).
 *
 * Speed: `agentbox run -- true` creates, enters and removes a group on its
 * start-up path, so /proc/self/mountinfo and /proc/self/cgroup are parsed
 * once per process, each group directory is opened once and its files are
 * reached with openat, and only the files a requested limit needs are
 * written.  Nothing sleeps unless the kernel says a group is still busy.
 *
 * Concurrency with sweepers: every live group directory carries an
 * exclusive flock(2) on its fd from creation to removal.  A sweeper (another
 * agentbox process) removes an agentbox-* group only after taking that lock,
 * so an empty group whose sandbox has not entered yet, or has already exited
 * but is still being read for statistics, is never removed under its owner.
 * A group that still holds processes cannot be removed at all: rmdir(2)
 * fails with EBUSY (kernel/cgroup/cgroup.c, cgroup_destroy_locked). */
#include "isolate/cgroup-internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"

/* ------------------------------------------------------------------ */
/* Pure parsing                                                         */

static const char *const ctrl_names[AB_CG_N_CTRL] = {
	[AB_CG_MEMORY] = "memory",   [AB_CG_PIDS] = "pids",       [AB_CG_CPU] = "cpu",
	[AB_CG_CPUACCT] = "cpuacct", [AB_CG_FREEZER] = "freezer",
};

const char *
ab_cg_ctrl_name (int ctrl)
{
	return ctrl >= 0 && ctrl < AB_CG_N_CTRL ? ctrl_names[ctrl] : "?";
}

unsigned
ab_cg_ctrl_mask (const char *list, char sep)
{
	const char seps[] = { sep, '\n', '\0' };
	unsigned mask = 0;
	const char *p = list;

	while (*p) {
		size_t len = strcspn (p, seps);
		for (int c = 0; c < AB_CG_N_CTRL; c++)
			if (strlen (ctrl_names[c]) == len && memcmp (p, ctrl_names[c], len) == 0)
				mask |= AB_CG_BIT (c);
		p += len;
		if (*p)
			p++;
	}
	return mask;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo (proc(5)). */
static void
unescape_octal (char *s)
{
	char *w = s;
	const char *r = s;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7'
		    && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* "36 35 98:0 /root /mnt opts [optional...] - fstype source superopts" */
int
ab_cg_parse_mountinfo_line (char *line, struct ab_cg_mount_s *m)
{
	char *save = NULL, *f[6], *tok, *fstype, *super;

	for (size_t i = 0; i < 6; i++) {
		f[i] = strtok_r (i == 0 ? line : NULL, " ", &save);
		if (f[i] == NULL)
			return -1;
	}
	do
		tok = strtok_r (NULL, " ", &save);
	while (tok != NULL && strcmp (tok, "-") != 0);
	if (tok == NULL)
		return -1;
	fstype = strtok_r (NULL, " ", &save);
	if (fstype == NULL || strtok_r (NULL, " ", &save) == NULL)
		return -1;
	super = strtok_r (NULL, " ", &save);
	if (super == NULL)
		return -1;
	if (strcmp (fstype, "cgroup2") == 0)
		m->v2 = true;
	else if (strcmp (fstype, "cgroup") == 0)
		m->v2 = false;
	else
		return 0;
	unescape_octal (f[3]);
	unescape_octal (f[4]);
	m->root = f[3];
	m->mountpoint = f[4];
	m->ctrls = m->v2 ? 0 : ab_cg_ctrl_mask (super, ',');
	return 1;
}

/* "4:memory:/process_api/x", "3:cpu,cpuacct:/", "0::/user.slice/x" */
int
ab_cg_parse_proc_cgroup_line (char *line, struct ab_cg_proc_entry_s *e)
{
	char *c1 = strchr (line, ':');
	char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;

	if (c2 == NULL || c2[1] != '/' || c1 == line)
		return -1;
	*c1 = '\0';
	*c2 = '\0';
	e->v2 = strcmp (line, "0") == 0 && c1[1] == '\0';
	e->ctrls = ab_cg_ctrl_mask (c1 + 1, ',');
	e->path = c2 + 1;
	return 0;
}

/* Where our cgroup `own` (relative to the hierarchy's root) is visible
 * under a mount of the subtree `root`, or NULL if it is not. */
static char *
own_dir (const struct ab_cg_mount_s *m, const char *own)
{
	size_t rl = strcmp (m->root, "/") == 0 ? 0 : strlen (m->root);
	const char *rest;

	if (rl > 0 && (strncmp (own, m->root, rl) != 0 || (own[rl] != '\0' && own[rl] != '/')))
		return NULL;
	rest = own + rl;
	if (strcmp (rest, "/") == 0)
		rest = "";
	return xasprintf ("%s%s", m->mountpoint, rest);
}

#define MAX_PROC_ENTRIES 32

static const struct ab_cg_proc_entry_s *
find_entry (const struct ab_cg_proc_entry_s *ents, size_t n, const struct ab_cg_mount_s *m)
{
	for (size_t i = 0; i < n; i++)
		if (m->v2 ? ents[i].v2 : (!ents[i].v2 && (ents[i].ctrls & m->ctrls) != 0))
			return &ents[i];
	return NULL;
}

/* Add the hierarchy of mount m if it brings something new. */
static void
layout_add (struct ab_cg_layout_s *l, const struct ab_cg_mount_s *m,
            const struct ab_cg_proc_entry_s *e)
{
	unsigned fresh = 0;
	struct ab_cg_hier_s *h;
	char *dir;

	if (m->v2 ? l->v2 >= 0 : m->ctrls == 0)
		return;
	for (int c = 0; c < AB_CG_N_CTRL; c++)
		if ((m->ctrls & AB_CG_BIT (c)) && l->v1[c] < 0)
			fresh |= AB_CG_BIT (c);
	if (!m->v2 && fresh == 0)
		return; /* a second mount of a hierarchy we already have */
	if (l->n_hier >= AB_CG_MAX_HIER || (dir = own_dir (m, e->path)) == NULL)
		return;
	h = &l->hier[l->n_hier];
	h->v2 = m->v2;
	h->ctrls = fresh;
	h->own = xstrdup (e->path);
	h->dir = dir;
	if (m->v2)
		l->v2 = (int)l->n_hier;
	for (int c = 0; c < AB_CG_N_CTRL; c++)
		if (fresh & AB_CG_BIT (c))
			l->v1[c] = (int)l->n_hier;
	l->n_hier++;
}

int
ab_cg_layout_parse (const char *mountinfo, const char *proc_cgroup, struct ab_cg_layout_s *l,
                    ab_error_t *err)
{
	struct ab_cg_proc_entry_s ents[MAX_PROC_ENTRIES];
	cleanup_free char *pc = xstrdup (proc_cgroup);
	cleanup_free char *mi = xstrdup (mountinfo);
	char *save = NULL, *line;
	size_t n = 0;
	bool any_v1 = false;

	memset (l, 0, sizeof *l);
	l->v2 = -1;
	for (int c = 0; c < AB_CG_N_CTRL; c++)
		l->v1[c] = -1;
	for (line = strtok_r (pc, "\n", &save); line && n < MAX_PROC_ENTRIES;
	     line = strtok_r (NULL, "\n", &save))
		if (ab_cg_parse_proc_cgroup_line (line, &ents[n]) == 0)
			n++;
	for (line = strtok_r (mi, "\n", &save); line; line = strtok_r (NULL, "\n", &save)) {
		struct ab_cg_mount_s m;
		const struct ab_cg_proc_entry_s *e;

		if (ab_cg_parse_mountinfo_line (line, &m) != 1
		    || (e = find_entry (ents, n, &m)) == NULL)
			continue;
		layout_add (l, &m, e);
	}
	for (int c = 0; c < AB_CG_N_CTRL; c++)
		any_v1 |= l->v1[c] >= 0;
	if (any_v1)
		l->mode = l->v2 >= 0 ? AB_CGROUP_HYBRID : AB_CGROUP_V1;
	else
		l->mode = l->v2 >= 0 ? AB_CGROUP_V2 : AB_CGROUP_NONE;
	(void)err;
	return 0;
}

void
ab_cg_layout_free (struct ab_cg_layout_s *l)
{
	for (size_t i = 0; i < l->n_hier; i++) {
		free (l->hier[i].own);
		free (l->hier[i].dir);
	}
	memset (l, 0, sizeof *l);
}

int
ab_cg_keyed_u64 (const char *text, const char *key, uint64_t *value)
{
	size_t kl = strlen (key);

	for (const char *p = text; p && *p; p = strchr (p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp (p, key, kl) == 0 && p[kl] == ' ') {
			char *end;
			errno = 0;
			*value = strtoull (p + kl + 1, &end, 10);
			return errno == 0 && end != p + kl + 1 ? 0 : -1;
		}
	}
	return -1;
}

void
ab_cg_parse_oom_control (const char *text, struct ab_cg_oom_s *oom)
{
	uint64_t v = 0;

	memset (oom, 0, sizeof *oom);
	oom->has_oom_kill = ab_cg_keyed_u64 (text, "oom_kill", &oom->oom_kill) == 0;
	oom->under_oom = ab_cg_keyed_u64 (text, "under_oom", &v) == 0 && v != 0;
}

/* ------------------------------------------------------------------ */
/* Files                                                                */

/* Whole file into a NUL-terminated heap buffer; -1 with errno. */
static int
read_all_at (int dfd, const char *file, char **out)
{
	cleanup_close int fd = openat (dfd, file, O_RDONLY | O_CLOEXEC);
	size_t size = 4096, len = 0;
	cleanup_free char *buf = NULL;

	if (fd < 0)
		return -1;
	buf = xmalloc (size);
	for (;;) {
		ssize_t n = read (fd, buf + len, size - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
		if (size - len - 1 == 0)
			buf = xrealloc (buf, size *= 2);
	}
	buf[len] = '\0';
	*out = steal_pointer (&buf);
	return 0;
}

ssize_t
ab_cg_read (int dfd, const char *file, char *buf, size_t size)
{
	cleanup_close int fd = openat (dfd, file, O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		ssize_t n = read (fd, buf + len, size - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

int
ab_cg_write (const struct ab_cg_dir_s *d, const char *file, const char *value, bool enoent_ok,
             ab_error_t *err)
{
	cleanup_close int fd = openat (d->fd, file, O_WRONLY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && enoent_ok)
		return 1;
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s/%s", d->path, file);
	/* kernfs takes each write(2) as one value: ab_write_all only loops on
	 * EINTR here, values are far below a page. */
	if (ab_write_all (fd, value, strlen (value)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s to %s/%s", value, d->path,
		                 file);
	return 0;
}

int
ab_cg_write_u64 (const struct ab_cg_dir_s *d, const char *file, uint64_t value, ab_error_t *err)
{
	char buf[24];

	snprintf (buf, sizeof buf, "%" PRIu64, value);
	return ab_cg_write (d, file, buf, false, err);
}

bool
ab_cg_has_file (const struct ab_cg_dir_s *d, const char *file)
{
	return d != NULL && d->fd >= 0 && faccessat (d->fd, file, F_OK, 0) == 0;
}

/* ------------------------------------------------------------------ */
/* Time                                                                 */

bool
ab_cg_backoff (unsigned *step, uint64_t deadline_ns)
{
	uint64_t now = ab_mono_ns (), ns;
	struct timespec ts;

	if (now >= deadline_ns)
		return false;
	ns = 50000ull << (*step < 8 ? *step : 8); /* 50 us doubling, at most 10 ms */
	if (ns > 10000000ull)
		ns = 10000000ull;
	if (ns > deadline_ns - now)
		ns = deadline_ns - now;
	(*step)++;
	ts.tv_sec = (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	nanosleep (&ts, NULL);
	return true;
}

/* ------------------------------------------------------------------ */
/* Killing                                                              */

int
ab_cg_kill_listed (const struct ab_cg_dir_s *d, ab_error_t *err)
{
	cleanup_free char *text = NULL;
	pid_t self = getpid ();
	int n = 0;

	if (read_all_at (d->fd, "cgroup.procs", &text) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read %s/cgroup.procs", d->path);
	for (char *p = text, *end; *p; p = end) {
		long v = strtol (p, &end, 10);
		if (end == p)
			break;
		while (*end == '\n')
			end++;
		if (v <= 0 || v > INT_MAX)
			continue;
		n++;
		/* Never ourselves, whatever a caller entered into the group. */
		if ((pid_t)v != self && kill ((pid_t)v, SIGKILL) < 0 && errno != ESRCH)
			return ab_error (err, errno, AB_E_SYSTEM, "kill %ld in %s", v, d->path);
	}
	return n;
}

static bool
procs_empty (const struct ab_cg_dir_s *d)
{
	char buf[16];

	return ab_cg_read (d->fd, "cgroup.procs", buf, sizeof buf) == 0;
}

/* Wait (bounded) until no process is left; the SIGKILLs are in flight. */
static bool
wait_empty (const struct ab_cg_dir_s *d, uint64_t deadline_ns)
{
	unsigned step = 0;

	while (!procs_empty (d))
		if (!ab_cg_backoff (&step, deadline_ns))
			return false;
	return true;
}

static uint64_t
min_u64 (uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int
ab_cg_kill_loop (const struct ab_cg_dir_s *d, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ns () + AB_CG_KILL_TIMEOUT_NS;

	for (;;) {
		int n = ab_cg_kill_listed (d, err);
		if (n <= 0)
			return n;
		if (wait_empty (d, min_u64 (deadline, ab_mono_ns () + 100000000ull)))
			return 0;
		if (ab_mono_ns () >= deadline)
			return ab_error (err, EBUSY, AB_E_SYSTEM,
			                 "%s: %d processes survive SIGKILL", d->path, n);
	}
}

static void
wait_frozen (const struct ab_cg_dir_s *d, const struct ab_cg_freezer_s *fz, uint64_t deadline_ns)
{
	char buf[512];
	unsigned step = 0;

	do {
		if (ab_cg_read (d->fd, fz->state_file, buf, sizeof buf) < 0 || fz->frozen (buf))
			return;
	} while (ab_cg_backoff (&step, deadline_ns));
}

/* Freeze so that nothing forks between reading cgroup.procs and killing
 * (a plain read-and-kill loop can be outrun by a fork bomb), SIGKILL every
 * listed process, thaw so the signals are delivered, and repeat until the
 * group is empty, all bounded by AB_CG_KILL_TIMEOUT_NS. */
int
ab_cg_freeze_kill (const struct ab_cg_dir_s *d, const struct ab_cg_freezer_s *fz, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ns () + AB_CG_KILL_TIMEOUT_NS;
	ab_error_t ignored = AB_ERROR_INIT;

	for (;;) {
		int n, r;

		if (ab_cg_write (d, fz->file, fz->freeze, false, err) < 0)
			return ab_error_code (err);
		wait_frozen (d, fz, min_u64 (deadline, ab_mono_ns () + 100000000ull));
		n = ab_cg_kill_listed (d, err);
		r = ab_cg_write (d, fz->file, fz->thaw, false, n < 0 ? &ignored : err);
		if (n < 0 || r < 0)
			return ab_error_code (err);
		if (n == 0 || wait_empty (d, min_u64 (deadline, ab_mono_ns () + 200000000ull)))
			return 0;
		if (ab_mono_ns () >= deadline)
			return ab_error (err, EBUSY, AB_E_SYSTEM, "%s: processes left after %d ms",
			                 d->path, (int)(AB_CG_KILL_TIMEOUT_NS / 1000000ull));
	}
}

/* ------------------------------------------------------------------ */
/* Layout cache                                                         */

static struct ab_cg_layout_s layout_cache;
static ab_error_t layout_err = AB_ERROR_INIT;
static int layout_rc;
static pthread_once_t layout_once = PTHREAD_ONCE_INIT;

static void
layout_load (void)
{
	cleanup_free char *mi = NULL;
	cleanup_free char *pc = NULL;

	if (read_all_at (AT_FDCWD, "/proc/self/mountinfo", &mi) < 0) {
		layout_rc = ab_error (&layout_err, errno, AB_E_SYSTEM, "read /proc/self/mountinfo");
		return;
	}
	if (read_all_at (AT_FDCWD, "/proc/self/cgroup", &pc) < 0) {
		layout_rc = ab_error (&layout_err, errno, AB_E_SYSTEM, "read /proc/self/cgroup");
		return;
	}
	layout_rc = ab_cg_layout_parse (mi, pc, &layout_cache, &layout_err);
}

const struct ab_cg_layout_s *
ab_cg_layout_get (ab_error_t *err)
{
	pthread_once (&layout_once, layout_load);
	if (layout_rc < 0) {
		*err = layout_err;
		return NULL;
	}
	return &layout_cache;
}

static const struct ab_cgroup_driver_s *
driver_for (const struct ab_cg_layout_s *l)
{
	switch (l->mode) {
	case AB_CGROUP_V1:
	case AB_CGROUP_HYBRID: return &ab_cgroup_driver_v1;
	case AB_CGROUP_V2: return &ab_cgroup_driver_v2;
	case AB_CGROUP_NONE: break;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Group directories                                                    */

/* rmdir, and when the kernel says EBUSY because of child groups (which a
 * sandbox should never be able to make), remove those first.  A group
 * with processes stays: rmdir of a populated cgroup fails with EBUSY. */
static int
rmdir_tree (const char *path, int depth)
{
	cleanup_dir DIR *d = NULL;
	struct dirent *de;
	bool any = false;

	if (rmdir (path) == 0 || errno == ENOENT)
		return 0;
	if (errno != EBUSY || depth == 0 || (d = opendir (path)) == NULL)
		return -errno;
	while ((de = readdir (d)) != NULL) {
		cleanup_free char *sub = NULL;
		if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
		    || strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
			continue;
		sub = xasprintf ("%s/%s", path, de->d_name);
		if (rmdir_tree (sub, depth - 1) < 0)
			return -EBUSY;
		any = true;
	}
	if (!any)
		return -EBUSY;
	return rmdir (path) == 0 || errno == ENOENT ? 0 : -errno;
}

/* Remove an agentbox group that nobody holds: 0 when gone, -EBUSY when it
 * is in use (locked by its owner, or processes in it), else -errno. */
static int
remove_if_unused (const char *path)
{
	cleanup_close int fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock (fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	return rmdir_tree (path, 8);
}

/* mkdir, open and lock one group directory.  -EAGAIN (err untouched) when
 * a sweeper removed it under us or a leftover of the same name was just
 * removed: the caller tries again. */
static int
make_locked_dir (const char *path, ab_error_t *err)
{
	cleanup_close int fd = -1;

	if (mkdir (path, 0755) < 0) {
		int r;
		if (errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", path);
		r = remove_if_unused (path);
		if (r == 0)
			return -EAGAIN;
		if (r == -EBUSY)
			return ab_error (err, EEXIST, AB_E_CONFLICT, "cgroup %s is in use", path);
		return ab_error (err, -r, AB_E_SYSTEM, "remove leftover cgroup %s", path);
	}
	fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EAGAIN
		                       : ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	if (flock (fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN
		                            : ab_error (err, errno, AB_E_SYSTEM, "flock %s", path);
	/* A sweeper can only remove the group while holding the lock: if it
	 * is still there now that we hold it, it stays. */
	if (faccessat (fd, "cgroup.procs", F_OK, 0) < 0)
		return errno == ENOENT ? -EAGAIN
		                       : ab_error (err, errno, AB_E_SYSTEM, "access %s", path);
	return steal_fd (&fd);
}

/* cg->at in hierarchy `hier`, its parents made.  A group already there
 * is only taken over when rmdir (not rmdir_tree: it is not ours) can
 * remove it, that is when it is empty. */
static char *
at_path (const ab_cgroup_t *cg, int hier, ab_error_t *err)
{
	const struct ab_cg_hier_s *h = &cg->layout->hier[hier];
	size_t dl = strlen (h->dir), ol = strcmp (h->own, "/") == 0 ? 0 : strlen (h->own);
	char *path;

	if (cg->at[0] != '/')
		path = xasprintf ("%s/%s", h->dir, cg->at);
	else if (dl >= ol && strcmp (h->dir + dl - ol, ol ? h->own : "") == 0)
		path = xasprintf ("%.*s%s", (int)(dl - ol), h->dir, cg->at);
	else {
		ab_error (err, 0, AB_E_SYSTEM, "cgroup path %s: no root for %s", cg->at, h->dir);
		return NULL;
	}
	for (char *p = strchr (path + strlen ("/sys/"), '/'); p; p = strchr (p + 1, '/')) {
		*p = '\0';
		if (mkdir (path, 0755) < 0 && errno != EEXIST) {
			ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", path);
			*p = '/';
			free (path);
			return NULL;
		}
		*p = '/';
	}
	if (rmdir (path) < 0 && errno != ENOENT) {
		ab_error (err, errno, AB_E_CONFLICT, "cgroup %s exists and is in use", path);
		free (path);
		return NULL;
	}
	return path;
}

int
ab_cg_add_dir (ab_cgroup_t *cg, int hier, ab_error_t *err)
{
	cleanup_free char *path = NULL;
	unsigned step = 0;
	uint64_t deadline = 0;
	struct ab_cg_dir_s *d;
	int fd;

	for (size_t i = 0; i < cg->n_dirs; i++)
		if (cg->dirs[i].hier == hier)
			return (int)i;
	if (cg->n_dirs >= AB_CG_MAX_HIER || hier < 0 || (size_t)hier >= cg->layout->n_hier)
		return ab_error (err, 0, AB_E_INTERNAL, "cgroup: bad hierarchy %d", hier);
	path = cg->at ? at_path (cg, hier, err)
	              : xasprintf ("%s/%s", cg->layout->hier[hier].dir, cg->name);
	if (!path)
		return -1;
	while ((fd = make_locked_dir (path, err)) == -EAGAIN) {
		if (deadline == 0)
			deadline = ab_mono_ns () + 100000000ull;
		if (!ab_cg_backoff (&step, deadline))
			return ab_error (err, EAGAIN, AB_E_CONFLICT,
			                 "create %s: keeps racing with a cleanup", path);
	}
	if (fd < 0)
		return fd;
	d = &cg->dirs[cg->n_dirs];
	d->hier = hier;
	d->fd = fd;
	d->path = steal_pointer (&path);
	return (int)cg->n_dirs++;
}

/* ------------------------------------------------------------------ */
/* Public functions                                                     */

static int
check_id (const char *id, ab_error_t *err)
{
	size_t n = id ? strlen (id) : 0;

	if (n == 0 || n > AB_CG_ID_MAX)
		return ab_error (err, 0, AB_E_INVALID, "cgroup id must have 1 to %d characters",
		                 AB_CG_ID_MAX);
	for (size_t i = 0; i < n; i++)
		if (!isalnum ((unsigned char)id[i]) && id[i] != '-' && id[i] != '_' && id[i] != '.')
			return ab_error (err, 0, AB_E_INVALID,
			                 "cgroup id %s: only [A-Za-z0-9._-] allowed", id);
	return 0;
}

/* Both versions express the CPU limit as a quota per 100 ms period. */
static int
check_limits (const struct ab_limits_s *lim, ab_error_t *err)
{
	if (lim->cpu_millis > UINT64_MAX / AB_CG_CPU_PERIOD_US)
		return ab_error (err, 0, AB_E_INVALID,
		                 "cpu limit of %" PRIu64 " millicpus is too large",
		                 lim->cpu_millis);
	if (lim->cpu_millis != 0 && lim->cpu_millis * AB_CG_CPU_PERIOD_US / 1000 < 1000)
		return ab_error (err, 0, AB_E_INVALID,
		                 "cpu limit of %" PRIu64
		                 " millicpus is below the kernel's 1 ms quota minimum",
		                 lim->cpu_millis);
	return 0;
}

static void
cg_free (ab_cgroup_t *cg)
{
	for (size_t i = 0; i < cg->n_dirs; i++) {
		if (cg->dirs[i].fd >= 0)
			close (cg->dirs[i].fd);
		free (cg->dirs[i].path);
	}
	free (cg->name);
	free (cg->at);
	free (cg);
}

static int
create_with (const struct ab_cgroup_driver_s *drv, const char *id, const char *at,
             const struct ab_limits_s *limits, unsigned flags, ab_cgroup_t **out, ab_error_t *err)
{
	static const struct ab_limits_s no_limits;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (err);
	ab_cgroup_t *cg;

	if (l == NULL)
		return ab_error_code (err);
	if (limits == NULL)
		limits = &no_limits;
	if (check_id (id, err) < 0 || check_limits (limits, err) < 0)
		return ab_error_code (err);
	if (drv == NULL)
		return ab_error (err, 0, AB_E_SYSTEM, "no cgroup hierarchy is mounted");
	cg = xcalloc (1, sizeof *cg);
	cg->drv = drv;
	cg->layout = l;
	cg->flags = flags;
	cg->name = xasprintf (AB_CG_PREFIX "%s", id);
	cg->at = at ? xstrdup (at) : NULL;
	cg->unified = -1;
	for (int c = 0; c < AB_CG_N_CTRL; c++)
		cg->ctrl[c] = -1;
	if (drv->create (cg, limits, err) < 0) {
		ab_error_t ignored = AB_ERROR_INIT;
		int rc = ab_error_code (err);
		ab_cgroup_destroy (cg, &ignored);
		return rc;
	}
	*out = cg;
	return 0;
}

int
ab_cgroup_create_with (const struct ab_cgroup_driver_s *drv, const char *id,
                       const struct ab_limits_s *limits, unsigned flags, ab_cgroup_t **out,
                       ab_error_t *err)
{
	return create_with (drv, id, NULL, limits, flags, out, err);
}

int
ab_cgroup_create (const char *id, const struct ab_limits_s *limits, ab_cgroup_t **out,
                  ab_error_t *err)
{
	const struct ab_cg_layout_s *l = ab_cg_layout_get (err);

	if (l == NULL)
		return ab_error_code (err);
	return ab_cgroup_create_with (driver_for (l), id, limits, 0, out, err);
}

int
ab_cgroup_create_at (const char *id, const char *path, const struct ab_limits_s *limits,
                     ab_cgroup_t **out, ab_error_t *err)
{
	const struct ab_cg_layout_s *l = ab_cg_layout_get (err);
	size_t n = path ? strlen (path) : 0;

	if (l == NULL)
		return ab_error_code (err);
	if (n == 0 || l->mode == AB_CGROUP_V2)
		return ab_cgroup_create_with (driver_for (l), id, limits, 0, out, err);
	if (strcmp (path, "/") == 0 || strstr (path, "/../") || strncmp (path, "../", 3) == 0
	    || (n >= 3 && strcmp (path + n - 3, "/..") == 0) || strcmp (path, "..") == 0
	    || path[n - 1] == '/' || strstr (path, "//"))
		return ab_error (err, 0, AB_E_INVALID, "cgroup path %s refused", path);
	return create_with (driver_for (l), id, path, limits, 0, out, err);
}

int
ab_cgroup_enter (ab_cgroup_t *cg, pid_t pid, ab_error_t *err)
{
	char buf[24];

	if (pid <= 0)
		return ab_error (err, 0, AB_E_INVALID, "cgroup: bad pid %d", (int)pid);
	snprintf (buf, sizeof buf, "%d", (int)pid);
	for (size_t i = 0; i < cg->n_dirs; i++)
		if (ab_cg_write (&cg->dirs[i], "cgroup.procs", buf, false, err) < 0)
			return ab_error_wrap (err, "move %d into cgroup %s", (int)pid, cg->name);
	return 0;
}

void
ab_cgroup_join_release (struct ab_cgroup_join_s *j)
{
	for (size_t i = 0; i < j->n_tasks; i++)
		close (j->tasks[i]);
	j->n_tasks = 0;
}

int
ab_cgroup_join_prepare (ab_cgroup_t *cg, struct ab_cgroup_join_s *j, ab_error_t *err)
{
	j->clone_into = -1;
	j->n_tasks = 0;
	for (size_t i = 0; i < cg->n_dirs; i++) {
		const struct ab_cg_dir_s *d = &cg->dirs[i];
		int fd;
		if (cg->layout->hier[d->hier].v2) {
			j->clone_into = d->fd;
			continue;
		}
		if (j->n_tasks == AB_CGROUP_MAX_TASKS_FDS
		    || (fd = openat (d->fd, "tasks", O_WRONLY | O_CLOEXEC)) < 0) {
			int e = errno;
			ab_cgroup_join_release (j);
			return ab_error (err, e, AB_E_SYSTEM, "open %s/tasks", d->path);
		}
		j->tasks[j->n_tasks++] = fd;
	}
	return 0;
}

int
ab_cgroup_join_self (int *tasks, size_t n_tasks, ab_error_t *err)
{
	int r = 0;

	for (size_t i = 0; i < n_tasks; i++) {
		if (r == 0 && write (tasks[i], "0", 1) != 1)
			r = ab_error (err, errno, AB_E_SYSTEM, "join cgroup");
		close (tasks[i]);
		tasks[i] = -1;
	}
	return r;
}

int
ab_cgroup_kill (ab_cgroup_t *cg, ab_error_t *err)
{
	return cg->drv->kill (cg, err);
}

int
ab_cgroup_stats (ab_cgroup_t *cg, struct ab_cgroup_stats_s *stats, ab_error_t *err)
{
	memset (stats, 0, sizeof *stats);
	return cg->drv->stats (cg, stats, err);
}

/* One pass of rmdir over the directories still there: 0 when all are
 * gone, -EBUSY if some are still populated, else the first other error
 * (in err; the pass still tries every directory). */
static int
remove_pass (ab_cgroup_t *cg, ab_error_t *err)
{
	int rc = 0;

	for (size_t i = 0; i < cg->n_dirs; i++) {
		struct ab_cg_dir_s *d = &cg->dirs[i];
		int r;

		if (d->fd < 0)
			continue;
		r = rmdir_tree (d->path, 8);
		if (r == 0) {
			close (d->fd);
			d->fd = -1;
		} else if (r != -EBUSY && (rc == 0 || rc == -EBUSY)) {
			rc = ab_error (err, -r, AB_E_SYSTEM, "rmdir %s", d->path);
		} else if (rc == 0) {
			rc = -EBUSY;
		}
	}
	return rc;
}

static int
remove_all (ab_cgroup_t *cg, ab_error_t *err)
{
	uint64_t deadline = 0;
	unsigned step = 0;
	int r;

	while ((r = remove_pass (cg, err)) == -EBUSY) {
		if (deadline == 0) {
			/* Processes are left: kill them, then wait for the kernel to
			 * let go of the group (bounded). */
			deadline = ab_mono_ns () + AB_CG_KILL_TIMEOUT_NS;
			if (cg->drv->kill (cg, err) < 0)
				return ab_error_wrap (err, "destroy cgroup %s", cg->name);
		}
		if (!ab_cg_backoff (&step, deadline))
			return ab_error (err, EBUSY, AB_E_SYSTEM,
			                 "cgroup %s still has processes after %d ms", cg->name,
			                 (int)(AB_CG_KILL_TIMEOUT_NS / 1000000ull));
	}
	return r;
}

int
ab_cgroup_destroy (ab_cgroup_t *cg, ab_error_t *err)
{
	int rc;

	if (cg == NULL)
		return 0;
	rc = remove_all (cg, err);
	cg_free (cg);
	return rc;
}

/* One group of a gone creator: thawed (a frozen v1 task never dies of
 * SIGKILL), its processes killed until the kernel lets rmdir through. */
static int
remove_path (const char *path, ab_error_t *err)
{
	const char *base = strrchr (path, '/');
	cleanup_close int fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct ab_cg_dir_s d = { .hier = -1, .fd = fd, .path = (char *)path };
	uint64_t deadline = ab_mono_ns () + AB_CG_KILL_TIMEOUT_NS;
	ab_error_t soft = AB_ERROR_INIT;
	unsigned step = 0;
	int r;

	/* Never a hierarchy's root (/sys/fs/cgroup/memory). */
	if (!base || strncmp (path, "/sys/fs/cgroup/", 15) != 0 || strstr (path, "/../")
	    || strcmp (base, "/..") == 0
	    || (!strchr (path + 15, '/')
	        && strncmp (base + 1, AB_CG_PREFIX, strlen (AB_CG_PREFIX)) != 0))
		return ab_error (err, 0, AB_E_INVALID, "%s is not a sandbox's cgroup", path);
	if (fd < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	ab_cg_write (&d, "freezer.state", "THAWED", true, &soft);
	ab_cg_write (&d, "cgroup.freeze", "0", true, &soft);
	while ((r = rmdir_tree (path, 8)) == -EBUSY) {
		if (ab_cg_kill_listed (&d, err) < 0)
			return -1;
		if (!ab_cg_backoff (&step, deadline))
			return ab_error (err, EBUSY, AB_E_SYSTEM,
			                 "cgroup %s still has processes after %d ms", path,
			                 (int)(AB_CG_KILL_TIMEOUT_NS / 1000000ull));
	}
	return r == 0 ? 0 : ab_error (err, -r, AB_E_SYSTEM, "rmdir %s", path);
}

int
ab_cgroup_remove_paths (const char *const *paths, size_t n, ab_error_t *err)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		ab_error_t e = AB_ERROR_INIT;
		if (remove_path (paths[i], &e) < 0 && rc == 0) {
			*err = e;
			rc = ab_error_code (err);
		}
	}
	return rc;
}

static int
sweep_dir (const char *dir, ab_error_t *err)
{
	cleanup_dir DIR *d = opendir (dir);
	struct dirent *de;
	int rc = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "open %s", dir);
	while ((de = readdir (d)) != NULL) {
		cleanup_free char *path = NULL;
		int r;

		if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
		    || strncmp (de->d_name, AB_CG_PREFIX, strlen (AB_CG_PREFIX)) != 0)
			continue;
		path = xasprintf ("%s/%s", dir, de->d_name);
		r = remove_if_unused (path);
		if (r < 0 && r != -EBUSY && rc == 0)
			rc = ab_error (err, -r, AB_E_SYSTEM, "remove stale cgroup %s", path);
	}
	return rc;
}

int
ab_cgroup_sweep_stale (ab_error_t *err)
{
	const struct ab_cg_layout_s *l = ab_cg_layout_get (err);
	int rc = 0;

	if (l == NULL)
		return ab_error_code (err);
	for (size_t i = 0; i < l->n_hier; i++) {
		ab_error_t e = AB_ERROR_INIT;
		if (sweep_dir (l->hier[i].dir, &e) < 0 && rc == 0) {
			*err = e;
			rc = ab_error_code (err);
		}
	}
	return rc;
}

static const char *const mode_names[] = {
	[AB_CGROUP_NONE] = "none",
	[AB_CGROUP_V1] = "v1",
	[AB_CGROUP_HYBRID] = "hybrid",
	[AB_CGROUP_V2] = "v2",
};

const char *
ab_cg_mode_name (ab_cgroup_mode mode)
{
	return (size_t)mode < sizeof mode_names / sizeof mode_names[0] ? mode_names[mode] : "?";
}

int
ab_cgroup_probe (struct ab_cgroup_info_s *info, ab_error_t *err)
{
	const struct ab_cg_layout_s *l = ab_cg_layout_get (err);
	const struct ab_cgroup_driver_s *drv;

	memset (info, 0, sizeof *info);
	if (l == NULL)
		return ab_error_code (err);
	info->mode = l->mode;
	drv = driver_for (l);
	if (drv == NULL) {
		snprintf (info->detail, sizeof info->detail,
		          "none: no cgroup v1 controller or cgroup2 mount in /proc/self/mountinfo");
		return 0;
	}
	return drv->probe (l, info, err);
}

void
ab_cg_probe_id (char *buf, size_t size)
{
	static unsigned counter;

	snprintf (buf, size, "probe-%d-%u", (int)getpid (),
	          __atomic_fetch_add (&counter, 1, __ATOMIC_RELAXED));
}
