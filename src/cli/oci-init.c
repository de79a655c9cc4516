/* agentbox-runc's init: the container's PID 1, in its new user, mount and
 * pid namespaces.  It builds the root from the bundle (the idmapped
 * rootfs and binds the caller hands over, the config's mounts in order,
 * /dev, masked and read-only paths), pivots into it, answers the caller,
 * waits for `start`, then forks the bundle's process, forwards signals to
 * it, reaps every orphan and exits with its status. */
#include "cli/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "proto/proto.h"
#include "isolate/mountfd.h"
#include "isolate/sandbox-fs.h"

#define STAGING AB_ROOT_STAGING "/agentbox-oci-root"

static const char *const dev_names[AB_DEV_NODES] = { "null",   "zero",    "full",
	                                             "random", "urandom", "tty" };

static const char *const dev_links[][2] = {
	{ "ptmx", "pts/ptmx" },          { "fd", "/proc/self/fd" },
	{ "stdin", "/proc/self/fd/0" },  { "stdout", "/proc/self/fd/1" },
	{ "stderr", "/proc/self/fd/2" },
};

static int
recv_fd (int sock, ab_error_t *err)
{
	char tag;
	int fd = -1;
	size_t n = 0;

	if (ab_recv_with_fds (sock, &tag, 1, &fd, 1, &n) != 1 || n != 1)
		return ab_error (err, errno, AB_E_SYSTEM, "receive a mount from the runtime");
	return fd;
}

static int
fresh_mount (const struct ab_oci_mount_s *m, ab_error_t *err)
{
	char data[4200];
	int fd;

	/* The source as given, so /proc/self/mountinfo shows it. */
	snprintf (data, sizeof data, "%s%s%s%s", m->source ? "source=" : "",
	          m->source ? m->source : "", m->source && m->data ? "," : "",
	          m->data ? m->data : "");

	if (strcmp (m->type, "sysfs") == 0) {
		/* A sysfs instance needs a network namespace of our own user
		 * namespace; in a joined one, the host's /sys read-only. */
		fd = ab_mountfd_new ("sysfs", data, m->attr, err);
		if (fd >= 0)
			return fd;
		ab_error_clear (err);
		return ab_mountfd_clone (AT_FDCWD, "/sys", m->attr | MOUNT_ATTR_RDONLY, err);
	}
	if (strcmp (m->type, "cgroup") == 0 || strcmp (m->type, "cgroup2") == 0) {
		fd = ab_mountfd_new ("cgroup2", NULL, m->attr, err);
		if (fd >= 0)
			return fd;
		/* No cgroup namespace of ours: an empty read-only directory, so
		 * nothing of the host's hierarchy shows. */
		ab_error_clear (err);
		return ab_mountfd_tmpfs ("source=cgroup,mode=0755", m->attr | MOUNT_ATTR_RDONLY,
		                         err);
	}
	return ab_mountfd_new (m->type, data, m->attr, err);
}

static int
apply_propagation (int mfd, const struct ab_oci_mount_s *m)
{
	struct ab_mount_attr_s attr = { .propagation = m->propagation & ~(unsigned long)MS_REC };

	if (!m->propagation || (m->propagation & MS_SHARED))
		return 0; /* a shared peer group with the host is never made */
	return ab_sys_mount_setattr (
	        mfd, "", AT_EMPTY_PATH | (m->propagation & MS_REC ? AT_RECURSIVE : 0), &attr);
}

/* One config mount, at its destination beneath root (no symlink followed:
 * a destination through a symlink is refused, CVE-2021-30465). */
static int
one_mount (int root, const struct ab_oci_mount_s *m, int bind_fd, int *ro_later, ab_error_t *err)
{
	cleanup_close int mfd = bind_fd, target = -1;
	struct ab_oci_mount_s rw = *m;
	const char *dst = m->destination + strspn (m->destination, "/");
	struct stat st;
	bool file = false;

	if (!*dst)
		return ab_error (err, 0, AB_E_INVALID, "mount onto / refused");
	/* A read-only filesystem is made read-only after the mounts below it
	 * (a read-only /dev still gets /dev/pts), as runc does. */
	rw.attr &= ~(uint64_t)MOUNT_ATTR_RDONLY;
	if (mfd < 0 && (mfd = fresh_mount (&rw, err)) < 0)
		return ab_error_wrap (err, "mount %s (%s)", m->destination, m->type);
	if (m->bind && fstat (mfd, &st) == 0)
		file = !S_ISDIR (st.st_mode);
	target = file ? ab_mkfile_beneath (root, dst, err) : ab_mkdir_beneath (root, dst, err);
	if (target < 0)
		return ab_error_wrap (err, "mount destination %s", m->destination);
	apply_propagation (mfd, m);
	if (ab_mount_attach (mfd, target, m->destination, err) < 0)
		return -1;
	if (!m->bind && (m->attr & MOUNT_ATTR_RDONLY))
		*ro_later = steal_fd (&mfd);
	return 0;
}

