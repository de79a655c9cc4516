/* The Docker backend (docs/docker-backend.md).
 *
 *   caller ──► monitor (agentbox-mon) ──docker run -d──► container: PID 1 agentbox-agent
 *                 │                                        --listen /.agentbox/agent.sock
 *                 └── watches the agent's pidfd; SIGTERM: docker rm -f
 *
 * The container's /.agentbox is a host directory next to the service
 * socket (<service_socket>.docker/door); the service socket is a symlink
 * to the agent's socket in it, so every session connects straight to the
 * agent (same kernel: SCM_RIGHTS crosses too).  The door directory belongs
 * to AB_DOCKER_DOOR_UID with mode 0700: commands of the sandbox, root
 * included, cannot enter it to swap the socket for their own; the agent
 * (CAP_DAC_OVERRIDE, which its commands never have) can.
 *
 * The docker CLI rather than the Engine API: it honours DOCKER_HOST,
 * contexts and TLS settings as the user configured them, negotiates the API
 * version with the daemon, and streams `docker import`; its ~30 ms start
 * per call is paid twice per sandbox (run, rm). */
#include "backend/docker-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/agent-exe.h"
#include "backend/host-mask.h"
#include "backend/monitor.h"
#include "backend/pause.h"
#include "backend/sandbox-dir.h"
#include "base/unix-socket.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define RUN_TIMEOUT_MS    60000
#define LISTEN_TIMEOUT_MS 30000
#define RM_TIMEOUT_MS     30000
/* How long the monitor waits for a dying agent to end, then for dockerd to
 * record the end (ended_by_oom); the inspect call itself is bounded too.
 * A busy host's dockerd took more than 3 s to mark an OOM-killed
 * container stopped (the OOM was then told as "went away"). */
#define OOM_WAIT_MS  10000
#define TERMINATE_MS (RM_TIMEOUT_MS + 2 * OOM_WAIT_MS + 15000)

/* In the private directory <service_socket>.docker. */
#define DOOR_NAME      "door"
#define MASK_FILE_NAME "mask"
#define MASK_DIR_NAME  "mask.d"

struct docker_ctx_s {
	const char *client;
	char *agent_path;
	char *dir;      /* <service_socket>.docker */
	char *door;     /* dir/door, bound at AB_DOCKER_DOOR */
	char *mask;     /* dir/mask: mode 0000, bound over unreadable /etc files */
	char *mask_dir; /* dir/mask.d: the same for directories */
	char name[64];
	bool ran;       /* docker run was tried: rm -f on stop */
	pid_t wait_pid; /* `docker wait NAME` while the agent starts */
	pid_t agent;    /* the agent as seen from here, 0 where it cannot be */
};

/* ---- the door -------------------------------------------------------- */

static void
remove_door (struct docker_ctx_s *c)
{
	cleanup_free char *sock = xasprintf ("%s/agent.sock", c->door);
	unlink (sock);
	unlink (c->mask);
	rmdir (c->mask_dir);
	rmdir (c->door);
	rmdir (c->dir);
}

/* The door belongs to AB_DOCKER_DOOR_UID, mode 0700; the mask covers
 * to root (container root, which without CAP_DAC_OVERRIDE cannot open
 * them either, nor chmod them through their read-only binds). */
static int
prepare_door (struct docker_ctx_s *c, const char *service_socket, ab_error_t *err)
{
	cleanup_free char *target = xasprintf ("%s/agent.sock", c->door);
	cleanup_close int dfd = -1;

	if (ab_service_link_claim (service_socket, err) < 0)
		return -1;
	remove_door (c); /* a crashed monitor's leftovers */
	dfd = ab_sandbox_dir_create (c->dir, err);
	if (dfd < 0
	    || ab_sandbox_dir_entry (dfd, DOOR_NAME, true, 0700, AB_DOCKER_DOOR_UID, err) < 0
	    || ab_host_mask_covers (dfd, MASK_FILE_NAME, MASK_DIR_NAME, 0, err) < 0)
		return -1;
	if (symlink (target, service_socket) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "symlink %s", service_socket);
	return 0;
}

/* ---- docker run ------------------------------------------------------- */

static void
free_run (struct ab_docker_run_s *r)
{
	ab_cleanup_strvp (&r->trees);
	ab_cleanup_strvp (&r->mask_files);
	ab_cleanup_strvp (&r->mask_dirs);
	ab_cleanup_strvp (&r->submount_src);
	ab_cleanup_strvp (&r->submount_dst);
}

