/* `agentbox run [OPTIONS] -- CMD [ARGS...]`: one command in a fresh
 * sandbox, torn down when it ends. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/native.h"
#include "base/cleanup.h"
#include "base/fsutil.h"
#include "base/sys.h"
#include "base/tmpdir.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "image/image.h"
#include "cli/client.h"
#include "policy/egress-policy.h"
#include "cli/run-credentials.h"
#include "session/cred-relay.h"
#include "session/egress-relay.h"
#include "session/forward.h"
#include "session/run-remote.h"
#include "session/run-session.h"

struct stdio_plan_s {
	int sandbox[3]; /* what the command gets as 0, 1, 2 (-1 = /dev/null) */
	int close_after_create[3];
	struct ab_run_io_s io;
};

/* Pipes, sockets and /dev/null are passed straight in; a terminal or a
 * host file never is (it could be reopened through /proc/self/fd or used
 * for TIOCSTI): those are relayed through a pipe. */
static bool
safe_to_pass (int fd)
{
	struct stat st;
	if (fstat (fd, &st) < 0)
		return false;
	return S_ISFIFO (st.st_mode) || S_ISSOCK (st.st_mode)
	       || (S_ISCHR (st.st_mode) && st.st_rdev == makedev (1, 3));
}

static int
plan_stdio (bool tty, struct stdio_plan_s *p, ab_error_t *err)
{
	memset (p, 0, sizeof *p);
	p->io.relay_in = p->io.relay_out = p->io.relay_err = -1;
	for (int i = 0; i < 3; i++)
		p->sandbox[i] = p->close_after_create[i] = -1;
	if (tty) {
		p->io.raw_terminal = isatty (STDIN_FILENO);
		return 0; /* the agent's pty is the command's stdio */
	}
	for (int i = 0; i < 3; i++) {
		int fds[2];
		if (fcntl (i, F_GETFD) < 0)
			continue; /* closed: /dev/null inside */
		if (safe_to_pass (i)) {
			p->sandbox[i] = i;
			continue;
		}
		if (pipe2 (fds, O_CLOEXEC) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "pipe");
		p->sandbox[i] = p->close_after_create[i] = i == 0 ? fds[0] : fds[1];
		if (i == 0)
			p->io.relay_in = fds[1];
		else
			*(i == 1 ? &p->io.relay_out : &p->io.relay_err) = fds[0];
	}
	return 0;
}

static void
build_exec (const struct ab_spec_s *spec, bool tty, struct ab_exec_msg_s *m)
{
	struct winsize ws = { 0 };

	memset (m, 0, sizeof *m);
	m->argv = spec->argv;
	m->env = spec->env;
	m->cwd = spec->workdir;
	m->uid = spec->uid;
	m->gid = spec->gid;
	m->tty = tty;
	if (tty && ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
		m->rows = ws.ws_row;
		m->cols = ws.ws_col;
	}
	m->timeout_ms = spec->limits.timeout_ms;
	m->grace_ms = spec->limits.kill_grace_ms;
	m->nofile = spec->limits.nofile;
	m->rw_paths = ab_spec_rw_paths (spec, &m->n_rw_paths);
}

static int
exit_code (const struct ab_run_outcome_s *o, int *signal_out)
{
	*signal_out = 0;
	if (o->exec_errno)
		return o->exec_errno == ENOENT ? AB_EXIT_NOT_FOUND : AB_EXIT_CANNOT_EXEC;
	if (o->timed_out)
		return AB_EXIT_TIMEOUT;
	if (WIFSIGNALED (o->wait_status)) {
		*signal_out = WTERMSIG (o->wait_status);
		return 128 + *signal_out;
	}
	return WEXITSTATUS (o->wait_status);
}

static int
write_json_result (const char *path, int code, int sig, const struct ab_run_outcome_s *o,
                   const struct ab_sandbox_exit_s *ex, uint64_t wall_ms, ab_error_t *err)
{
	json_t *j = json_pack ("{s:i, s:i, s:b, s:b, s:I, s:I, s:I, s:i}", "exit_code", code,
	                       "signal", sig, "timed_out", o->timed_out, "oom_killed",
	                       ex->oom_killed, "wall_ms", (json_int_t)wall_ms, "cpu_ms",
	                       (json_int_t)ex->cpu_ms, "peak_memory_bytes",
	                       (json_int_t)ex->peak_memory, "landlock_abi", o->landlock_abi);
	/* What really holds each limit (docs: "off" = not asked for). */
	json_object_set_new (
	        j, "limits",
	        json_pack ("{s:s, s:s, s:s}", "memory", ab_limit_by_name (ex->memory_by), "pids",
	                   ab_limit_by_name (ex->pids_by), "cpu", ab_limit_by_name (ex->cpu_by)));
	cleanup_free char *tmp = xasprintf ("%s.tmp.%d", path, (int)getpid ());
	int r = json_dump_file (j, tmp, JSON_INDENT (2));

	json_decref (j);
	if (r < 0 || rename (tmp, path) < 0) {
		unlink (tmp);
		return ab_error (err, errno, AB_E_SYSTEM, "write --json-result %s", path);
	}
	return 0;
}

