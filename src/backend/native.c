/* The native backend.
 *
 *   caller ──fork──► monitor ──clone(new user, mount, pid, net, ipc, uts)──► init ─exec─► agent
 * (PID 1)
 *
 * The monitor is a small host process that owns the sandbox's lifetime:
 * it creates the cgroups, writes the id maps, makes the idmapped
 * workspace, lets init go, and when the sandbox ends (or the caller dies,
 * even by SIGKILL) kills what is left, removes the cgroups and reports.
 * The caller keeps only the agent connection (the door) and the monitor
 * socket.  The spawner is single-threaded (SECURITY.md 12). */
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

#include "backend/monitor.h"
#include "backend/native-internal.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/sys.h"
#include "isolate/cgroup.h"
#include "isolate/mountfd.h"
#include "isolate/userns.h"

#define NAMESPACES                                                                                 \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
#define BACKSTOP_SLACK_MS 5000
#define AB_MAX_IDMAPS     8

/* One idmap user namespace per distinct owner of the bound directories. */
struct idmap_cache_s {
	uid_t uid[AB_MAX_IDMAPS];
	gid_t gid[AB_MAX_IDMAPS];
	int fd[AB_MAX_IDMAPS];
	pid_t helper[AB_MAX_IDMAPS];
	size_t n;
};

struct monitor_s {
	const struct ab_spec_s *spec;
	const char *id;
	int mon_fd;
	pid_t init_pid;
	int init_pidfd;
	int sync_fd;
	ab_cgroup_t *cgroup;
	struct idmap_cache_s idmaps;
	struct ab_native_report_s report;
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
static ssize_t
read_init_error (struct monitor_s *m)
{
	ssize_t n = -1;

	for (int tries = 0; tries < 2 && m->sync_fd >= 0; tries++) {
		n = recv (m->sync_fd, m->report.error, sizeof m->report.error - 1, MSG_DONTWAIT);
		if (n >= 0 || errno != ECONNRESET)
			break;
	}
	m->report.error[n > 0 ? n : 0] = '\0';
	return n;
}

static void __attribute__ ((noreturn)) monitor_fail (struct monitor_s *m, const ab_error_t *err)
{
	/* When init failed first (our send then fails with EPIPE), its own
	 * message is already queued on the sync socket: it is the real reason. */
	if (read_init_error (m) <= 0)
		snprintf (m->report.error, sizeof m->report.error, "%s", err->msg);
	if (m->init_pid > 0) {
		kill (m->init_pid, SIGKILL);
		waitpid (m->init_pid, NULL, 0);
	}
	ab_cgroup_destroy (m->cgroup, &(ab_error_t)AB_ERROR_INIT);
	send (m->mon_fd, &m->report, sizeof m->report, MSG_NOSIGNAL);
	_exit (1);
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
	 * applied; say so once rather than refusing to run at all. */
	ab_log (AB_LOG_WARN, "%s; default memory and pids limits not applied", err->msg);
	ab_error_clear (err);
	m->cgroup = NULL;
	return 0;
}

/* Service mode: the host end of the agent's door is a listening socket at
 * spec->service_socket, created here (0600) and inherited by the agent as
 * fd 4; any number of sessions connect to it (docs/protocol-v2.md). */
static int
listen_service_socket (const char *path, ab_error_t *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	cleanup_close int fd = -1;

	if (strlen (path) >= sizeof sun.sun_path)
		return ab_error (err, 0, AB_E_INVALID, "socket path %s is too long", path);
	strcpy (sun.sun_path, path);
	/* A stale socket of a sandbox that is gone may be replaced; nothing else. */
	if (lstat (path, &st) == 0 && (!S_ISSOCK (st.st_mode) || unlink (path) < 0))
		return ab_error (err, EEXIST, AB_E_CONFLICT, "%s", path);
	fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind (fd, (struct sockaddr *)&sun, sizeof sun) < 0 || chmod (path, 0600) < 0
	    || listen (fd, 128) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "agent socket %s", path);
	return steal_fd (&fd);
}

static void
fail_errno (struct monitor_s *m, ab_error_t *err, const char *what)
{
	ab_error (err, errno, AB_E_SYSTEM, "%s", what);
	monitor_fail (m, err);
}

