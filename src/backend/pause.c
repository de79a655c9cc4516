/* Pause and resume of a running service-mode sandbox, one pair per
 * backend, callable from any process (the daemon) with what
 * ab_sandbox_attach gives: the backend's sandbox id, its monitor and its
 * service socket.
 *
 *   native   the cgroup freezer (isolate/cgroup-freeze.c): every task of
 *            the sandbox, the agent included, stops in the kernel
 *   gvisor   `runsc pause` / `runsc resume`: the sentry stops every task
 *   docker   `docker pause` / `docker unpause` (the container's freezer)
 *   microvm  QEMU's QMP `stop` / `cont` on the socket beside the service
 *            socket: the vCPUs stop, the guest uses no CPU
 *
 * Each is idempotent: pausing what is paused and resuming what runs is 0,
 * so a daemon that died between the call and writing its state can just
 * say it again. */
#include "backend/backend.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend/docker-internal.h"
#include "backend/gvisor-internal.h"
#include "backend/monitor.h"
#include "backend/pause.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"
#include "isolate/cgroup.h"

#define TOOL_OUT_MAX   2048
#define QMP_TIMEOUT_MS 5000
#define QMP_LINE_MAX   (64 * 1024)
#define QMP_MAX_EVENTS 64 /* events QEMU may send before a command's answer */

/* A backend's two slots over its verb (pause = true, resume = false). */
#define PAUSE_SLOTS(be)                                                                            \
	int ab_##be##_pause (struct ab_sandbox_s *sb, ab_error_t *err)                             \
	{                                                                                          \
		return be##_verb (sb, true, err);                                                  \
	}                                                                                          \
	int ab_##be##_resume (struct ab_sandbox_s *sb, ab_error_t *err)                            \
	{                                                                                          \
		return be##_verb (sb, false, err);                                                 \
	}

static int
check_attached (const struct ab_sandbox_s *sb, ab_error_t *err)
{
	if (!sb->service_socket || !sb->id[0])
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "pause: the sandbox is not a service-mode sandbox");
	return 0;
}

int
ab_native_pause (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return ab_cgroup_freeze_id (sb->id, true, err);
}

int
ab_native_resume (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return ab_cgroup_freeze_id (sb->id, false, err);
}

/* Run a tool; exit 0, or an output that says the state is already the
 * wanted one, is success. */
static int
run_verb (char **argv, const char *already, ab_error_t *err)
{
	char out[TOOL_OUT_MAX];
	int st = ab_run_tool (argv, out, sizeof out, AB_GVISOR_TOOL_TIMEOUT_MS, err);

	if (st == 0 || (st > 0 && already && strstr (out, already)))
		return 0;
	if (st < 0)
		return -1;
	out[strcspn (out, "\n")] = '\0';
	return ab_error (err, 0, AB_E_SYSTEM, "%s %s: exit %d: %s", argv[0], argv[1], st, out);
}

/* `runsc state` says "status": "paused" or "running". */
static int
runsc_status (const struct ab_gvisor_s *g, char *out, size_t cap, ab_error_t *err)
{
	const char *cmd[] = { "state", g->cid, NULL };
	cleanup_strv char **argv = ab_runsc_argv (g, cmd);

	return ab_run_tool (argv, out, cap, AB_GVISOR_TOOL_TIMEOUT_MS, err) == 0 ? 0 : -1;
}

static int
gvisor_verb (struct ab_sandbox_s *sb, bool pause, ab_error_t *err)
{
	struct ab_gvisor_s g = { 0 };
	char out[TOOL_OUT_MAX];
	int r = -1;

	if (check_attached (sb, err) < 0)
		return -1;
	if ((g.runsc = ab_runsc_find (err)) && ab_runsc_platform (&g.platform, err) == 0) {
		g.dir = xasprintf ("%s.d", sb->service_socket);
		g.cid = xasprintf ("%s%s", AB_GVISOR_CID_PREFIX, sb->id);
		if (runsc_status (&g, out, sizeof out, err) < 0)
			r = ab_error_wrap (err, "runsc state %s", g.cid);
		else if (strstr (out, pause ? "\"paused\"" : "\"running\""))
			r = 0;
		else {
			const char *cmd[] = { pause ? "pause" : "resume", g.cid, NULL };
			cleanup_strv char **argv = ab_runsc_argv (&g, cmd);
			r = run_verb (argv, NULL, err);
		}
	}
	free (g.runsc);
	free (g.platform);
	free (g.dir);
	free (g.cid);
	return r;
}

PAUSE_SLOTS (gvisor)

