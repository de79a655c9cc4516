/* The native backend: the hooks of the one monitor (monitor.h).
 *
 *   monitor ──clone(new user, mount, pid, net, ipc, uts)──► init ─exec─► agent (PID 1)
 *
 * In the monitor, start() creates the cgroups, writes the id maps, makes
 * the idmapped workspace and lets init go; kill() ends the sandbox's
 * processes; when the sandbox ends (or is told to, or the caller dies, even
 * by SIGKILL) stats() reaps init and reads what its cgroup saw, and stop()
 * removes the cgroups.  The caller keeps only the agent connection (the
 * door, one-shot) and the monitor link.  The spawner is single-threaded
 * (SECURITY.md 12). */
#include "backend/native.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/agent-exe.h"
#include "backend/monitor.h"
#include "backend/pause.h"
#include "backend/native-internal.h"
#include "backend/native-root.h"
#include "backend/service-socket.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/sys.h"
#include "isolate/cgroup.h"
#include "isolate/mountfd.h"
#include "isolate/uid-range.h"
#include "isolate/userns.h"

#define NAMESPACES                                                                                 \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
#define AB_MAX_IDMAPS 8

/* One idmap user namespace per distinct owner of the bound directories. */
struct idmap_cache_s {
	uid_t uid[AB_MAX_IDMAPS];
	gid_t gid[AB_MAX_IDMAPS];
	int fd[AB_MAX_IDMAPS];
	pid_t helper[AB_MAX_IDMAPS];
	size_t n;
};

/* The monitor's state (ctx of the hooks): filled by create, copied into
 * the monitor by fork. */
struct monitor_s {
	const struct ab_spec_s *spec;
	const char *id;
	struct ab_native_init_s in;
	pid_t init_pid;
	int init_pidfd;
	int sync_fd;
	bool reaped;
	struct rusage ru;
	ab_cgroup_t *cgroup;
	bool rlimits; /* no cgroup could be made: the limits are rlimits */
	struct idmap_cache_s idmaps;
	char *root_dir; /* the layered root's upper and work (native-root.h), or NULL */
	int uid_range;  /* privileged: the lock of this sandbox's host ids (-1: none) */
};

static int
idmap_for_owner (struct monitor_s *m, const struct stat *st, const struct ab_idmap_s *map,
                 ab_error_t *err)
{
	struct idmap_cache_s *c = &m->idmaps;

	for (size_t i = 0; i < c->n; i++)
		if (c->uid[i] == st->st_uid && c->gid[i] == st->st_gid)
			return c->fd[i];
	if (c->n == AB_MAX_IDMAPS)
		return ab_error (err, 0, AB_E_LIMIT,
		                 "more than %d different owners among the mounts", AB_MAX_IDMAPS);
	c->fd[c->n] =
	        ab_userns_idmap_fd (st->st_uid, st->st_gid, ab_idmap_host_uid (map, m->spec->uid),
	                            ab_idmap_host_gid (map, m->spec->gid), &c->helper[c->n], err);
	if (c->fd[c->n] < 0)
		return -1;
	c->uid[c->n] = st->st_uid;
	c->gid[c->n] = st->st_gid;
	return c->fd[c->n++];
}

/* A bind of `path` for the sandbox, made here with host privileges: files
 * the sandbox user writes appear on the host as owned by the directory's
 * owner, and the owner's files appear owned by the sandbox user (so a 0700
 * directory of the caller is usable inside).  Where the filesystem has no
 * idmapped-mount support the plain bind is used (files then belong to the
 * mapped host id). */