/* Clone init, write its maps, let it build its root while we create its
 * cgroups, join it to them and prepare the idmapped mounts. */
static void
start_init (struct monitor_s *m, struct ab_native_init_s *in, ab_error_t *err)
{
	struct ab_idmap_s map;
	int sync[2];
	char go = AB_NATIVE_GO_MAPS;

	ab_idmap_for_caller (&map, m->spec->uid, m->spec->gid);
	in->become_root = map.privileged;
	if (m->spec->service_socket
	    && (in->listen_fd = listen_service_socket (m->spec->service_socket, err)) < 0)
		monitor_fail (m, err);
	/* Made here with host rights: the image may sit below a directory the
	 * sandbox's root cannot traverse (mktemp -d makes them 0700). */
	if (map.privileged && m->spec->rootfs
	    && (in->image_mnt = ab_mountfd_clone (
	                AT_FDCWD, m->spec->rootfs,
	                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err))
	               < 0)
		monitor_fail (m, err);
	if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0)
		fail_errno (m, err, "socketpair");
	m->init_pid = ab_sys_clone_fork (NAMESPACES);
	if (m->init_pid < 0)
		fail_errno (m, err, "clone sandbox namespaces");
	if (m->init_pid == 0) {
		close (sync[0]);
		in->sync_fd = sync[1];
		ab_native_init (in);
	}
	close (sync[1]);
	m->sync_fd = sync[0];
	if (ab_userns_write_maps (m->init_pid, &map, err) < 0)
		monitor_fail (m, err);
	if (ab_write_all (m->sync_fd, &go, 1) < 0)
		fail_errno (m, err, "start sandbox");
	/* cgroup v1 create and attach cost milliseconds (memcg allocation, an
	 * RCU grace period in the attach): done while init builds its root. */
	if (create_cgroup (m, err) < 0
	    || (m->cgroup && ab_cgroup_enter (m->cgroup, m->init_pid, err) < 0))
		monitor_fail (m, err);
	go = AB_NATIVE_GO_READY;
	if (ab_write_all (m->sync_fd, &go, 1) < 0)
		fail_errno (m, err, "start sandbox");
	if (send_binds (m, &map, err) < 0)
		monitor_fail (m, err);
	m->init_pidfd = ab_sys_pidfd_open (m->init_pid, 0);
	/* Off the sandbox's critical path now. */
	reap_idmap_helpers (m);
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
}