/* The host-side services behind the agent's listeners. */
struct services_s {
	struct ab_cred_config_s *creds; /* until start takes it */
	ab_egress_relay_t *egress;      /* --network proxy: 127.0.0.1:3128 */
	ab_cred_relay_t *cred;          /* --credential: 127.0.0.1:8288 */
};

static void
route_conn (void *ctx, uint16_t port, int fd)
{
	struct services_s *s = ctx;

	if (port == AB_EGRESS_PORT && s->egress)
		ab_egress_relay_submit (s->egress, fd);
	else if (port == AB_CRED_PORT && s->cred)
		ab_cred_relay_submit (s->cred, fd);
	else
		close (fd);
}

/* Threads only now, after every fork of the sandbox (SECURITY.md 12). */
static int
start_services (void *ctx, const struct ab_spec_s *spec, const char *id, struct ab_run_io_s *io,
                ab_error_t *err)
{
	struct services_s *s = ctx;
	struct ab_cred_config_s *creds = s->creds;

	s->creds = NULL; /* ab_cred_relay_start takes the reference */
	if (creds) {
		if (!(s->cred = ab_cred_relay_start (creds, err)))
			return -1;
		io->listen_ports[io->n_listen++] = AB_CRED_PORT;
	}
	if (spec->network == AB_NETWORK_PROXY) {
		if (!(s->egress = ab_egress_relay_start (&spec->egress, id, err)))
			return -1;
		io->listen_ports[io->n_listen++] = AB_EGRESS_PORT;
	}
	io->conn = route_conn;
	io->conn_ctx = s;
	return 0;
}

static void
stop_services (void *ctx)
{
	struct services_s *s = ctx;

	ab_egress_relay_stop (s->egress);
	ab_cred_relay_stop (s->cred);
	s->egress = NULL;
	s->cred = NULL;
}

static bool
want_tty (const struct ab_spec_s *spec)
{
	if (spec->tty == AB_TTY_AUTO)
		return isatty (STDIN_FILENO);
	return spec->tty == AB_TTY_ON;
}

/* Where a service-mode sandbox of `run` listens: a fresh private dir
 * under $XDG_RUNTIME_DIR (the user's runtime dir is made for sockets),
 * else under the temporary directory. */
static char *
make_socket_dir (ab_error_t *err)
{
	const char *base = getenv ("XDG_RUNTIME_DIR");

	return ab_make_temp_dir (base && base[0] == '/' ? base : NULL, "agentbox-run", err);
}

/* The egress and credential proxies behind the agent's listeners of a
 * service-mode sandbox (threads: after create, which forked the monitor).
 * Takes the credential configuration's reference. */
static ab_forward_t *
start_forwarding (const struct ab_backend_ops_s *backend, const struct ab_spec_s *spec,
                  const char *id, struct ab_cred_config_s *creds, struct services_s *s,
                  ab_error_t *err)
{
	bool fd_passing = ab_forward_use_fd_passing (backend->features & AB_BACKEND_FD_PASSING);

	if (creds && !(s->cred = ab_cred_relay_start (creds, err)))
		return NULL;
	if (spec->network == AB_NETWORK_PROXY
	    && !(s->egress = ab_egress_relay_start (&spec->egress, id, err)))
		return NULL;
	return ab_forward_start (spec->service_socket, s->egress, s->cred, fd_passing, err);
}

/* The host's OOM killer ended the whole sandbox (gVisor's sentry is one
 * host process in the memory cgroup), so no EXIT came: the command died
 * with it by SIGKILL, as native reports an OOM-killed command. */
static int
oom_killed_outcome (struct ab_run_outcome_s *out, ab_error_t *err)
{
	out->wait_status = SIGKILL; /* WIFSIGNALED, WTERMSIG == SIGKILL */
	out->timed_out = false;
	out->exec_errno = 0;
	ab_error_clear (err);
	return 0;
}

/* A backend without protocol v1 (gVisor, microVM, Docker): the sandbox in
 * service mode, tied to this process, one process through protocol v2. */