static int
idmapped_bind (struct monitor_s *m, const char *path, bool rw, const struct ab_idmap_s *map,
               ab_error_t *err)
{
	uint64_t flags = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (rw ? 0 : MOUNT_ATTR_RDONLY);
	struct ab_mount_attr_s attr = { .attr_set = flags | MOUNT_ATTR_IDMAP };
	struct ab_mount_attr_s plain = { .attr_set = flags };
	cleanup_close int mnt = -1;
	struct stat st;
	int userns;

	if (stat (path, &st) < 0)
		return ab_error (err, errno, AB_E_INVALID, "mount source %s", path);
	/* Recursive like the plain binds; an idmap applies to the whole tree. */
	mnt = ab_sys_open_tree (AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (mnt < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "bind %s", path);
	if ((userns = idmap_for_owner (m, &st, map, err)) < 0)
		return -1;
	attr.userns_fd = (uint64_t)userns;
	if (ab_sys_mount_setattr (mnt, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0
	    && ab_sys_mount_setattr (mnt, "", AT_EMPTY_PATH | AT_RECURSIVE, &plain) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount attributes of %s", path);
	return steal_fd (&mnt);
}

static int
send_mount (struct monitor_s *m, int fd, ab_error_t *err)
{
	char go = AB_NATIVE_GO_MOUNT;
	int r = ab_send_with_fds (m->sync_fd, &go, 1, &fd, 1);

	close (fd);
	return r < 0 ? ab_error (err, errno, AB_E_SYSTEM, "hand a mount to the sandbox") : 0;
}

/* Privileged: the workspace, then every bind, in spec order (init waits
 * for exactly these). */
static int
send_binds (struct monitor_s *m, const struct ab_idmap_s *map, ab_error_t *err)
{
	const struct ab_spec_s *spec = m->spec;
	int fd;

	if (!map->privileged)
		return 0;
	if (spec->workspace
	    && ((fd = idmapped_bind (m, spec->workspace, true, map, err)) < 0
	        || send_mount (m, fd, err) < 0))
		return -1;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct ab_mount_s *mt = &spec->mounts[i];
		if (mt->kind == AB_MOUNT_TMPFS)
			continue;
		fd = idmapped_bind (m, mt->source, mt->kind == AB_MOUNT_RW_BIND, map, err);
		if (fd < 0 || send_mount (m, fd, err) < 0)
			return -1;
	}
	return 0;
}

static void
reap_idmap_helpers (struct monitor_s *m)
{
	for (size_t i = 0; i < m->idmaps.n; i++) {
		if (m->idmaps.helper[i] > 0)
			waitpid (m->idmaps.helper[i], NULL, 0);
		if (m->idmaps.fd[i] >= 0)
			close (m->idmaps.fd[i]);
		m->idmaps.helper[i] = -1;
		m->idmaps.fd[i] = -1;
	}
}

/* Init's failure message, if it sent one.  When init died with our
 * messages unread, the first recv reports ECONNRESET (the kernel flags the
 * peer of a socket closed with a non-empty queue) and only the next one
 * returns what init wrote. */
static bool
read_init_error (struct monitor_s *m, ab_error_t *err)
{
	char msg[AB_ERROR_MSG_MAX];
	ssize_t n = -1;

	for (int tries = 0; tries < 2 && m->sync_fd >= 0; tries++) {
		n = recv (m->sync_fd, msg, sizeof msg - 1, MSG_DONTWAIT);
		if (n >= 0 || errno != ECONNRESET)
			break;
	}
	if (n <= 0)
		return false;
	msg[n] = '\0';
	ab_error_clear (err);
	ab_error (err, 0, AB_E_SYSTEM, "%s", msg);
	return true;
}

/* A failed start step.  When init failed first (our send then fails with
 * EPIPE), its own message is already queued on the sync socket: it is the
 * real reason. */
static int
start_failed (struct monitor_s *m, ab_error_t *err)
{
	read_init_error (m, err);
	return -1;
}

static int
create_cgroup (struct monitor_s *m, ab_error_t *err)
{
	const struct ab_limits_s *l = &m->spec->limits;

	/* No limit asked for: no cgroup.  The pid namespace alone ends every
	 * process; stats come from rusage.  (On cgroup v1 the attach costs an
	 * RCU grace period, several ms, which is most of a sandbox's start.) */
	if (!l->memory_bytes && !l->pids && !l->cpu_millis)
		return 0;
	if (ab_cgroup_create (m->id, &m->spec->limits, &m->cgroup, err) == 0)
		return 0;
	if (m->spec->limits.explicit_cgroup || geteuid () == 0)
		return ab_error_wrap (err, "cgroup limits");
	/* Unprivileged without a delegated cgroup: the default limits cannot be
	 * cgroups.  Rlimits still bound the damage (apply_rlimits); say so once
	 * rather than refusing to run at all. */
	ab_log (AB_LOG_WARN,
	        "%s; limits are rlimits instead: pids RLIMIT_NPROC (per uid in the sandbox), "
	        "memory RLIMIT_DATA (per process), cpu none",
	        err->msg);
	ab_error_clear (err);
	m->cgroup = NULL;
	m->rlimits = true;
	return 0;
}

/* The fallback without a cgroup, set on init before it starts the agent
 * (everything inherits them).  RLIMIT_NPROC is counted per uid of init's
 * user namespace (kernel ucounts), so it bounds this sandbox's processes,
 * not the caller's others; RLIMIT_DATA bounds each process's heap and
 * private writable mappings, not their sum: a documented stand-in for a
 * memory cgroup.  Only lowered, never raised above the hard limit. */
static int
apply_rlimits (struct monitor_s *m, ab_error_t *err)
{
	const struct ab_limits_s *l = &m->spec->limits;
	const struct {
		int resource;
		uint64_t value;
		const char *name;
	} want[] = {
		{ RLIMIT_NPROC, l->pids, "RLIMIT_NPROC" },
		{ RLIMIT_DATA, l->memory_bytes, "RLIMIT_DATA" },
	};

	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		struct rlimit old, rl;
		if (!want[i].value)
			continue;
		if (prlimit (m->init_pid, want[i].resource, NULL, &old) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "read %s", want[i].name);
		rl.rlim_cur = rl.rlim_max =
		        old.rlim_max < want[i].value ? old.rlim_max : (rlim_t)want[i].value;
		if (prlimit (m->init_pid, want[i].resource, &rl, NULL) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "set %s", want[i].name);
	}
	return 0;
}

static int
fail_errno (struct monitor_s *m, ab_error_t *err, const char *what)
{
	ab_error (err, errno, AB_E_SYSTEM, "%s", what);
	return start_failed (m, err);
}

/* GO_MAPS, with the layered root's overlay when there is one: it needs
 * init's user namespace (its maps idmap the layers), and init needs it
 * before it builds its root. */
static int
send_maps_go (struct monitor_s *m, const struct ab_idmap_s *map, ab_error_t *err)
{
	char go = AB_NATIVE_GO_MAPS;
	int fd, r;

	if (!m->spec->root.layers)
		return ab_write_all (m->sync_fd, &go, 1) < 0 ? fail_errno (m, err, "start sandbox")
		                                             : 0;
	fd = ab_native_root_mount (m->spec, m->init_pid, ab_idmap_host_uid (map, 0), &m->root_dir,
	                           err);
	if (fd < 0)
		return ab_error_wrap (err, "layered root");
	r = ab_send_with_fds (m->sync_fd, &go, 1, &fd, 1);
	close (fd);
	return r < 0 ? fail_errno (m, err, "start sandbox") : 0;
}

/* Init in its namespaces, born in the cgroup2 group when there is one.
 * A kernel without clone3 CLONE_INTO_CGROUP gets a plain clone and
 * *late_enter: the caller then moves init by pid, as before Linux 5.7. */
static pid_t
clone_init (const struct ab_cgroup_join_s *join, bool *late_enter)
{
	pid_t pid;

	*late_enter = false;
	if (join->clone_into < 0)
		return ab_sys_clone_fork (NAMESPACES);
	pid = ab_sys_clone_into_cgroup (NAMESPACES, join->clone_into);
	if (pid >= 0 || (errno != ENOSYS && errno != E2BIG && errno != EINVAL))
		return pid;
	*late_enter = true;
	return ab_sys_clone_fork (NAMESPACES);
}

/* Create init's cgroups, clone init into them, write its maps, let it
 * build its root while we prepare the idmapped mounts. */
static int
start_init (struct monitor_s *m, struct ab_native_init_s *in, ab_error_t *err)
{
	struct ab_cgroup_join_s join = { .clone_into = -1 };
	struct ab_idmap_s map;
	bool late_enter;
	int sync[2];
	char go;

	ab_idmap_for_caller (&map, m->spec->uid, m->spec->gid);
	in->become_root = map.privileged;
	/* A host range of its own (isolate/uid-range.c), held until we exit;
	 * the layers and the workspace are idmapped into it through map. */
	if (map.privileged && (m->uid_range = ab_uid_range_acquire (&map.base, err)) < 0)
		return -1;
	/* The layers are host root's: only a privileged monitor can idmap them
	 * to the sandbox's ids (and make an overlay over idmapped layers). */
	if (m->spec->root.layers && !map.privileged)
		return ab_error (err, 0, AB_E_DENIED,
		                 "a layered root (--image) on the native backend needs agentbox "
		                 "to run as root: its layers are root's and are idmapped to the "
		                 "sandbox's ids");
	/* The host end of the agent's door: inherited by the agent as fd 4. */
	if (m->spec->service_socket
	    && (in->listen_fd = ab_service_socket_listen (m->spec->service_socket, 0, err)) < 0)
		return -1;
	/* Made here with host rights: the image may sit below a directory the
	 * sandbox's root cannot traverse (mktemp -d makes them 0700). */
	if (map.privileged && m->spec->rootfs
	    && (in->image_mnt = ab_mountfd_clone (
	                AT_FDCWD, m->spec->rootfs,
	                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err))
	               < 0)
		return -1;
	/* The groups exist before init does: it is born in the cgroup2 one
	 * and joins the v1 ones itself (ab_cgroup_join_s), so no move pays
	 * an RCU grace period on the start path. */
	if (create_cgroup (m, err) < 0
	    || (m->cgroup && ab_cgroup_join_prepare (m->cgroup, &join, err) < 0))
		return -1;
	in->cg_tasks = join.tasks;
	in->n_cg_tasks = join.n_tasks;
	if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0) {
		ab_cgroup_join_release (&join);
		return fail_errno (m, err, "socketpair");
	}
	m->init_pid = clone_init (&join, &late_enter);
	if (m->init_pid == 0) {
		close (sync[0]);
		in->sync_fd = sync[1];
		ab_native_init (in);
	}
	ab_cgroup_join_release (&join);
	close (sync[1]);
	if (m->init_pid < 0) {
		close (sync[0]);
		return fail_errno (m, err, "clone sandbox namespaces");
	}
	m->sync_fd = sync[0];
	if (ab_userns_write_maps (m->init_pid, &map, err) < 0)
		return start_failed (m, err);
	if (send_maps_go (m, &map, err) < 0)
		return -1;
	if ((late_enter && ab_cgroup_enter (m->cgroup, m->init_pid, err) < 0)
	    || (m->rlimits && apply_rlimits (m, err) < 0))
		return start_failed (m, err);
	go = AB_NATIVE_GO_READY;
	if (ab_write_all (m->sync_fd, &go, 1) < 0)
		return fail_errno (m, err, "start sandbox");
	if (send_binds (m, &map, err) < 0)
		return start_failed (m, err);
	m->init_pidfd = ab_sys_pidfd_open (m->init_pid, 0);
	if (m->init_pidfd < 0)
		return fail_errno (m, err, "pidfd_open");
	/* Off the sandbox's critical path now. */
	reap_idmap_helpers (m);
	return 0;
}

