/* The sandbox's first process, from clone() to execve of agentbox-agent.
 *
 * It runs single-threaded in fresh user, mount, pid, net, ipc, uts and
 * cgroup namespaces; past this point failures end the process (after
 * telling the monitor why).  Order: join the v1 cgroups (the cgroup2 one
 * it was cloned into), wait for the id maps, build the root, wait for the
 * limits, join a new cgroup namespace, pivot into the root, set the
 * hostname, then exec the sealed agent copy as PID 1 with only the door
 * and stdio. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "backend/agent-exe.h"
#include "backend/native-internal.h"
#include "base/fd.h"
#include "base/sys.h"
#include "isolate/cgroup.h"
#include "isolate/rootfs.h"
#include "proto/proto.h"

static void __attribute__ ((noreturn)) init_fail (int sync_fd, const ab_error_t *err)
{
	ab_write_all (sync_fd, err->msg, strlen (err->msg));
	_exit (125);
}

/* fd moved out of the way of 0..4 (close-on-exec), or -1 for none. */
static int
move_high (int fd)
{
	return fd < 0 ? -1 : fcntl (fd, F_DUPFD_CLOEXEC, 10);
}

/* Place stdio at 0..2, the door at 3 (one-shot) or the listening socket at
 * 4 (service mode); everything else is marked close-on-exec so nothing of
 * the host crosses into the sandbox.  Every source is first moved above
 * the targets so no dup2 overwrites another source. */
static int
arrange_fds (struct ab_native_init_s *in, ab_error_t *err)
{
	int src[5] = { -1, -1, -1, move_high (in->door_fd), move_high (in->listen_fd) };

	if ((in->door_fd >= 0 && src[3] < 0) || (in->listen_fd >= 0 && src[4] < 0))
		return ab_error (err, errno, AB_E_SYSTEM, "dup");
	for (int i = 0; i < 3; i++) {
		/* No stdio given: the sandbox's own /dev/null (we are past pivot). */
		src[i] = in->stdio[i] >= 0 ? move_high (in->stdio[i])
		                           : open ("/dev/null", O_RDWR | O_CLOEXEC);
		if (src[i] < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "dup stdio");
	}
	for (int i = 0; i < 5; i++) {
		if (src[i] < 0)
			close (i);
		else if (dup2 (src[i], i) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "dup2 fd %d", i);
	}
	return ab_sys_close_range (AB_AGENT_LISTEN_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
}

/* Wait for the monitor's message `want`; a passed fd (a mount) lands in
 * *fd, else -1. */
static void
await_go (int sync_fd, char want, int *fd)
{
	size_t n = 0;
	char go = 0;

	ssize_t got;

	*fd = -1;
	got = ab_recv_with_fds (sync_fd, &go, 1, fd, 1, &n);
	if (got == 1 && go == want)
		return;
	if (got == 1) { /* a protocol slip between us and the monitor: say so */
		ab_error_t err = AB_ERROR_INIT;
		ab_error (&err, 0, AB_E_INTERNAL,
		          "expected message '%c' from the monitor, got '%c'", want, go);
		init_fail (sync_fd, &err);
	}
	_exit (125); /* the monitor is gone or failed: it reports why */
}

static int
become_sandbox_root (struct ab_native_init_s *in, ab_error_t *err)
{
	if (in->become_root
	    && (setgroups (0, NULL) < 0 || setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0))
		return ab_error (err, errno, AB_E_SYSTEM, "switch to the sandbox's root id");
	if (setsid () < 0) /* never share the caller's terminal session */
		return ab_error (err, errno, AB_E_SYSTEM, "setsid");
	return 0;
}

/* When privileged, the monitor sends the idmapped workspace and bind
 * mounts after GO_READY, one fd per message, in spec order. */
static void
receive_binds (struct ab_native_init_s *in, struct ab_rootfs_s *rf)
{
	if (!in->become_root)
		return;
	if (in->spec->workspace)
		await_go (in->sync_fd, AB_NATIVE_GO_MOUNT, &rf->workspace_fd);
	for (size_t i = 0; i < in->spec->n_mounts; i++)
		if (in->spec->mounts[i].kind != AB_MOUNT_TMPFS)
			await_go (in->sync_fd, AB_NATIVE_GO_MOUNT, &rf->mount_fds[i]);
}

static int
enter_sandbox (struct ab_native_init_s *in, struct ab_rootfs_s *rf, ab_error_t *err)
{
	/* Joined after the monitor moved us into our cgroups: they become "/". */
	if (unshare (CLONE_NEWCGROUP) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "unshare cgroup namespace");
	if (ab_rootfs_finish (in->spec, rf, err) < 0)
		return ab_error_wrap (err, "build the sandbox root");
	if (sethostname (in->spec->hostname, strlen (in->spec->hostname)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sethostname");
	if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "no_new_privs");
	if (arrange_fds (in, err) < 0)
		return ab_error_wrap (err, "prepare file descriptors");
	return 0;
}

void
ab_native_init (struct ab_native_init_s *in)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_rootfs_s rf;
	int agent, none;
	char *const argv[] = { (char *)"agentbox-agent", NULL };
	char *const envp[] = { NULL };

	sigset_t unblocked;

	prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset (&unblocked);
	sigprocmask (SIG_SETMASK, &unblocked, NULL); /* the monitor's signalfd blocked some */
	/* Out of the way of fds 0..3, which arrange_fds will overwrite. */
	in->sync_fd = fcntl (in->sync_fd, F_DUPFD_CLOEXEC, 10);
	if (in->sync_fd < 0)
		_exit (125);
	/* First, while this is the sandbox's only process and single-threaded:
	 * everything it mounts and starts is charged to the groups. */
	if (ab_cgroup_join_self (in->cg_tasks, in->n_cg_tasks, &err) < 0)
		init_fail (in->sync_fd, &err);
	await_go (in->sync_fd, AB_NATIVE_GO_MAPS, &none);
	if (in->spec->root.layers) /* the layered root's overlay came with it */
		in->image_mnt = none;
	if (become_sandbox_root (in, &err) < 0
	    || (agent = ab_agent_exe_mount (in->agent_path, &err)) < 0
	    || ab_rootfs_capture (in->spec, in->become_root, in->image_mnt, &rf, &err) < 0
	    || ab_rootfs_build (in->spec, &rf, &err) < 0)
		init_fail (in->sync_fd, &err);
	await_go (in->sync_fd, AB_NATIVE_GO_READY, &none);
	receive_binds (in, &rf);
	if (enter_sandbox (in, &rf, &err) < 0)
		init_fail (in->sync_fd, &err);
	/* agent is O_CLOEXEC: execveat still runs it (an ELF needs no fd). */
	syscall (__NR_execveat, agent, "", argv, envp, AT_EMPTY_PATH);
	ab_error (&err, errno, AB_E_SYSTEM, "execute agentbox-agent");
	init_fail (in->sync_fd, &err);
}