static int
docker_verb (struct ab_sandbox_s *sb, bool pause, ab_error_t *err)
{
	cleanup_free char *name = xasprintf ("agentbox-%s", sb->id);
	char *argv[] = { (char *)ab_docker_client (), (char *)(pause ? "pause" : "unpause"), name,
		         NULL };

	if (check_attached (sb, err) < 0)
		return -1;
	return run_verb (argv, pause ? "is already paused" : "is not paused", err);
}

PAUSE_SLOTS (docker)

/* --- microvm: QMP ---------------------------------------------------------- */

char *
ab_microvm_qmp_path (const char *service_socket)
{
	struct sockaddr_un sun;

	if (!service_socket || strlen (service_socket) + 4 >= sizeof sun.sun_path)
		return NULL;
	return xasprintf ("%s.qmp", service_socket);
}

struct qmp_s {
	int fd;
	size_t len;
	char buf[QMP_LINE_MAX];
};

/* The next JSON object from QEMU (one per line; a line that does not
 * parse is skipped). */
static json_t *
qmp_next (struct qmp_s *q, ab_error_t *err)
{
	for (;;) {
		char *nl = memchr (q->buf, '\n', q->len);
		if (nl) {
			json_t *j = json_loadb (q->buf, (size_t)(nl - q->buf), 0, NULL);
			q->len -= (size_t)(nl + 1 - q->buf);
			memmove (q->buf, nl + 1, q->len);
			if (j)
				return j;
			continue;
		}
		if (q->len == sizeof q->buf)
			return ab_error (err, 0, AB_E_SYSTEM, "QMP: a line over %d bytes",
			                 QMP_LINE_MAX),
			       NULL;
		ssize_t n = read (q->fd, q->buf + q->len, sizeof q->buf - q->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ab_error (err, n < 0 ? errno : 0, AB_E_SYSTEM, "QMP: %s",
			                 n < 0 ? "no answer from QEMU" : "QEMU closed its monitor"),
			       NULL;
		q->len += (size_t)n;
	}
}

/* One command: its "return" is 0, its "error" an error with QEMU's text;
 * events before the answer are skipped. */
static int
qmp_call (struct qmp_s *q, const char *cmd, ab_error_t *err)
{
	cleanup_free char *line = xasprintf ("{\"execute\": \"%s\"}\n", cmd);

	if (ab_write_all (q->fd, line, strlen (line)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "QMP %s: write", cmd);
	for (int i = 0; i < QMP_MAX_EVENTS; i++) {
		json_t *j = qmp_next (q, err), *e;
		bool answered;
		if (!j)
			return ab_error_wrap (err, "QMP %s", cmd);
		e = json_object_get (j, "error");
		answered = json_object_get (j, "return") != NULL;
		if (e) {
			const char *desc = json_string_value (json_object_get (e, "desc"));
			ab_error (err, 0, AB_E_SYSTEM, "QMP %s: %s", cmd, desc ? desc : "error");
			json_decref (j);
			return -1;
		}
		json_decref (j);
		if (answered)
			return 0;
	}
	return ab_error (err, 0, AB_E_SYSTEM, "QMP %s: no answer among QEMU's events", cmd);
}

/* Connect, take the greeting, leave capabilities negotiation, then
 * `stop` or `cont` (both no-ops on a VM already in that state). */
static int
microvm_verb (struct ab_sandbox_s *sb, bool pause, ab_error_t *err)
{
	cleanup_free char *path = NULL;
	cleanup_free struct qmp_s *q = NULL;
	struct timeval tv = { .tv_sec = QMP_TIMEOUT_MS / 1000 };
	json_t *hello;
	int r;

	if (check_attached (sb, err) < 0)
		return -1;
	if (!(path = ab_microvm_qmp_path (sb->service_socket)))
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "this microVM has no QMP socket (its service socket path is too "
		                 "long)");
	q = xcalloc (1, sizeof *q);
	if ((q->fd = ab_unix_connect (path, err)) < 0)
		return ab_error_wrap (err, "the microVM's QMP socket (started by an agentbox "
		                           "without microVM pause?)");
	setsockopt (q->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt (q->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (!(hello = qmp_next (q, err)) || !json_object_get (hello, "QMP"))
		r = hello ? ab_error (err, 0, AB_E_SYSTEM, "QMP: no greeting from QEMU") : -1;
	else
		r = qmp_call (q, "qmp_capabilities", err) == 0
		                    && qmp_call (q, pause ? "stop" : "cont", err) == 0
		            ? 0
		            : -1;
	json_decref (hello);
	close (q->fd);
	return r;
}

PAUSE_SLOTS (microvm)