/* Drop every host fd the sandbox does not need us to hold: a relay pipe
 * kept open here would hide EOF from the caller. */
static void
release_inherited (struct ab_native_init_s *in)
{
	int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
	for (int i = 0; i < 3; i++)
		if (in->stdio[i] > 2)
			close (in->stdio[i]);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup3 (null, fd, 0);
	if (null >= 0)
		close (null);
	if (in->door_fd >= 0)
		close (in->door_fd);
	if (in->listen_fd >= 0)
		close (in->listen_fd);
	if (in->image_mnt >= 0)
		close (in->image_mnt);
	in->door_fd = in->listen_fd = in->image_mnt = -1;
}

/* Service mode: the agent is there once init has executed it (its sync
 * socket reads EOF) or init failed (it sends why). */
static int
await_agent (struct monitor_s *m, ab_error_t *err)
{
	struct pollfd p = { .fd = m->sync_fd, .events = POLLIN };

	if (poll (&p, 1, 10000) == 1 && read_init_error (m, err))
		return -1;
	return 0;
}

static int
native_start (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct monitor_s *m = ctx;
	int r;

	m->spec = spec;
	m->id = id;
	r = start_init (m, &m->in, err);
	release_inherited (&m->in);
	if (r < 0 || (spec->service_socket && await_agent (m, err) < 0))
		return -1;
	return m->init_pidfd;
}