/* The host-root layout's masks and submounts (nothing with --rootfs). */
static int
host_layout (const struct ab_spec_s *spec, struct ab_docker_run_s *r, ab_error_t *err)
{
	if (spec->rootfs || spec->root.layers)
		return 0;
	r->trees = ab_docker_existing_trees ();
	for (char **t = r->trees; *t; t++)
		if (ab_docker_scan_unreadable (*t, &r->mask_files, &r->mask_dirs, err) < 0)
			return ab_error_wrap (err, "masking %s", *t);
	return ab_docker_submounts (r->trees, &r->submount_src, &r->submount_dst, err);
}

/* Docker warns, and goes on, when the kernel cannot apply a limit; limits
 * the user asked for must hold (swap accounting aside: memory is still
 * limited). */
static int
check_warnings (const struct ab_spec_s *spec, const char *out, ab_error_t *err)
{
	for (const char *l = out; l && *l; l = strchr (l, '\n') ? strchr (l, '\n') + 1 : NULL) {
		char line[256];
		ab_docker_first_line (l, line, sizeof line);
		if (strncmp (line, "WARNING", 7) == 0 && strstr (line, "does not support")
		    && !strstr (line, "swap") && spec->limits.explicit_cgroup)
			return ab_error (err, 0, AB_E_SYSTEM, "docker cannot apply the limits: %s",
			                 line);
	}
	return 0;
}

/* docker run; 1 (nothing started) when the image is not there yet. */
static int
docker_run (struct docker_ctx_s *c, const struct ab_spec_s *spec, char **argv, ab_error_t *err)
{
	char out[4096], line[256];
	int rc;

	c->ran = true;
	rc = ab_run_tool (argv, out, sizeof out, RUN_TIMEOUT_MS, err);
	if (rc < 0)
		return ab_error_wrap (err, "docker run");
	if (rc != 0 && strstr (out, "No such image"))
		return 1;
	if (rc != 0) {
		ab_docker_first_line (out, line, sizeof line);
		return ab_error (err, 0, AB_E_SYSTEM, "docker run failed: %s", line);
	}
	return check_warnings (spec, out, err);
}

static int
run_container (struct docker_ctx_s *c, const struct ab_spec_s *spec, ab_error_t *err)
{
	char image[128];
	cleanup_free char *label = ab_docker_monitor_label (); /* we are the monitor */
	struct ab_docker_run_s r = {
		.client = c->client,
		.name = c->name,
		.image = image,
		.agent_path = c->agent_path,
		.door_dir = c->door,
		.monitor_label = label,
		.mask_file = c->mask,
		.mask_dir = c->mask_dir,
	};
	cleanup_strv char **argv = NULL;
	int rc = spec->root.layers
	                 ? ab_docker_layers_tag (spec->root.layers, image, sizeof image, err)
	                 : ab_docker_image_tag (spec->rootfs, image, sizeof image, err);

	if (rc == 0)
		rc = host_layout (spec, &r, err);
	if (rc == 0 && !(argv = ab_docker_run_argv (spec, &r, err)))
		rc = -1;
	free_run (&r);
	if (rc == 0)
		rc = docker_run (c, spec, argv, err);
	if (rc == 1) {
		/* First use of this image on this daemon. */
		if ((spec->root.layers
		             ? ab_docker_import_layers (c->client, spec->root.layers, c->dir, image,
		                                        err)
		             : ab_docker_import_image (c->client, spec->rootfs, image, err))
		    < 0)
			return -1;
		rc = docker_run (c, spec, argv, err);
		if (rc == 1)
			rc = ab_error (err, 0, AB_E_SYSTEM, "image %s vanished after its import",
			               image);
	}
	return rc;
}

/* ---- watching the container ------------------------------------------- */

