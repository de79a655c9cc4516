/* Signalling a process's whole subtree, found by walking /proc.
 *
 * The tree is read from every /proc/PID/stat's parent pid (gVisor has no
 * /proc/PID/task/TID/children).  Under an exec's keeper (spawn.c), a child
 * subreaper, every process the exec ever started stays below the keeper
 * whatever it does (setsid, a double fork, its parent's exit), so the
 * keeper's subtree is the exec.  Without a keeper the walk starts at the
 * command itself and reaches what still hangs below it.
 *
 * Bounds: at most MAX_PROCS entries are read per pass and at most
 * KILL_ROUNDS passes are made.  A pid could be reused between the read
 * and the kill; inside one sandbox, within microseconds, with pids handed
 * out in increasing order, that is not a practical race. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/subtree.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define MAX_PROCS   65536
#define KILL_ROUNDS 32
#define KILLED_MAX  4096

struct entry_s {
	pid_t pid, ppid;
	bool live; /* not a zombie */
	bool in;   /* below root */
};

static bool
read_entry (int proc, pid_t pid, struct entry_s *e)
{
	char path[32], buf[512], state, *f;
	cleanup_close int fd = -1;
	ssize_t n;
	int ppid;

	snprintf (path, sizeof path, "%d/stat", (int)pid);
	if ((fd = openat (proc, path, O_RDONLY | O_CLOEXEC)) < 0
	    || (n = read (fd, buf, sizeof buf - 1)) <= 0)
		return false;
	buf[n] = '\0';
	/* Fields start after the last ')': the name may hold anything. */
	if (!(f = strrchr (buf, ')')) || sscanf (f + 1, " %c %d", &state, &ppid) != 2)
		return false;
	e->pid = pid;
	e->ppid = (pid_t)ppid;
	e->live = state != 'Z' && state != 'X' && state != 'x';
	e->in = false;
	return true;
}

/* Every process our /proc lists, with its parent. */
static size_t
read_table (struct entry_s **out)
{
	int proc = ab_cmdns_agent_proc ();
	int dfd = proc >= 0 ? openat (proc, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	cleanup_dir DIR *d = dfd >= 0 ? fdopendir (dfd) : NULL;
	struct entry_s *t = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*out = NULL;
	if (!d) {
		if (dfd >= 0)
			close (dfd);
		return 0;
	}
	while ((de = readdir (d)) && n < MAX_PROCS) {
		char *end;
		long pid = strtol (de->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			t = xrealloc (t, cap * sizeof *t);
		}
		if (read_entry (proc, (pid_t)pid, &t[n]))
			n++;
	}
	*out = t;
	return n;
}

static int
by_pid (const void *a, const void *b)
{
	const struct entry_s *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Mark every entry below root: t sorted by pid, a pass per level of the
 * tree at most. */
static void
mark_below (struct entry_s *t, size_t n, pid_t root)
{
	bool grew = true;

	qsort (t, n, sizeof *t, by_pid);
	for (size_t level = 0; grew && level < n; level++) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			struct entry_s key = { .pid = t[i].ppid }, *parent;
			if (t[i].in)
				continue;
			parent = t[i].ppid == root ? NULL : bsearch (&key, t, n, sizeof *t, by_pid);
			if (t[i].ppid == root || (parent && parent->in))
				t[i].in = grew = true;
		}
	}
}

static bool
seen (const pid_t *killed, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (killed[i] == pid)
			return true;
	return false;
}

/* The pids an exec's target names right now (xmalloc'd, *n of them). */
static pid_t *
collect (const struct ab_exec_target_s *t, size_t *n)
{
	pid_t *out = NULL;
	size_t cap = 0;

	*n = 0;
	if (t->root > 1) {
		struct entry_s *tab;
		size_t m = read_table (&tab);
		mark_below (tab, m, t->root);
		for (size_t i = 0; i < m; i++) {
			if (!tab[i].in || !tab[i].live)
				continue;
			if (*n == cap)
				out = xrealloc (out, (cap = cap ? cap * 2 : 64) * sizeof *out);
			out[(*n)++] = tab[i].pid;
		}
		free (tab);
	}
	if (t->mark_fd >= 0)
		out = ab_exec_mark_members (t->mark_fd, out, n, &cap);
	return out;
}

/* One pass: signal what the target names and killed[] does not hold yet,
 * and add it there (when killed is not NULL).  Returns how many. */
static int
pass (const struct ab_exec_target_s *t, int sig, pid_t *killed, size_t *n_killed)
{
	size_t n;
	pid_t *pids = collect (t, &n);
	int found = 0;

	for (size_t i = 0; i < n; i++) {
		if (pids[i] <= 1 || (killed && seen (killed, *n_killed, pids[i])))
			continue;
		if (kill (pids[i], sig) == 0)
			found++;
		if (killed && *n_killed < KILLED_MAX)
			killed[(*n_killed)++] = pids[i];
	}
	free (pids);
	return found;
}

int
ab_exec_signal (const struct ab_exec_target_s *t, int sig)
{
	int found = pass (t, sig, NULL, NULL);

	if (t->with_root && t->root > 1 && kill (t->root, sig) == 0)
		found++;
	return found;
}

void
ab_exec_kill (const struct ab_exec_target_s *t)
{
	pid_t *killed;
	size_t n_killed = 0;

	/* The root first: as the command, it forks no more once killed. */
	if (t->with_root && t->root > 1)
		kill (t->root, SIGKILL);
	/* A process killed cannot fork any more (the kernel refuses a fork
	 * with a fatal signal pending), so a pass that finds nobody new has
	 * found them all. */
	killed = xcalloc (KILLED_MAX, sizeof *killed);
	for (int round = 0; round < KILL_ROUNDS; round++)
		if (pass (t, SIGKILL, killed, &n_killed) == 0)
			break;
	free (killed);
}