static void
native_kill (void *ctx)
{
	struct monitor_s *m = ctx;
	ab_error_t err = AB_ERROR_INIT;

	if (m->init_pid > 0)
		kill (m->init_pid, SIGKILL); /* PID 1 gone: the kernel kills its namespace */
	if (m->cgroup)
		ab_cgroup_kill (m->cgroup, &err);
}

static void
reap_init (struct monitor_s *m)
{
	if (m->init_pid <= 0 || m->reaped)
		return;
	while (wait4 (m->init_pid, NULL, 0, &m->ru) < 0 && errno == EINTR)
		;
	m->reaped = true;
}

/* The sandbox has ended: init's rusage, refined by its cgroup's counts. */
static void
native_stats (void *ctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex,
              ab_error_t *err)
{
	struct monitor_s *m = ctx;
	struct ab_cgroup_stats_s st = { 0 };
	ab_error_t ignored = AB_ERROR_INIT;
	const struct rusage *ru = &m->ru;
	uint64_t cpu_ns;

	(void)spec;
	reap_init (m);
	read_init_error (m, err);
	cpu_ns = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ULL
	         + (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ULL;
	ex->peak_memory = (uint64_t)ru->ru_maxrss * 1024;
	ab_limits_held_by (ex, &m->spec->limits, m->cgroup ? AB_LIMIT_CGROUP : AB_LIMIT_RLIMIT);
	if (m->rlimits)
		ex->cpu_by = m->spec->limits.cpu_millis ? AB_LIMIT_NONE : AB_LIMIT_OFF;
	if (m->cgroup && ab_cgroup_stats (m->cgroup, &st, &ignored) == 0) {
		ex->oom_killed = st.oom_killed;
		if (st.peak_memory)
			ex->peak_memory = st.peak_memory;
		if (st.cpu_ns)
			cpu_ns = st.cpu_ns;
	}
	ex->cpu_ms = cpu_ns / 1000000;
}

static int
native_stop (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct monitor_s *m = ctx;
	int r = 0;

	(void)spec, (void)id;
	if (m->init_pid > 0 && !m->reaped)
		native_kill (m);
	reap_init (m);
	reap_idmap_helpers (m);
	if (m->cgroup)
		r = ab_cgroup_destroy (m->cgroup, err);
	m->cgroup = NULL;
	/* Init is reaped: the overlay lived only in its mount namespace. */
	ab_native_root_remove (m->root_dir);
	free (m->root_dir);
	m->root_dir = NULL;
	return r;
}

static const struct ab_monitor_ops_s native_monitor = {
	.start = native_start,
	.stop = native_stop,
	.kill = native_kill,
	.stats = native_stats,
	.stop_timeout_ms = 15000,
};

static int
native_create (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
               ab_error_t *err)
{
	struct monitor_s m = {
		.in = { .spec = spec, .door_fd = -1, .listen_fd = -1, .image_mnt = -1 },
		.init_pid = -1,
		.init_pidfd = -1,
		.sync_fd = -1,
		.uid_range = -1,
	};
	cleanup_free char *agent_path = ab_agent_exe_path (err);
	int door[2] = { -1, -1 }, r;

	if (!agent_path)
		return -1;
	m.in.agent_path = agent_path;
	ab_sandbox_begin (sb, &ab_backend_native);
	for (int i = 0; i < 3; i++)
		m.in.stdio[i] = stdio ? stdio[i] : -1;
	if (!spec->service_socket && socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, door) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	m.in.door_fd = door[1];
	const int keep[] = { door[1], m.in.stdio[0], m.in.stdio[1], m.in.stdio[2] };
	r = ab_monitor_spawn (spec, &m, keep, sizeof keep / sizeof *keep, sb, err);
	if (door[1] >= 0)
		close (door[1]);
	if (r < 0) {
		if (door[0] >= 0)
			close (door[0]);
		return -1;
	}
	sb->agent_fd = door[0];
	return 0;
}

static void
native_probe (struct ab_probe_result_s *result)
{
	/* Functional: a real sandbox running `true` (see backend/probe.c). */
	ab_backend_functional_probe (&ab_backend_native, result);
}

const struct ab_backend_ops_s ab_backend_native = {
	.name = "native",
	.strength = 20,
	.features = AB_BACKEND_ONESHOT | AB_BACKEND_FD_PASSING | AB_BACKEND_LIMITS
	            | AB_BACKEND_NET_PROXY | AB_BACKEND_PAUSE,
	.wall = "Linux namespaces (user, mount, pid, net, ipc, uts, cgroup), pivot_root, "
	        "seccomp, Landlock, no capabilities, cgroups",
	.probe = native_probe,
	.create = native_create,
	.kill = ab_monitor_kill,
	.destroy = ab_monitor_destroy,
	.pause = ab_native_pause,
	.resume = ab_native_resume,
	.monitor = &native_monitor,
};
