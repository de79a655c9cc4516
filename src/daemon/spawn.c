/* Sandboxes are never forked from the daemon, which is multi-threaded
 * (SECURITY.md 12: a fork of a threaded process holds copies of other
 * threads' locks, and clone/unshare/setns there is how CVE-2021-43784-class
 * bugs start).  The daemon posix_spawns a fresh `agentbox __create-sandbox
 * ID` (vfork + exec: nothing of the daemon's threads survives) that reads
 * the spec as JSON on stdin, creates the sandbox in service mode and
 * prints one JSON line; the sandbox's monitor detaches and lives on.  The
 * id on the command line is what the daemon later checks in the monitor's
 * /proc/PID/cmdline (the monitor is a fork of this process). */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "spec/spec-json.h"

#define SPAWN_TIMEOUT_MS 60000
#define MAX_SPEC_JSON    (1 << 20)
#define MAX_RESULT       8192

extern char **environ;

static int
read_result (int fd, char *buf, size_t cap, ab_error_t *err)
{
	size_t n = 0;
	uint64_t deadline = ab_mono_us () + SPAWN_TIMEOUT_MS * 1000ULL;

	while (n < cap - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)((deadline - ab_mono_us ()) / 1000);
		ssize_t r;
		if (ab_mono_us () >= deadline || poll (&p, 1, left) == 0)
			return ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "sandbox creation");
		r = read (fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr (buf, '\n', n))
			break;
	}
	buf[n] = '\0';
	return 0;
}

static int
parse_result (const char *text, struct ab_spawn_result_s *out, ab_error_t *err)
{
	json_error_t je;
	json_t *j = json_loads (text, 0, &je);
	const char *backend = "", *msg = "", *kind = "", *sbid = "";
	int ok = 0, pid = -1, r = 0;

	if (!j
	    || json_unpack (j, "{s:b, s?i, s?s, s?s, s?{s:s, s:s}}", "ok", &ok, "monitor_pid", &pid,
	                    "backend", &backend, "sandbox_id", &sbid, "error", "kind", &kind,
	                    "message", &msg)
	               < 0) {
		json_decref (j);
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "sandbox spawner said nothing useful: %.200s", text);
	}
	if (!ok) {
		ab_error_kind k = AB_E_SYSTEM;
		for (int i = AB_E_SYSTEM; i <= AB_E_INTERNAL; i++)
			if (strcmp (ab_error_kind_name ((ab_error_kind)i), kind) == 0)
				k = (ab_error_kind)i;
		r = ab_error (err, 0, k, "%s", msg);
	} else {
		out->monitor_pid = pid;
		snprintf (out->backend, sizeof out->backend, "%s", backend);
		snprintf (out->backend_id, sizeof out->backend_id, "%s", sbid);
	}
	json_decref (j);
	return r;
}

int
ab_spawn_sandbox (const char *id, const json_t *spec, struct ab_spawn_result_s *out,
                  ab_error_t *err)
{
	char *argv[] = { (char *)"agentbox", (char *)"__create-sandbox", (char *)id, NULL };
	cleanup_free char *text = json_dumps (spec, JSON_COMPACT);
	cleanup_close int in_w = -1, out_r = -1;
	int in[2], outp[2], status, r;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, def;
	char result[MAX_RESULT];
	pid_t pid;

	if (pipe2 (in, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	if (pipe2 (outp, O_CLOEXEC) < 0) {
		close (in[0]), close (in[1]);
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	}
	in_w = in[1];
	out_r = outp[0];
	posix_spawn_file_actions_init (&fa);
	posix_spawn_file_actions_adddup2 (&fa, in[0], 0);
	posix_spawn_file_actions_adddup2 (&fa, outp[1], 1);
	/* The daemon ignores SIGPIPE and its threads may block signals; both
	 * survive exec and would reach every process of the sandbox. */
	sigemptyset (&none);
	sigemptyset (&def);
	sigaddset (&def, SIGPIPE);
	posix_spawnattr_init (&attr);
	posix_spawnattr_setsigmask (&attr, &none);
	posix_spawnattr_setsigdefault (&attr, &def);
	posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = posix_spawn (&pid, "/proc/self/exe", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy (&fa);
	posix_spawnattr_destroy (&attr);
	close (in[0]);
	close (outp[1]);
	if (r != 0)
		return ab_error (err, r, AB_E_SYSTEM, "spawn agentbox __create-sandbox");
	/* The spec is small (bounded by the API's body limit): one write. */
	r = ab_write_all (in_w, text, strlen (text));
	close (steal_fd (&in_w));
	if (r == 0)
		r = read_result (out_r, result, sizeof result, err);
	if (r < 0)
		kill (pid, SIGKILL);
	while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return -1;
	return parse_result (result, out, err);
}

/* --- the child: single-threaded from exec to exit ----------------------- */

static void
print_result (const struct ab_sandbox_s *sb, const ab_error_t *e)
{
	json_t *j;

	if (e)
		j = json_pack ("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "kind",
		               ab_error_kind_name (e->kind), "message", e->msg);
	else
		j = json_pack ("{s:b, s:i, s:s, s:s}", "ok", 1, "monitor_pid", (int)sb->monitor_pid,
		               "backend", sb->backend->name, "sandbox_id", sb->id);
	char *text = json_dumps (j, JSON_COMPACT);
	printf ("%s\n", text);
	fflush (stdout);
	free (text);
	json_decref (j);
}

static int
create_from_stdin (struct ab_sandbox_s *sb, ab_error_t *err)
{
	const struct ab_backend_ops_s *backend;
	struct ab_spec_s spec;
	json_error_t je;
	json_t *j;
	int r;

	j = json_loadf (stdin, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return ab_error (err, 0, AB_E_INVALID, "spec: %s", je.text);
	ab_spec_init (&spec);
	r = ab_spec_from_json (j, AB_SPEC_JSON_INTERNAL, &spec, err);
	json_decref (j);
	if (r == 0 && !spec.service_socket)
		r = ab_error (err, 0, AB_E_INTERNAL, "no service socket in the spec");
	if (r == 0 && !(backend = ab_backend_select (spec.backend, err)))
		r = -1;
	if (r == 0 && (r = backend->create (&spec, NULL, sb, err)) < 0
	    && !(backend->features & AB_BACKEND_ONESHOT))
		ab_error_wrap (err, "%s backend", backend->name);
	ab_spec_free (&spec);
	return r;
}

int
ab_daemon_create_child_main (int argc, char **argv)
{
	struct ab_sandbox_s sb;
	ab_error_t err = AB_ERROR_INIT;

	if (argc != 2) {
		fprintf (stderr, "agentbox: __create-sandbox is internal to agentbox serve\n");
		return 125;
	}
	/* A daemon that ends mid-create takes this spawner with it; the
	 * monitor then sees its caller gone and cancels the start (a VM may
	 * still be booting), so nothing outlives a create nobody waits for.
	 * The daemon's spawning thread blocks in waitpid until we exit, so
	 * only the daemon's own end can fire this. */
	if (prctl (PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid () == 1)
		return 125;
	if (create_from_stdin (&sb, &err) < 0) {
		print_result (NULL, &err);
		return 1;
	}
	print_result (&sb, NULL);
	return 0;
}