static void
collect (struct monitor_s *m, int status, const struct rusage *ru)
{
	struct ab_cgroup_stats_s st = { 0 };
	ab_error_t err = AB_ERROR_INIT;

	read_init_error (m);
	m->report.cpu_ns = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ULL
	                   + (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ULL;
	m->report.peak_memory = (uint64_t)ru->ru_maxrss * 1024;
	if (m->cgroup && ab_cgroup_stats (m->cgroup, &st, &err) == 0) {
		m->report.oom_killed = st.oom_killed;
		if (st.peak_memory)
			m->report.peak_memory = st.peak_memory;
		if (st.cpu_ns)
			m->report.cpu_ns = st.cpu_ns;
	}
	(void)status;
	m->report.ok = m->report.error[0] == '\0';
}

static void
kill_sandbox (struct monitor_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	kill (m->init_pid, SIGKILL); /* PID 1 gone: the kernel kills its namespace */
	if (m->cgroup)
		ab_cgroup_kill (m->cgroup, &err);
}

static int
backstop_ms (const struct ab_spec_s *spec)
{
	uint64_t t = spec->limits.timeout_ms;
	if (!t)
		return -1;
	t += spec->limits.kill_grace_ms + BACKSTOP_SLACK_MS;
	return t > INT32_MAX ? INT32_MAX : (int)t;
}

/* Service mode: once init has executed the agent (its sync socket reads
 * EOF) or failed (it sends why), tell the caller and stop listening to it:
 * the sandbox now lives on its own until SIGTERM or SHUTDOWN. */
static void
report_service_start (struct monitor_s *m)
{
	struct ab_native_report_s r = { .ok = 1 };
	struct pollfd p = { .fd = m->sync_fd, .events = POLLIN };
	ssize_t n = 0;

	if (poll (&p, 1, 10000) == 1)
		n = recv (m->sync_fd, r.error, sizeof r.error - 1, 0);
	if (n > 0)
		r.ok = 0;
	send (m->mon_fd, &r, sizeof r, MSG_NOSIGNAL);
	if (!m->spec->service_tied) {
		close (m->mon_fd);
		m->mon_fd = -1;
	}
}

static void __attribute__ ((noreturn)) supervise (struct monitor_s *m)
{
	struct pollfd p[3] = { { .fd = m->init_pidfd, .events = POLLIN },
		               { .fd = m->mon_fd, .events = POLLIN },
		               { .fd = -1, .events = POLLIN } };
	bool service = m->spec->service_socket != NULL;

	if (service) {
		report_service_start (m);
		p[1].fd = ab_termination_signalfd (); /* SIGTERM: destroy the sandbox */
		p[2].fd = m->mon_fd;                  /* tied: the caller's end */
	}
	ab_error_t err = AB_ERROR_INIT;
	struct rusage ru = { 0 };
	int status = 0, timeout = backstop_ms (m->spec);

	for (;;) {
		int n = poll (p, 3, timeout);
		char c;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			kill_sandbox (m); /* the agent did not end it in time */
			timeout = -1;
			continue;
		}
		if (p[0].revents)
			break;
		if (service && (p[1].revents || p[2].revents)) {
			kill_sandbox (m); /* SIGTERM, or a tied caller is gone: destroy */
			p[1].fd = p[2].fd = -1;
		} else if (p[1].revents && recv (m->mon_fd, &c, 1, MSG_DONTWAIT) <= 0) {
			kill_sandbox (m); /* the caller is gone */
			p[1].fd = -1;
		} else if (p[1].revents) {
			kill_sandbox (m); /* the caller asked */
		}
	}
	while (wait4 (m->init_pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	collect (m, status, &ru);
	reap_idmap_helpers (m);
	if (m->cgroup && ab_cgroup_destroy (m->cgroup, &err) < 0 && m->report.error[0] == '\0')
		snprintf (m->report.error, sizeof m->report.error, "cleanup: %s", err.msg);
	if (service)
		ab_monitor_remove_socket (m->spec);
	if (m->mon_fd >= 0)
		send (m->mon_fd, &m->report, sizeof m->report, MSG_NOSIGNAL);
	_exit (0);
}

static void __attribute__ ((noreturn))
run_monitor (const struct ab_spec_s *spec, const char *id, int mon_fd, struct ab_native_init_s *in)
{
	struct monitor_s m = {
		.spec = spec,
		.id = id,
		.mon_fd = mon_fd,
		.init_pid = -1,
		.init_pidfd = -1,
		.sync_fd = -1,
	};
	const int keep[] = { mon_fd, in->door_fd, in->stdio[0], in->stdio[1], in->stdio[2] };
	ab_error_t err = AB_ERROR_INIT;

	/* Only what the sandbox needs: the caller's relay pipe ends held here
	 * would hide EOF from both sides. */
	if (ab_close_fds_except (keep, sizeof keep / sizeof *keep) < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "close inherited fds");
		monitor_fail (&m, &err);
	}
	setsid (); /* terminal signals meant for the caller must not reach us */
	prctl (PR_SET_NAME, "agentbox-mon", 0, 0, 0);
	start_init (&m, in, &err);
	release_inherited (in);
	if (m.init_pidfd < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "pidfd_open");
		monitor_fail (&m, &err);
	}
	supervise (&m);
}

/* Service mode: the monitor must outlive its caller (the daemon may be
 * restarted), so it is re-parented away from it: the forked child forks
 * the real monitor and exits at once.  Its pid reaches the caller first. */
static void
detach_monitor (int mon_fd)
{
	pid_t pid = fork ();

	if (pid < 0)
		_exit (1);
	if (pid > 0) {
		send (mon_fd, &pid, sizeof pid, MSG_NOSIGNAL);
		_exit (0);
	}
}