static int
run_in_service_sandbox (const struct ab_backend_ops_s *backend, struct ab_spec_s *spec,
                        struct ab_cred_config_s *creds, struct ab_run_outcome_s *out,
                        struct ab_sandbox_exit_s *ex, ab_error_t *err)
{
	cleanup_free char *dir = make_socket_dir (err);
	cleanup_free char *sock = NULL;
	ab_error_t derr = AB_ERROR_INIT;
	struct services_s services = { 0 };
	ab_forward_t *forward = NULL;
	struct ab_sandbox_s sb;
	bool lost = false; /* the sandbox went away under the command */
	int r, destroyed;

	if (!dir) {
		ab_cred_config_unref (creds);
		return -1;
	}
	sock = xasprintf ("%s/agent.sock", dir);
	spec->service_socket = sock;
	spec->service_tied = true;
	r = backend->create (spec, NULL, &sb, err);
	if (r < 0) {
		ab_error_wrap (err, "%s backend", backend->name);
		ab_cred_config_unref (creds);
	} else {
		if ((creds || spec->network == AB_NETWORK_PROXY)
		    && !(forward = start_forwarding (backend, spec, sb.id, creds, &services, err)))
			r = -1;
		if (r == 0 && (r = ab_run_remote (sock, spec, want_tty (spec), out, err)) < 0)
			lost = true;
		ab_forward_stop (forward);
		ab_egress_relay_stop (services.egress);
		ab_cred_relay_stop (services.cred);
		destroyed = backend->destroy (&sb, ex, &derr);
		if (lost && ex->oom_killed)
			r = oom_killed_outcome (out, err);
		if (destroyed < 0 && r == 0) {
			*err = derr;
			r = -1;
		}
	}
	spec->service_socket = NULL;
	unlink (sock);
	rmdir (dir);
	return r;
}

static int
finish_run (const struct ab_spec_s *spec, const struct ab_run_outcome_s *out,
            const struct ab_sandbox_exit_s *ex, uint64_t t0, ab_error_t *err)
{
	int sig, code = exit_code (out, &sig);

	if (spec->json_result
	    && write_json_result (spec->json_result, code, sig, out, ex, ab_mono_ms () - t0, err)
	               < 0)
		return -1;
	return code;
}

/* Host services a one-shot sandbox needs (the egress and credential
 * relays): started after create, stopped before destroy.  The lean entry
 * passes none, so it never links the relays' TLS and event libraries. */
struct oneshot_services_s {
	int (*start) (void *ctx, const struct ab_spec_s *spec, const char *id,
	              struct ab_run_io_s *io, ab_error_t *err);
	void (*stop) (void *ctx);
	void *ctx;
};

/* A protocol v1 backend: the command runs through the sandbox's agent
 * as its one process, over the door create hands back. */
