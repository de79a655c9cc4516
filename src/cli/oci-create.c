/* agentbox-runc create, start and run: the caller's side.  create clones
 * init straight into its namespaces (init stays our child, so the caller,
 * a child subreaper, inherits it and waits for it), writes its id maps,
 * hands it the idmapped rootfs and binds, moves it into its cgroup, waits
 * until its root is built, runs the prestart and createRuntime hooks and
 * records the state.  start connects to the start socket. */
#include "cli/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/unix-socket.h"
#include "backend/agent-exe.h"
#include "base/xalloc.h"
#include "isolate/cgroup.h"
#include "isolate/userns.h"

struct create_s {
	const struct ab_oci_global_s *g;
	struct ab_oci_s c;
	const char *id, *pid_file, *console;
	bool run, keep; /* keep: run leaves the stopped container's state */
	int pty_peer;   /* run without --console-socket: where init sends the pty */
	int preserve_fds;
	bool detach;
	char dir[PATH_MAX];
	pid_t pid;
	ab_cgroup_t *cg;
};

int
ab_oci_console_connect (const char *path, ab_error_t *err)
{
	int fd = ab_unix_connect (path, err);
	return fd < 0 ? ab_error_wrap (err, "console socket") : fd;
}

int
ab_oci_console_make (int console_fd, const struct ab_oci_process_s *p, ab_error_t *err)
{
	cleanup_close int master = open ("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct winsize ws = { .ws_row = p->rows, .ws_col = p->cols };
	char name[64];
	int slave;

	if (master < 0 || unlockpt (master) < 0 || ptsname_r (master, name, sizeof name) != 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open a pty in the container");
	if ((slave = open (name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", name);
	if (ws.ws_row && ws.ws_col)
		ioctl (slave, TIOCSWINSZ, &ws);
	if (ab_send_with_fds (console_fd, "/dev/ptmx", 9, &master, 1) < 0) {
		close (slave);
		return ab_error (err, errno, AB_E_SYSTEM, "send the pty to the console socket");
	}
	close (console_fd);
	return slave;
}

static int
write_file_checked (pid_t pid, const char *name, const char *text, ab_error_t *err)
{
	char path[64];
	cleanup_close int fd = -1;
	struct statfs sf;

	snprintf (path, sizeof path, "/proc/%d/%s", (int)pid, name);
	fd = open (path, O_WRONLY | O_CLOEXEC);
	/* Real procfs only (CVE-2019-16884 class). */
	if (fd < 0 || fstatfs (fd, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	if (ab_write_all (fd, text, strlen (text)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s", path);
	return 0;
}

static int
write_maps (struct create_s *cr, ab_error_t *err)
{
	struct ab_idmap_s map;
	char buf[1024];
	size_t len = 0;

	if (cr->c.n_uids == 0 || cr->c.n_gids == 0) {
		/* No mappings in the bundle: a user namespace anyway, the
		 * container's root an unprivileged host id. */
		ab_idmap_for_caller (&map, 0, 0);
		return ab_userns_write_maps (cr->pid, &map, err);
	}
	if (geteuid () != 0)
		return ab_error (err, 0, AB_E_DENIED, "uidMappings need a root caller");
	for (size_t i = 0; i < cr->c.n_uids; i++)
		len += (size_t)snprintf (buf + len, sizeof buf - len, "%u %u %u\n",
		                         cr->c.uids[i].inside, cr->c.uids[i].host,
		                         cr->c.uids[i].size);
	if (write_file_checked (cr->pid, "uid_map", buf, err) < 0)
		return -1;
	len = 0;
	for (size_t i = 0; i < cr->c.n_gids; i++)
		len += (size_t)snprintf (buf + len, sizeof buf - len, "%u %u %u\n",
		                         cr->c.gids[i].inside, cr->c.gids[i].host,
		                         cr->c.gids[i].size);
	return write_file_checked (cr->pid, "gid_map", buf, err);
}

/* A detached copy of a host tree for the container, idmapped through the
 * container's user namespace where the filesystem allows, so files the
 * host's root owns are the container root's (and stay the host's). */
static int
host_tree (const char *path, bool recursive, uint64_t attr, bool rro, int userns, ab_error_t *err)
{
	struct ab_mount_attr_s idmap = { .attr_set = MOUNT_ATTR_IDMAP,
		                         .userns_fd = (uint64_t)userns };
	struct ab_mount_attr_s flags = { .attr_set = attr };
	cleanup_close int fd = ab_sys_open_tree (AT_FDCWD, path,
	                                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC
	                                                 | (recursive ? AT_RECURSIVE : 0));

	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "mount source %s", path);
	if (userns >= 0)
		ab_sys_mount_setattr (fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
		                      &idmap);
	if (attr
	    && ab_sys_mount_setattr (fd, "", AT_EMPTY_PATH | (rro ? AT_RECURSIVE : 0), &flags) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount attributes of %s", path);
	return steal_fd (&fd);
}

static int
send_fd (int sock, int fd, ab_error_t *err)
{
	int r = ab_send_with_fds (sock, "f", 1, &fd, 1);
	close (fd);
	return r < 0 ? ab_error (err, errno, AB_E_SYSTEM, "hand a mount to init") : 0;
}

static int
send_trees (struct create_s *cr, int sync, ab_error_t *err)
{
	char path[64];
	cleanup_close int userns = -1;
	int fd;

	snprintf (path, sizeof path, "/proc/%d/ns/user", (int)cr->pid);
	if (geteuid () == 0)
		userns = open (path, O_RDONLY | O_CLOEXEC);
	if ((fd = host_tree (cr->c.rootfs, true, 0, false, userns, err)) < 0
	    || send_fd (sync, fd, err) < 0)
		return -1;
	for (size_t i = 0; i < cr->c.n_mounts; i++) {
		const struct ab_oci_mount_s *m = &cr->c.mounts[i];
		if (!m->bind)
			continue;
		fd = host_tree (m->source, m->recursive, m->attr, m->recursive_ro, userns, err);
		if (fd < 0 || send_fd (sync, fd, err) < 0)
			return ab_error_wrap (err, "bind mount %s", m->destination);
	}
	return ab_oci_devices_send (cr->c.json, sync, err);
}

static int
join_namespaces (const struct ab_oci_s *c, ab_error_t *err)
{
	for (size_t i = 0; i < c->n_ns; i++) {
		cleanup_close int fd = -1;
		if (!c->ns[i].path)
			continue;
		fd = open (c->ns[i].path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns (fd, c->ns[i].type) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "join namespace %s",
			                 c->ns[i].path);
	}
	return 0;
}

static unsigned long
clone_flags (const struct ab_oci_s *c)
{
	/* Always our own user, mount and pid namespaces, whatever the bundle
	 * says: they are the walls. */
	unsigned long f = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;

	if (ab_oci_ns_new (c, CLONE_NEWNET))
		f |= CLONE_NEWNET;
	if (ab_oci_ns_new (c, CLONE_NEWIPC))
		f |= CLONE_NEWIPC;
	if (ab_oci_ns_new (c, CLONE_NEWUTS))
		f |= CLONE_NEWUTS;
	return f;
}

static int
wait_ready (int sync, ab_error_t *err)
{
	char msg[AB_ERROR_MSG_MAX];
	ssize_t n = recv (sync, msg, sizeof msg - 1, 0);

	if (n == 1 && msg[0] == '\0')
		return 0;
	if (n <= 0)
		return ab_error (err, errno, AB_E_SYSTEM, "container init died during setup");
	msg[n] = '\0';
	return ab_error (err, 0, AB_E_SYSTEM, "%s", msg);
}

static void
undo (struct create_s *cr)
{
	ab_error_t e = AB_ERROR_INIT;
	char path[PATH_MAX + 32];

	if (cr->pid > 0) {
		kill (cr->pid, SIGKILL);
		waitpid (cr->pid, NULL, 0);
	}
	ab_cgroup_destroy (cr->cg, &e);
	cr->cg = NULL;
	snprintf (path, sizeof path, "%s/state.json", cr->dir);
	unlink (path);
	snprintf (path, sizeof path, "%s/start.sock", cr->dir);
	unlink (path);
	snprintf (path, sizeof path, "%s/agent.sock", cr->dir);
	unlink (path);
	rmdir (cr->dir);
}

static int
make_cgroup (struct create_s *cr, ab_error_t *err)
{
	struct ab_limits_s lim = { .memory_bytes = cr->c.memory,
		                   .pids = cr->c.pids,
		                   .cpu_millis = cr->c.cpu_millis };
	ab_error_t soft = AB_ERROR_INIT;

	lim.explicit_cgroup = lim.memory_bytes || lim.pids || lim.cpu_millis;
	/* The engine's cgroupsPath; without limits a host where it cannot
	 * be made (no writable cgroupfs) still runs the container. */
	if (cr->c.cgroups_path) {
		if (ab_cgroup_create_at (cr->id, cr->c.cgroups_path, &lim, &cr->cg, err) == 0)
			return 0;
		if (lim.explicit_cgroup)
			return ab_error_wrap (err, "linux.cgroupsPath");
		fprintf (stderr, "agentbox-runc: warning: %s\n", err->msg);
		ab_error_clear (err);
	}
	if (ab_cgroup_create (cr->id, &lim, &cr->cg, lim.explicit_cgroup ? err : &soft) < 0)
		return lim.explicit_cgroup ? ab_error_wrap (err, "cgroup limits") : 0;
	return 0;
}

static int
set_rlimits (struct create_s *cr, ab_error_t *err)
{
	for (size_t i = 0; i < cr->c.proc.n_rlimits; i++) {
		int res = cr->c.proc.rlimits[i].resource;
		struct rlimit rl = { cr->c.proc.rlimits[i].soft, cr->c.proc.rlimits[i].hard }, cur;
		if (prlimit (cr->pid, res, &rl, NULL) == 0)
			continue;
		/* Without CAP_SYS_RESOURCE (a host that is itself a container)
		 * a hard limit cannot rise: clamp to what we have. */
		if (errno != EPERM || getrlimit (res, &cur) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "rlimit %d", res);
		rl.rlim_max = rl.rlim_max < cur.rlim_max ? rl.rlim_max : cur.rlim_max;
		rl.rlim_cur = rl.rlim_cur < rl.rlim_max ? rl.rlim_cur : rl.rlim_max;
		if (prlimit (cr->pid, res, &rl, NULL) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "rlimit %d", res);
	}
	return 0;
}

/* A joined network namespace belongs to the host's user namespace: its
 * net.* sysctls are written from here (we are in it), as runc does. */
static int
joined_net_sysctls (const struct ab_oci_s *c, ab_error_t *err)
{
	const json_t *sys = json_object_get (json_object_get (c->json, "linux"), "sysctl");
	const char *key;
	json_t *v;

	if (ab_oci_ns_new (c, CLONE_NEWNET))
		return 0;
	json_object_foreach ((json_t *)sys, key, v)
	{
		char path[512];
		cleanup_close int fd = -1;
		const char *val = json_string_value (v);
		if (strncmp (key, "net.", 4) != 0)
			continue;
		if (strstr (key, "..") || strchr (key, '/'))
			return ab_error (err, 0, AB_E_INVALID, "sysctl %s", key);
		snprintf (path, sizeof path, "/proc/sys/%s", key);
		for (char *p = path + 10; *p; p++)
			if (*p == '.')
				*p = '/';
		fd = open (path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || !val || ab_write_all (fd, val, strlen (val)) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "sysctl %s", key);
	}
	return 0;
}

/* The start socket, named through an fd of the state directory: engines
 * put --root deep enough (dockerd's exec root) to overflow sun_path. */
static int
start_socket_path (const char *dir, char *buf, size_t size, ab_error_t *err)
{
	int fd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", dir);
	snprintf (buf, size, "/proc/self/fd/%d/start.sock", fd);
	return fd;
}

/* agentbox-agent for run.agentbox.agent, captured here, before any
 * namespace is joined or made: init's own mounts (the staging tmpfs on
 * /tmp, the pivot) would hide the host's path from it, wherever the
 * binary lives.  Init inherits the detached, read-only mount. */
static int
agent_mount (ab_error_t *err)
{
	cleanup_free char *path = ab_agent_exe_path (err);

	return path ? ab_agent_exe_mount (path, err) : -1;
}

static int
spawn_init (struct create_s *cr, int *sync_out, ab_error_t *err)
{
	struct ab_oci_init_s in = { .c = &cr->c,
		                    .console_fd = -1,
		                    .preserve_fds = cr->preserve_fds,
		                    .agent_listen = -1,
		                    .agent_exe = -1 };
	cleanup_close int console = -1, listen = -1, dirfd = -1, agent = -1, agent_exe = -1;
	int sv[2];
	char path[PATH_MAX + 16];

	if (cr->c.proc.terminal && !cr->console) {
		int pair[2];
		/* runc run, attached: the pty comes to us and we relay it. */
		if (!cr->run || cr->detach)
			return ab_error (err, 0, AB_E_INVALID,
			                 "process.terminal needs --console-socket");
		if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
		cr->pty_peer = pair[0];
		console = pair[1];
	} else if (cr->c.proc.terminal
	           && (console = ab_oci_console_connect (cr->console, err)) < 0) {
		return -1;
	}
	if ((dirfd = start_socket_path (cr->dir, path, sizeof path, err)) < 0
	    || (listen = ab_unix_listen (path, 4, err)) < 0)
		return -1;
	if (ab_oci_wants_agent (cr->c.json)
	    && ((agent_exe = agent_mount (err)) < 0
	        || (snprintf (path, sizeof path, "/proc/self/fd/%d/agent.sock", dirfd),
	            (agent = ab_unix_listen (path, 16, err)) < 0)))
		return ab_error_wrap (err, "run.agentbox.agent");
	if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	if (make_cgroup (cr, err) < 0 || join_namespaces (&cr->c, err) < 0
	    || joined_net_sysctls (&cr->c, err) < 0)
		return -1;
	cr->pid = ab_sys_clone_fork (clone_flags (&cr->c));
	if (cr->pid < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "clone the container's init");
	if (cr->pid == 0) {
		close (sv[0]);
		in.sync_fd = sv[1];
		in.console_fd = console;
		in.fifo_fd = listen;
		in.agent_listen = agent;
		in.agent_exe = agent_exe;
		ab_oci_init_main (&in);
	}
	close (sv[1]);
	*sync_out = sv[0];
	return 0;
}

static int
set_up_init (struct create_s *cr, int sync, ab_error_t *err)
{
	if (write_maps (cr, err) < 0 || set_rlimits (cr, err) < 0)
		return -1;
	if (cr->cg && ab_cgroup_enter (cr->cg, cr->pid, err) < 0)
		return -1;
	if (write (sync, "m", 1) != 1)
		return ab_error (err, errno, AB_E_SYSTEM, "container init died");
	if (send_trees (cr, sync, err) < 0)
		return -1;
	return wait_ready (sync, err);
}

/* createContainer and startContainer hooks run in init, in the
 * container: it gets the state once (status set there per hook). */
static int
container_hooks (const struct ab_oci_s *c, int sync, const json_t *state, ab_error_t *err)
{
	const json_t *h = json_object_get (c->json, "hooks");
	cleanup_free char *text = NULL, *msg = NULL;

	if (json_array_size (json_object_get (h, "createContainer")) == 0
	    && json_array_size (json_object_get (h, "startContainer")) == 0)
		return 0;
	text = json_dumps (state, JSON_COMPACT);
	msg = xasprintf ("h%s", text);
	if (strlen (msg) > AB_OCI_STATE_MSG_MAX || send (sync, msg, strlen (msg), MSG_NOSIGNAL) < 0)
		return ab_error (err, errno ?: E2BIG, AB_E_SYSTEM,
		                 "hand the state to the container's init");
	return wait_ready (sync, err);
}

static int
record (struct create_s *cr, int sync, ab_error_t *err)
{
	char created[AB_UTC_MS_LEN];
	struct ab_oci_state_s st = { 0 };
	json_t *state;
	int r;

	ab_utc_ms_format ((int64_t)ab_unix_ms (), created);
	snprintf (st.id, sizeof st.id, "%s", cr->id);
	st.pid = cr->pid;
	st.start_time = ab_proc_start_time (cr->pid);
	st.bundle = cr->c.bundle;
	st.rootfs = cr->c.rootfs;
	st.created = created;
	st.annotations = json_object_get (cr->c.json, "annotations");
	st.config = cr->c.json;
	st.cgroups = ab_oci_cgroup_dirs (cr->pid, cr->id, cr->c.cgroups_path);
	r = ab_oci_state_save (cr->g, &st, err);
	json_decref (st.cgroups);
	if (r < 0)
		return -1;
	state = ab_oci_state_json (cr->g, &st, "creating");
	r = ab_oci_hooks (cr->c.json, "prestart", state, err);
	if (r == 0)
		r = ab_oci_hooks (cr->c.json, "createRuntime", state, err);
	if (r == 0)
		r = container_hooks (&cr->c, sync, state, err);
	json_decref (state);
	if (r < 0)
		return -1;
	return ab_oci_write_pid_file (cr->pid_file, cr->pid, err);
}

static int
parse_create (struct create_s *cr, int argc, char **argv, bool run, ab_error_t *err)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "detach", no_argument, NULL, 'd' },
		{ "no-pivot", no_argument, NULL, 'n' },
		{ "no-new-keyring", no_argument, NULL, 'n' },
		{ "keep", no_argument, NULL, 'k' },
		{ "no-subreaper", no_argument, NULL, 'n' },
		{ "pidfd-socket", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *bundle = ".";
	int o;

	optind = 1;
	while ((o = getopt_long (argc, argv, "+b:d", opts, NULL)) != -1)
		switch (o) {
		case 'b': bundle = optarg; break;
		case 'p': cr->pid_file = optarg; break;
		case 'c': cr->console = optarg; break;
		case 'f': cr->preserve_fds = atoi (optarg); break;
		case 'd': cr->detach = true; break;
		case 'k': cr->keep = true; break;
		case 'n': break;
		default: return ab_error (err, 0, AB_E_INVALID, "bad option");
		}
	if (optind != argc - 1)
		return ab_error (err, 0, AB_E_INVALID, "%s: exactly one container id, got %d",
		                 run ? "run" : "create", argc - optind);
	cr->id = argv[optind];
	if (cr->preserve_fds < 0 || cr->preserve_fds > 1024)
		return ab_error (err, 0, AB_E_INVALID, "--preserve-fds %d", cr->preserve_fds);
	if (ab_oci_state_dir (cr->g, cr->id, cr->dir, sizeof cr->dir, err) < 0)
		return -1;
	return ab_oci_config_load (bundle, &cr->c, err);
}

static int
make_dir (struct create_s *cr, ab_error_t *err)
{
	char root[PATH_MAX];

	/* --root and its parents, as runc's MkdirAll. */
	snprintf (root, sizeof root, "%s", cr->g->root);
	for (char *p = root + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir (root, 0711) < 0 && errno != EEXIST)
				return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", root);
			*p = '/';
		}
	if (mkdir (root, 0711) < 0 && errno != EEXIST)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", cr->g->root);
	if (mkdir (cr->dir, 0700) < 0)
		return ab_error (err, errno, errno == EEXIST ? AB_E_CONFLICT : AB_E_SYSTEM,
		                 errno == EEXIST ? "container with id exists: %s" : "mkdir %s",
		                 errno == EEXIST ? cr->id : cr->dir);
	return 0;
}

static int
start_conn (int fd, ab_error_t *err)
{
	char ack = 0;

	if (write (fd, "s", 1) != 1 || read (fd, &ack, 1) != 1 || ack != 'k')
		return ab_error (err, errno, AB_E_SYSTEM, "the container's init did not start it");
	return 0;
}

static void
mark_started (const struct ab_oci_global_s *g, const char *id)
{
	struct ab_oci_state_s st;
	ab_error_t e = AB_ERROR_INIT;
	json_t *state;

	if (ab_oci_state_load (g, id, &st, &e) < 0)
		return;
	st.started = true;
	ab_oci_state_save (g, &st, &e);
	if (ab_oci_agent_configure (g, &st, &e) < 0)
		fprintf (stderr, "agentbox-runc: warning: %s\n", e.msg);
	ab_error_clear (&e);
	state = ab_oci_state_json (g, &st, "running");
	if (ab_oci_hooks (st.config, "poststart", state, &e) < 0)
		fprintf (stderr, "agentbox-runc: warning: %s\n", e.msg);
	json_decref (state);
	ab_oci_state_free (&st);
}

/* Our stdio to and from the container's pty until its last user is gone
 * (the master reads EIO once every slave is closed). */
void
ab_oci_relay_pty (int peer)
{
	char buf[4096], tag;
	size_t n_fds = 0;
	int master = -1;

	if (ab_recv_with_fds (peer, &tag, 1, &master, 1, &n_fds) < 0 || n_fds != 1)
		return;
	struct pollfd p[2] = { { 0, POLLIN, 0 }, { master, POLLIN, 0 } };
	for (;;) {
		ssize_t n;
		if (poll (p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			n = read (0, buf, sizeof buf);
			if (n <= 0)
				p[0].fd = -1;
			else
				ab_write_all (master, buf, (size_t)n);
		}
		if (p[1].revents) {
			n = read (master, buf, sizeof buf);
			if (n <= 0)
				break;
			ab_write_all (1, buf, (size_t)n);
		}
	}
	close (master);
}

static pid_t forward_to;

static void
forward (int sig)
{
	if (forward_to > 0)
		kill (forward_to, sig);
}

/* run, attached: our signals go to init, its status is ours, and the
 * container is deleted when it ends (as runc run). */
static int
run_attached (struct create_s *cr, ab_error_t *err)
{
	struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };
	int ws = 0;
	char path[PATH_MAX + 32];

	forward_to = cr->pid;
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD)
			sigaction (s, &sa, NULL);
	if (cr->pty_peer >= 0)
		ab_oci_relay_pty (cr->pty_peer);
	while (waitpid (cr->pid, &ws, 0) < 0 && errno == EINTR)
		;
	(void)err;
	cr->pid = -1;
	if (!cr->keep)
		undo (cr);
	snprintf (path, sizeof path, "%s", cr->dir);
	return WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws);
}

int
ab_oci_cmd_create (const struct ab_oci_global_s *g, int argc, char **argv, bool run,
                   ab_error_t *err)
{
	struct create_s cr = { .g = g, .pid = -1, .run = run, .pty_peer = -1 };
	cleanup_close int sync = -1;
	int rc = 0;

	if (parse_create (&cr, argc, argv, run, err) < 0) {
		ab_oci_config_free (&cr.c);
		return -1;
	}
	if (make_dir (&cr, err) < 0) {
		ab_oci_config_free (&cr.c);
		return -1;
	}
	if (spawn_init (&cr, &sync, err) < 0 || set_up_init (&cr, sync, err) < 0
	    || record (&cr, sync, err) < 0 || (run && start_conn (sync, err) < 0)) {
		undo (&cr);
		ab_oci_config_free (&cr.c);
		return -1;
	}
	if (run)
		mark_started (g, cr.id);
	if (run && !cr.detach)
		rc = run_attached (&cr, err);
	/* init keeps its cgroup's lock fd: the group stays ours while it lives. */
	free (cr.cg);
	if (cr.pty_peer >= 0)
		close (cr.pty_peer);
	ab_oci_config_free (&cr.c);
	return rc;
}

int
ab_oci_cmd_start (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct ab_oci_state_s st;
	char dir[PATH_MAX], path[PATH_MAX + 16];
	cleanup_close int fd = -1, dirfd = -1;
	const char *status;

	if (argc != 2)
		return ab_error (err, 0, AB_E_INVALID, "start: exactly one container id");
	if (ab_oci_state_load (g, argv[1], &st, err) < 0)
		return -1;
	status = ab_oci_status (g, &st);
	if (strcmp (status, "created") != 0) {
		ab_oci_state_free (&st);
		return ab_error (err, 0, AB_E_CONFLICT, "cannot start a container that has %s",
		                 strcmp (status, "stopped") == 0 ? "stopped" : "already started");
	}
	ab_oci_state_free (&st);
	ab_oci_state_dir (g, argv[1], dir, sizeof dir, err);
	if ((dirfd = start_socket_path (dir, path, sizeof path, err)) < 0
	    || (fd = ab_unix_connect (path, err)) < 0 || start_conn (fd, err) < 0)
		return -1;
	unlink (path);
	mark_started (g, argv[1]);
	return 0;
}