static int
await_service_start (const struct ab_spec_s *spec, struct ab_sandbox_s *sb, ab_error_t *err)
{
	struct ab_native_report_s r = { 0 };
	int mon = (int)(intptr_t)sb->priv;
	pid_t monitor = -1;
	ssize_t n;

	while (waitpid (sb->monitor_pid, NULL, 0) < 0 && errno == EINTR)
		;
	n = recv (mon, &monitor, sizeof monitor, 0);
	if (n == (ssize_t)sizeof monitor)
		n = recv (mon, &r, sizeof r, 0);
	/* Tied: the monitor watches this end, and reports on it at the end
	 * (native_destroy reads it, as in one-shot mode). */
	if (!spec->service_tied) {
		close (mon);
		mon = -1;
	}
	sb->priv = (void *)(intptr_t)mon;
	sb->monitor_pid = monitor;
	if (n != (ssize_t)sizeof r)
		return ab_error (err, 0, AB_E_SYSTEM,
		                 "sandbox monitor ended before the sandbox started");
	if (!r.ok)
		return ab_error (err, 0, AB_E_SYSTEM, "%s", r.error);
	return 0;
}

static int
native_create (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
               ab_error_t *err)
{
	struct ab_native_init_s in = {
		.spec = spec, .door_fd = -1, .listen_fd = -1, .image_mnt = -1
	};
	cleanup_free char *agent_path = ab_native_agent_path (err);
	int door[2] = { -1, -1 }, mon[2];
	pid_t pid;

	if (!agent_path)
		return -1;
	in.agent_path = agent_path;
	memset (sb, 0, sizeof *sb);
	sb->backend = &ab_backend_native;
	sb->monitor_fd = -1; /* its own monitor link is in sb->priv */
	ab_backend_make_id (sb->id);
	for (int i = 0; i < 3; i++)
		in.stdio[i] = stdio ? stdio[i] : -1;
	if ((!spec->service_socket && socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, door) < 0)
	    || socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, mon) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	in.door_fd = door[1];
	pid = fork ();
	if (pid < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fork monitor");
	if (pid == 0) {
		if (door[0] >= 0)
			close (door[0]);
		close (mon[0]);
		if (spec->service_socket)
			detach_monitor (mon[1]);
		run_monitor (spec, sb->id, mon[1], &in);
	}
	if (door[1] >= 0)
		close (door[1]);
	close (mon[1]);
	sb->agent_fd = door[0];
	sb->monitor_pid = pid;
	sb->priv = (void *)(intptr_t)mon[0];
	return spec->service_socket ? await_service_start (spec, sb, err) : 0;
}

/* Service mode: the monitor is not our child; SIGTERM asks it to kill the
 * sandbox, remove its cgroups and socket, and exit. */
static int
service_destroy (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return ab_monitor_terminate (sb->monitor_pid, 15000, err);
}

static int
native_kill (struct ab_sandbox_s *sb, ab_error_t *err)
{
	char k = 'k';

	if ((int)(intptr_t)sb->priv < 0)
		return service_destroy (sb, err);
	if (send ((int)(intptr_t)sb->priv, &k, 1, MSG_NOSIGNAL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "ask monitor to kill sandbox");
	return 0;
}

static int
native_destroy (struct ab_sandbox_s *sb, struct ab_sandbox_exit_s *ex, ab_error_t *err)
{
	struct ab_native_report_s r = { 0 };
	int mon = (int)(intptr_t)sb->priv;
	ssize_t n;

	if (mon < 0) {
		memset (ex, 0, sizeof *ex);
		return service_destroy (sb, err);
	}
	if (sb->agent_fd >= 0)
		close (sb->agent_fd);
	else if (service_destroy (sb, err) < 0) /* tied service mode */
		return -1;
	sb->agent_fd = -1;
	do
		n = recv (mon, &r, sizeof r, 0);
	while (n < 0 && errno == EINTR);
	close (mon);
	while (waitpid (sb->monitor_pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof r)
		return ab_error (err, 0, AB_E_INTERNAL, "sandbox monitor ended without a report");
	memset (ex, 0, sizeof *ex);
	ex->oom_killed = r.oom_killed;
	ex->peak_memory = r.peak_memory;
	ex->cpu_ms = r.cpu_ns / 1000000;
	if (r.error[0])
		return ab_error (err, 0, AB_E_SYSTEM, "%s", r.error);
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
	            | AB_BACKEND_NET_PROXY,
	.wall = "Linux namespaces (user, mount, pid, net, ipc, uts, cgroup), pivot_root, "
	        "seccomp, Landlock, no capabilities, cgroups",
	.probe = native_probe,
	.create = native_create,
	.kill = native_kill,
	.destroy = native_destroy,
};