static int
run_oneshot (const struct ab_backend_ops_s *backend, struct ab_spec_s *spec,
             const struct oneshot_services_s *svc, ab_error_t *err)
{
	struct ab_sandbox_exit_s ex = { 0 };
	struct ab_run_outcome_s out = { 0 };
	struct stdio_plan_s plan;
	struct ab_exec_msg_s exec;
	struct ab_sandbox_s sb;
	bool tty = want_tty (spec);
	uint64_t t0 = ab_mono_ms ();
	int r = 0;
	ab_error_t derr = AB_ERROR_INIT;

	if (plan_stdio (tty, &plan, err) < 0 || backend->create (spec, plan.sandbox, &sb, err) < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		if (plan.close_after_create[i] >= 0)
			close (plan.close_after_create[i]);
	build_exec (spec, tty, &exec);
	if (svc)
		r = svc->start (svc->ctx, spec, sb.id, &plan.io, err);
	if (r == 0) {
		/* Only now: the sandbox, already started, must not inherit it. */
		signal (SIGPIPE, SIG_IGN);
		r = ab_run_session (sb.agent_fd, &exec, &plan.io, &out, err);
	}
	if (svc)
		svc->stop (svc->ctx);
	for (size_t i = 0; i < exec.n_rw_paths; i++)
		free (exec.rw_paths[i]);
	free (exec.rw_paths);
	if (backend->destroy (&sb, &ex, &derr) < 0 && r == 0) {
		*err = derr;
		r = -1;
	} else if (r < 0 && derr.kind != AB_E_NONE) {
		*err = derr; /* the monitor knows why the sandbox never started */
	}
	if (r < 0)
		return -1;
	return finish_run (spec, &out, &ex, t0, err);
}

static int
run_in_sandbox (struct ab_spec_s *spec, struct ab_cred_config_s *creds, ab_error_t *err)
{
	const struct ab_backend_ops_s *backend = ab_backend_select (spec->backend, err);
	struct ab_sandbox_exit_s ex = { 0 };
	struct ab_run_outcome_s out = { 0 };
	struct services_s services = { .creds = creds };
	struct oneshot_services_s svc = { start_services, stop_services, &services };
	uint64_t t0 = ab_mono_ms ();
	int r;

	if (!backend) {
		ab_cred_config_unref (creds);
		return -1;
	}
	/* AGENTBOX_RUN_SERVICE=1 takes the protocol v2 path on any backend
	 * (the tests use it to cover that path on native). */
	if (!(backend->features & AB_BACKEND_ONESHOT) || getenv ("AGENTBOX_RUN_SERVICE")) {
		if (run_in_service_sandbox (backend, spec, creds, &out, &ex, err) < 0)
			return -1;
		return finish_run (spec, &out, &ex, t0, err);
	}
	r = run_oneshot (backend, spec, &svc, err);
	if (services.creds) /* create failed before the relay took it */
		ab_cred_config_unref (services.creds);
	return r;
}

/* A bad policy file or pattern is an error before anything starts. */
static int
check_egress (const struct ab_spec_s *spec, ab_error_t *err)
{
	struct ab_egress_policy_s *p;

	if (spec->network != AB_NETWORK_PROXY)
		return 0;
	p = ab_egress_policy_from_spec (&spec->egress, err);
	if (!p)
		return -1;
	ab_egress_policy_free (p);
	return 0;
}

/* --image: the layered root and the image's defaults, then the checks
 * parse_options left for after them; a lease keeps the image from
 * `image rm` while this run lasts. */
static int
prepare_image (struct ab_spec_s *spec, char **state, char **holder, ab_error_t *err)
{
	const struct ab_run_image_s *io = ab_run_image_options ();
	struct ab_image_given_s given = { io->workdir_given, io->user_given, io->command_given };

	if (!spec->image)
		return 0;
	*state = io->state_dir ? xstrdup (io->state_dir) : ab_default_state_dir ();
	if (ab_image_prepare_spec (*state, spec, (ab_pull_policy)io->pull, &given, NULL, err) < 0
	    || ab_spec_validate (spec, err) < 0)
		return -1;
	*holder = xasprintf ("run-%d", (int)getpid ());
	return ab_image_lease_take (*state, *holder, spec->image_digest, NULL, err);
}

int
ab_cmd_run (int argc, char **argv)
{
	cleanup_free char *state = NULL, *holder = NULL;
	struct ab_spec_s spec;
	struct ab_cred_config_s *creds = NULL;
	ab_error_t err = AB_ERROR_INIT;
	int code;

	/* --pool: through the daemon, from a warm pool (cli/cmd-pool.c). */
	if (ab_pool_wanted (argc, argv))
		return ab_pool_claim_cli (ab_client_take_host (&argc, argv), argc, argv, true);
	ab_spec_init (&spec);
	if (ab_run_parse_options (argc, argv, &spec, &err) < 0) {
		ab_cli_report (&err);
		ab_spec_free (&spec);
		return AB_EXIT_FAILED;
	}
	if (prepare_image (&spec, &state, &holder, &err) < 0 || check_egress (&spec, &err) < 0
	    || ab_run_credentials_prepare (&spec, &creds, &err) < 0)
		code = -1;
	else
		code = run_in_sandbox (&spec, creds, &err);
	if (code < 0) {
		ab_cli_report (&err);
		code = AB_EXIT_FAILED;
	}
	if (holder)
		ab_image_lease_release (state, holder);
	ab_spec_free (&spec);
	return code;
}

/* Whether the lean entry (cli/main.c) runs this spec itself: the native
 * backend, asked for by name, with nothing that needs the image store,
 * the egress or credential relays, or protocol v2 (their libraries are
 * not in that binary).  Anything else goes to the full program, which
 * parses the same arguments again. */
static bool
lean_enough (const struct ab_spec_s *spec)
{
	return strcmp (spec->backend, ab_backend_native.name) == 0 && !spec->image
	       && !spec->credentials && spec->network != AB_NETWORK_PROXY
	       && !getenv ("AGENTBOX_RUN_SERVICE");
}

int
ab_cmd_run_lean (int argc, char **argv)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	int code = AB_RUN_NOT_LEAN;

	ab_spec_init (&spec);
	/* A parse error too is the full program's to report (--pool, for
	 * one, is not a run option: ab_cmd_run takes it first). */
	if (ab_run_parse_options (argc, argv, &spec, &err) == 0 && lean_enough (&spec)) {
		code = run_oneshot (&ab_backend_native, &spec, NULL, &err);
		if (code < 0) {
			ab_cli_report (&err);
			code = AB_EXIT_FAILED;
		}
	}
	ab_error_clear (&err);
	ab_spec_free (&spec);
	return code;
}