static int
make_read_only (int *fds, size_t n, ab_error_t *err)
{
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			if (r == 0
			    && ab_mount_setattr_fd (fds[i], MOUNT_ATTR_RDONLY, false, err) < 0)
				r = -1;
			close (fds[i]);
		}
	return r;
}

static int
dev_nodes (int root, int dev_fds[AB_DEV_NODES], bool have_dev, ab_error_t *err)
{
	cleanup_close int dev = -1;

	if (!have_dev)
		return ab_dev_setup (root, dev_fds, err);
	if ((dev = ab_mkdir_beneath (root, "dev", err)) < 0)
		return -1;
	for (size_t i = 0; i < AB_DEV_NODES; i++) {
		cleanup_close int t = ab_mkfile_beneath (dev, dev_names[i], err);
		if (t < 0 || ab_mount_attach (dev_fds[i], t, dev_names[i], err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof dev_links / sizeof *dev_links; i++)
		if (symlinkat (dev_links[i][1], dev, dev_links[i][0]) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "symlink /dev/%s",
			                 dev_links[i][0]);
	return 0;
}

static int
open_beneath (int root, const char *path)
{
	return ab_sys_openat2 (root, path + strspn (path, "/"), O_PATH | O_CLOEXEC | O_NOFOLLOW,
	                       RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

/* Masked paths: an empty read-only tmpfs over a directory, a bind of our
 * verified /dev/null over anything else.  Missing ones are fine. */
static int
mask_paths (int root, char *const *paths, int null_fd, ab_error_t *err)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		cleanup_close int t = open_beneath (root, paths[i]), mfd = -1;
		struct stat st;
		if (t < 0 && errno == ENOENT)
			continue;
		if (t < 0 || fstat (t, &st) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "masked path %s", paths[i]);
		if (S_ISDIR (st.st_mode))
			mfd = ab_mountfd_tmpfs ("mode=0755,size=0", MOUNT_ATTR_RDONLY, err);
		else if ((mfd = ab_sys_open_tree (
		                  null_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH))
		         < 0)
			ab_error (err, errno, AB_E_SYSTEM, "bind /dev/null");
		if (mfd < 0 || ab_mount_attach (mfd, t, paths[i], err) < 0)
			return -1;
	}
	return 0;
}

static int
readonly_paths (int root, char *const *paths, ab_error_t *err)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		cleanup_close int t = open_beneath (root, paths[i]), mfd = -1;
		if (t < 0 && errno == ENOENT)
			continue;
		if (t < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "read-only path %s", paths[i]);
		mfd = ab_mountfd_clone (
		        t, "", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
		if (mfd < 0 || ab_mount_attach (mfd, t, paths[i], err) < 0)
			return -1;
	}
	return 0;
}

/* linux.sysctl: only what the container's own namespaces scope (net.*,
 * kernel.msg*, kernel.sem, kernel.shm*, fs.mqueue.*); written through
 * the container's fresh /proc. */
static int
sysctls (int root, const json_t *sys, bool own_net, ab_error_t *err)
{
	const char *key;
	json_t *v;

	json_object_foreach ((json_t *)sys, key, v)
	{
		char path[512];
		cleanup_close int fd = -1;
		const char *val = json_string_value (v);
		if (!own_net && strncmp (key, "net.", 4) == 0)
			continue; /* written by create in the joined namespace */
		if (strncmp (key, "net.", 4) != 0 && strncmp (key, "kernel.msg", 10) != 0
		    && strcmp (key, "kernel.sem") != 0 && strncmp (key, "kernel.shm", 10) != 0
		    && strncmp (key, "fs.mqueue.", 10) != 0)
			return ab_error (err, 0, AB_E_DENIED,
			                 "sysctl %s is not namespaced: refused", key);
		snprintf (path, sizeof path, "proc/sys/%s", key);
		for (char *p = path + 9; *p; p++)
			if (*p == '.')
				*p = '/';
		fd = ab_sys_openat2 (root, path, O_WRONLY | O_CLOEXEC,
		                     RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
		if (fd >= 0 && val && ab_write_all (fd, val, strlen (val)) < 0 && errno == EINVAL
		    && strcmp (key, "net.ipv4.ping_group_range") == 0)
			/* Docker asks for every gid ("0 2147483647"); only the mapped
			 * ones exist in our user namespace. */
			val = ab_write_all (fd, "0 65535", 7) == 0 ? "" : NULL;
		else if (fd >= 0 && val)
			val = "";
		if (fd < 0 || !val)
			return ab_error (err, errno, AB_E_SYSTEM, "sysctl %s", key);
	}
	return 0;
}

static bool
has_mount (const struct ab_oci_s *c, const char *dst)
{
	for (size_t i = 0; i < c->n_mounts; i++)
		if (strcmp (c->mounts[i].destination, dst) == 0)
			return true;
	return false;
}

static int
build_root (struct ab_oci_init_s *in, int *root_out, ab_error_t *err)
{
	const struct ab_oci_s *c = in->c;
	cleanup_close int rootfs = recv_fd (in->sync_fd, err), root = -1;
	int dev_fds[AB_DEV_NODES];

	if (rootfs < 0)
		return -1;
	/* Nothing we mount from here on propagates back to the host. */
	if (mount (NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "make / rslave");
	if (ab_dev_capture (dev_fds, err) < 0)
		return -1;
	if (mount ("tmpfs", AB_ROOT_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0
	    || mkdir (STAGING, 0755) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "staging directory");
	if (ab_sys_move_mount (rootfs, "", AT_FDCWD, STAGING, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "attach the rootfs");
	/* A clone of a shared mount (dockerd's overlay) stays a peer of it:
	 * pivot_root refuses a shared new root, and nothing of ours may
	 * propagate back anyway. */
	if (mount (NULL, AB_ROOT_STAGING, NULL, MS_PRIVATE, NULL) < 0
	    || mount (NULL, STAGING, NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "make the rootfs private");
	if ((root = open (STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the rootfs");
	cleanup_free int *ro_later = xcalloc (c->n_mounts + 1, sizeof *ro_later);
	for (size_t i = 0; i < c->n_mounts; i++) {
		int fd = c->mounts[i].bind ? recv_fd (in->sync_fd, err) : -1;
		ro_later[i] = -1;
		if ((c->mounts[i].bind && fd < 0)
		    || one_mount (root, &c->mounts[i], fd, &ro_later[i], err) < 0)
			return -1;
	}
	if (dev_nodes (root, dev_fds, has_mount (c, "/dev"), err) < 0
	    || ab_oci_devices_attach (c->json, root, in->sync_fd, err) < 0
	    || sysctls (root, json_object_get (json_object_get (c->json, "linux"), "sysctl"),
	                ab_oci_ns_new (c, CLONE_NEWNET), err)
	               < 0
	    || mask_paths (root, c->masked, dev_fds[0], err) < 0
	    || readonly_paths (root, c->readonly, err) < 0)
		return -1;
	for (size_t i = 0; i < AB_DEV_NODES; i++)
		close (dev_fds[i]); /* init must not keep host device nodes open */
	if (make_read_only (ro_later, c->n_mounts, err) < 0)
		return -1;
	if (c->root_readonly && ab_mount_setattr_fd (root, MOUNT_ATTR_RDONLY, false, err) < 0)
		return -1;
	*root_out = steal_fd (&root);
	return 0;
}

/* pivot_root(".", ".") stacks the old root under the new one; detaching
 * it leaves only the container's tree (bubblewrap's and runc's way). */
static int
enter_root (int root, ab_error_t *err)
{
	if (fchdir (root) < 0 || ab_sys_pivot_root (".", ".") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pivot_root");
	if (umount2 (".", MNT_DETACH) < 0 || chdir ("/") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "detach the old root");
	return 0;
}

/* runc checks the executable at create, so the engine reports it there. */
static int
check_executable (const struct ab_oci_process_s *p, ab_error_t *err)
{
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	const char *arg0 = p->args[0];

	for (size_t i = 0; p->env && p->env[i]; i++)
		if (strncmp (p->env[i], "PATH=", 5) == 0)
			path = p->env[i] + 5;
	if (strchr (arg0, '/'))
		return access (arg0, X_OK) == 0
		               ? 0
		               : ab_error (err, errno, AB_E_NOT_FOUND, "exec: \"%s\": %s", arg0,
		                           strerror (errno));
	for (const char *s = path; *s;) {
		size_t n = strcspn (s, ":");
		char buf[4096];
		snprintf (buf, sizeof buf, "%.*s/%s", (int)n, s, arg0);
		if (access (buf, X_OK) == 0)
			return 0;
		s += n + (s[n] == ':');
	}
	return ab_error (err, ENOENT, AB_E_NOT_FOUND,
	                 "exec: \"%s\": executable file not found in $PATH", arg0);
}

static int
setup (struct ab_oci_init_s *in, int *tty, ab_error_t *err)
{
	cleanup_close int root = -1;
	char go;

	if (read (in->sync_fd, &go, 1) != 1 || go != 'm')
		return ab_error (err, errno, AB_E_SYSTEM, "the runtime went away");
	if (setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "become the container's root");
	if (build_root (in, &root, err) < 0)
		return -1;
	if (in->c->hostname && ab_oci_ns_new (in->c, CLONE_NEWUTS)
	    && sethostname (in->c->hostname, strlen (in->c->hostname)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sethostname");
	/* Compiled here so a bad profile fails create, not start. */
	if (ab_oci_seccomp_compile (
	            json_object_get (json_object_get (in->c->json, "linux"), "seccomp"),
	            &in->seccomp, err)
	    < 0)
		return -1;
	if (enter_root (root, err) < 0)
		return -1;
	if (in->console_fd >= 0) {
		int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
		if ((*tty = ab_oci_console_make (in->console_fd, &in->c->proc, err)) < 0)
			return -1;
		/* With a terminal the caller's stdio is not the container's:
		 * holding it would keep `run -d`'s caller waiting for EOF. */
		for (int fd = 0; fd < 3 && null >= 0; fd++)
			dup2 (null, fd);
		if (null >= 0)
			close (null);
	}
	return check_executable (&in->c->proc, err);
}

static void
noop_handler (int sig)
{
	(void)sig;
}

/* As PID 1 the kernel drops signals from outside for which init has no
 * handler, so every forwardable signal gets one; all stay blocked and are
 * taken with sigwaitinfo. */
static void
catch_all (sigset_t *all)
{
	struct sigaction sa = { .sa_handler = noop_handler };

	sigfillset (all);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction (s, &sa, NULL);
	sigprocmask (SIG_BLOCK, all, NULL);
}

static int
status_of (int ws)
{
	return WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws);
}

/* A child of init: the signals as a fresh process has them. */
static void
reset_signals (void)
{
	sigset_t none;

	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal (s, SIG_DFL);
	sigemptyset (&none);
	sigprocmask (SIG_SETMASK, &none, NULL);
}

/* Every signal was blocked (catch_all) before the process was forked, so
 * a SIGCHLD of a process that ends at once waits for us; the reaping
 * pass runs first anyway. */
static void __attribute__ ((noreturn)) serve (pid_t child, sigset_t *all)
{
	for (;;) {
		siginfo_t si;
		int ws, s;
		pid_t p;
		while ((p = waitpid (-1, &ws, WNOHANG)) > 0)
			if (p == child) {
				/* The container ends with its process. */
				kill (-1, SIGKILL);
				while (waitpid (-1, NULL, 0) > 0)
					;
				_exit (status_of (ws));
			}
		s = sigwaitinfo (all, &si);
		if (s > 0 && s != SIGCHLD)
			kill (child, s);
	}
}

/* createContainer hooks, when create hands over the state ("h<json>");
 * the answer is "" or the error. */
static void
create_hooks (struct ab_oci_init_s *in, const char *text)
{
	ab_error_t err = AB_ERROR_INIT;

	json_decref (in->state);
	in->state = json_loads (text, 0, NULL);
	if (!in->state) {
		ab_error (&err, 0, AB_E_INVALID, "init: a bad state from create");
	} else {
		json_object_set_new (in->state, "status", json_string ("creating"));
		ab_oci_hooks_in (in->c, "createContainer", in->state, &err);
	}
	send (in->sync_fd, err.msg, err.msg[0] ? strlen (err.msg) : 1, MSG_NOSIGNAL);
}

/* Wait for `start` (a connection on the start socket) or `run`'s own go
 * on the sync socket. */
static int
wait_start (struct ab_oci_init_s *in, ab_error_t *err)
{
	struct pollfd p[2] = { { in->sync_fd, POLLIN, 0 }, { in->fifo_fd, POLLIN, 0 } };
	cleanup_free char *msg = xmalloc (AB_OCI_STATE_MSG_MAX + 2);

	for (;;) {
		char b;
		ssize_t n;
		if (poll (p, 2, -1) < 0 && errno != EINTR)
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
		if (p[0].revents) {
			n = recv (in->sync_fd, msg, AB_OCI_STATE_MSG_MAX + 1, 0);
			if (n == 1 && msg[0] == 's')
				return in->sync_fd;
			if (n > 1 && msg[0] == 'h') {
				msg[n] = '\0';
				create_hooks (in, msg + 1);
				continue;
			}
			p[0].fd = -1; /* create returned: only `start` remains */
		}
		if (p[1].revents & POLLIN) {
			int conn = accept4 (in->fifo_fd, NULL, NULL, SOCK_CLOEXEC);
			if (conn >= 0 && read (conn, &b, 1) == 1 && b == 's')
				return conn;
			if (conn >= 0)
				close (conn);
		}
	}
}

/* Our agent beside the container's process (run.agentbox.agent), in
 * service mode on the listening socket create made.  It is PID 1 of a
 * pid namespace of its own below the container's (it refuses anything
 * else: it reaps what it starts), and init's child, so it ends with the
 * container. */
static void
start_agent (struct ab_oci_init_s *in)
{
	char *const argv[] = { (char *)"agentbox-agent", NULL };
	char *const envp[] = { NULL };
	int null;
	pid_t pid;

	if (in->agent_exe < 0)
		return;
	pid = ab_sys_clone_fork (CLONE_NEWPID);
	if (pid == 0) {
		reset_signals ();
		null = open ("/dev/null", O_RDWR | O_CLOEXEC);
		setsid ();
		if (null < 0 || dup2 (in->agent_listen, AB_AGENT_LISTEN_FD) < 0)
			_exit (125);
		for (int fd = 0; fd < 3; fd++)
			dup2 (null, fd);
		close (3);
		ab_sys_close_range (AB_AGENT_LISTEN_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
		syscall (__NR_execveat, in->agent_exe, "", argv, envp, AT_EMPTY_PATH);
		_exit (127);
	}
	close (in->agent_exe);
	close (in->agent_listen);
	in->agent_exe = in->agent_listen = -1;
}

/* startContainer hooks: in the container, before its process runs; a
 * failure stops the container (runtime-spec). */
static int
start_hooks (struct ab_oci_init_s *in, ab_error_t *err)
{
	if (!in->state)
		return 0;
	json_object_set_new (in->state, "status", json_string ("created"));
	return ab_oci_hooks_in (in->c, "startContainer", in->state, err);
}

void
ab_oci_init_main (struct ab_oci_init_s *in)
{
	ab_error_t err = AB_ERROR_INIT;
	int tty = -1, starter;
	pid_t child;
	sigset_t all;

	prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (setup (in, &tty, &err) < 0) {
		send (in->sync_fd, err.msg, strlen (err.msg), MSG_NOSIGNAL);
		_exit (1);
	}
	send (in->sync_fd, "", 1, MSG_NOSIGNAL);
	if ((starter = wait_start (in, &err)) < 0)
		_exit (1);
	if (start_hooks (in, &err) < 0) {
		fprintf (stderr, "agentbox-runc: %s\n", err.msg);
		send (starter, "f", 1, MSG_NOSIGNAL);
		_exit (1);
	}
	catch_all (&all);
	start_agent (in);
	child = fork ();
	if (child == 0) {
		reset_signals ();
		close (starter);
		close (in->sync_fd);
		close (in->fifo_fd);
		ab_oci_exec_process (&in->c->proc, in->c, tty, in->preserve_fds, in->seccomp);
		_exit (127);
	}
	send (starter, child > 0 ? "k" : "f", 1, MSG_NOSIGNAL);
	close (starter);
	if (starter != in->sync_fd)
		close (in->sync_fd);
	close (in->fifo_fd);
	if (tty >= 0)
		close (tty);
	ab_oci_seccomp_free (in->seccomp);
	if (child < 0)
		_exit (1);
	serve (child, &all);
}