static void
end_wait_child (struct docker_ctx_s *c)
{
	if (c->wait_pid <= 0)
		return;
	kill (c->wait_pid, SIGKILL);
	while (waitpid (c->wait_pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->wait_pid = -1;
}

/* Is pid the PID 1 of a pid namespace of its own (the container's init)? */
static bool
is_namespace_init (pid_t pid)
{
	cleanup_free char *path = xasprintf ("/proc/%d/status", (int)pid);
	cleanup_file FILE *f = fopen (path, "re");
	char line[256];

	while (f && fgets (line, sizeof line, f))
		if (strncmp (line, "NSpid:", 6) == 0) {
			const char *last = strrchr (line, '\t');
			return last && last != strchr (line, '\t') && atoi (last + 1) == 1;
		}
	return false;
}

/* The agent's pid, from the peer credentials of a connection to it: the
 * kernel reports it as seen from here (the host pid namespace); 0 where
 * it cannot be seen from here. */
static pid_t
agent_pid (const char *path)
{
	ab_error_t ignored = AB_ERROR_INIT;
	cleanup_close int fd = ab_unix_connect (path, &ignored);
	struct ucred cred = { 0 };
	socklen_t len = sizeof cred;

	if (fd < 0 || getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0
	    || !is_namespace_init (cred.pid))
		return 0;
	return cred.pid;
}

/* Why the container ended before its agent listened: its state and log. */
static void
explain_early_end (struct docker_ctx_s *c, ab_error_t *err)
{
	char *inspect[] = {
		(char *)c->client,
		(char *)"inspect",
		(char *)"--format",
		(char *)"{{.State.Status}}, exit code {{.State.ExitCode}}"
		        "{{if .State.OOMKilled}}, out of memory{{end}} {{.State.Error}}",
		c->name,
		NULL
	};
	char *logs[] = { (char *)c->client, (char *)"logs", (char *)"--tail",
		         (char *)"3",       c->name,        NULL };
	char state[512], log[512], l1[200], l2[200];
	ab_error_t ignored = AB_ERROR_INIT;

	ab_run_tool (inspect, state, sizeof state, RM_TIMEOUT_MS, &ignored);
	ab_run_tool (logs, log, sizeof log, RM_TIMEOUT_MS, &ignored);
	ab_docker_first_line (state, l1, sizeof l1);
	ab_docker_first_line (log, l2, sizeof l2);
	ab_error_wrap (err, "container %s: %s%s%s", c->name, l1, l2[0] ? "; " : "", l2);
}

static int
docker_start (void *vctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct docker_ctx_s *c = vctx;
	char *wait_argv[] = { (char *)c->client, (char *)"wait", c->name, NULL };
	cleanup_close int wait_fd = -1;
	int agent;
	pid_t pid;

	(void)id;
	if (prepare_door (c, spec->service_socket, err) < 0 || run_container (c, spec, err) < 0)
		return -1;
	/* Until the agent listens, `docker wait` tells an early end. */
	c->wait_pid = ab_spawn_tool (wait_argv, -1, -1, -1, &(ab_error_t)AB_ERROR_INIT);
	if (c->wait_pid > 0)
		wait_fd = ab_sys_pidfd_open (c->wait_pid, 0);
	if (ab_monitor_wait_socket (spec->service_socket, wait_fd, LISTEN_TIMEOUT_MS, err) < 0) {
		explain_early_end (c, err);
		return -1;
	}
	/* Then the agent itself: no docker process per sandbox left running.
	 * (Where its pid is not visible from here, `docker wait` stays.) */
	pid = agent_pid (spec->service_socket);
	c->agent = pid;
	agent = pid > 0 ? ab_sys_pidfd_open (pid, 0) : -1;
	if (agent < 0 && wait_fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "watch the container's agent");
	/* Ours is up: now is a good time to remove what SIGKILLed monitors
	 * left behind (off our path: a detached process). */
	ab_docker_sweep_async (c->client);
	if (agent < 0)
		return steal_fd (&wait_fd);
	end_wait_child (c);
	return agent;
}

/* Did the container's end come from the OOM killer?  An agent the OOM
 * killer chose may still be exiting when we are asked (a tied caller sees
 * its connection close first): it is given OOM_WAIT_MS to become a zombie
 * of containerd's shim.  While the agent lives (a sandbox told to stop),
 * the container's memory cgroup counts OOM kills; once it is gone, so is
 * the cgroup, and dockerd's record says.  Where the agent cannot be seen
 * from here, dockerd's answer of the moment. */
static bool
ended_by_oom (struct docker_ctx_s *c)
{
	struct ab_sandbox_exit_s seen = { 0 };
	uint64_t deadline = ab_mono_ms () + OOM_WAIT_MS;

	if (!c->ran)
		return false;
	while (c->agent > 0 && ab_docker_is_exiting (c->agent) && ab_mono_ms () < deadline)
		usleep (10 * 1000);
	if (c->agent > 0 && is_namespace_init (c->agent) && !ab_docker_is_zombie (c->agent)) {
		ab_docker_cgroup_stats (c->agent, &seen);
		return seen.oom_killed;
	}
	return ab_docker_container_oom (c->client, c->name, c->agent > 0 ? OOM_WAIT_MS : 0);
}

/* A caller that listens (agentbox run) hears it in the end report. */
static void
docker_stats (void *vctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex,
              ab_error_t *err)
{
	(void)err;
	ab_limits_held_by (ex, &spec->limits, AB_LIMIT_CGROUP); /* the container's */
	ex->oom_killed = ended_by_oom (vctx);
}

static int
docker_stop (void *vctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct docker_ctx_s *c = vctx;
	char *rm[] = { (char *)c->client, (char *)"rm", (char *)"--force", c->name, NULL };
	ab_error_t ignored = AB_ERROR_INIT;
	cleanup_free char *target = xasprintf ("%s/agent.sock", c->door);

	(void)id, (void)err;
	end_wait_child (c);
	/* Nobody listens (a daemon's sandbox): a note next to the socket,
	 * which the daemon reads when it sees this monitor end. */
	if (!spec->service_tied && spec->service_socket && ended_by_oom (c))
		ab_docker_oom_note (spec->service_socket);
	if (c->ran)
		ab_run_tool (rm, NULL, 0, RM_TIMEOUT_MS, &ignored);
	c->ran = false;
	remove_door (c);
	ab_service_link_remove (spec->service_socket, target);
	return 0;
}

static const struct ab_monitor_ops_s docker_monitor_ops = {
	.start = docker_start,
	.stop = docker_stop,
	.stats = docker_stats,
	.stop_timeout_ms = TERMINATE_MS,
};

/* ---- the backend ----------------------------------------------------- */

static int
docker_create (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
               ab_error_t *err)
{
	struct docker_ctx_s c = { .client = ab_docker_client (), .wait_pid = -1 };
	int r;

	(void)stdio; /* service mode: no fd reaches the sandbox at creation */
	ab_sandbox_begin (sb, &ab_backend_docker);
	if (ab_monitor_require_service (spec, "docker", err) < 0)
		return -1;
	if (geteuid () != 0)
		return ab_error (
		        err, EPERM, AB_E_DENIED,
		        "the docker backend needs root (the agent's socket in the container "
		        "is root's)");
	c.agent_path = ab_agent_exe_path (err);
	if (!c.agent_path)
		return -1;
	c.dir = xasprintf ("%s.docker", spec->service_socket);
	c.door = xasprintf ("%s/" DOOR_NAME, c.dir);
	c.mask = xasprintf ("%s/" MASK_FILE_NAME, c.dir);
	c.mask_dir = xasprintf ("%s/" MASK_DIR_NAME, c.dir);
	snprintf (c.name, sizeof c.name, "agentbox-%s", sb->id);
	r = ab_monitor_spawn (spec, &c, NULL, 0, sb, err);
	/* For destroy's report, when it runs in this process (agentbox run). */
	if (r == 0)
		sb->priv = (void *)(intptr_t)agent_pid (spec->service_socket);
	free (c.agent_path);
	free (c.dir);
	free (c.door);
	free (c.mask);
	free (c.mask_dir);
	return r;
}

static int
docker_destroy (struct ab_sandbox_s *sb, struct ab_sandbox_exit_s *ex, ab_error_t *err)
{
	pid_t agent = (pid_t)(intptr_t)sb->priv;
	struct ab_sandbox_exit_s seen = { 0 };
	int r;

	/* Before `docker rm` removes the cgroups; the pid is still the
	 * container's agent while it is PID 1 of a namespace. */
	if (agent > 0 && is_namespace_init (agent))
		ab_docker_cgroup_stats (agent, &seen);
	r = ab_monitor_destroy (sb, ex, err);
	/* The monitor's report adds a whole-container OOM (docker_stats). */
	seen.oom_killed = seen.oom_killed || ex->oom_killed;
	*ex = seen;
	return r;
}

const struct ab_backend_ops_s ab_backend_docker = {
	.name = "docker",
	.strength = 10,
	.features =
	        AB_BACKEND_FD_PASSING | AB_BACKEND_LIMITS | AB_BACKEND_NET_PROXY | AB_BACKEND_PAUSE,
	.wall = "a Docker container (runc: namespaces, Docker's seccomp profile, cgroups, "
	        "no network), all capabilities dropped but the agent's, no-new-privileges, "
	        "and the agent's own seccomp and Landlock; container root is host root "
	        "(no user namespace): unreadable /etc entries are masked",
	.probe = ab_docker_probe,
	.create = docker_create,
	.kill = ab_monitor_kill,
	.destroy = docker_destroy,
	.pause = ab_docker_pause,
	.resume = ab_docker_resume,
	.monitor = &docker_monitor_ops,
};
