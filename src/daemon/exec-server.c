/* GET /v1/sandboxes/{id}/exec-server: the Codex exec-server protocol over
 * a WebSocket, one JSON-RPC message per text frame ("jsonrpc" optional,
 * as the reference).  See exec-server.h for the threads and
 * docs/exec-server.md for the protocol subset and its limits. */
#include "daemon/exec-server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/ws-io.h"

void
ab_xs_fail (struct ab_xs_reply_s *out, int code, const char *fmt, ...)
{
	va_list ap;

	json_decref (out->result);
	out->result = NULL;
	out->code = code;
	va_start (ap, fmt);
	vsnprintf (out->msg, sizeof out->msg, fmt, ap);
	va_end (ap);
}

void
ab_xs_fail_agent (struct ab_xs_conn_s *x, struct ab_xs_reply_s *out, const ab_error_t *err)
{
	/* After an error the agent did not report itself the connection is
	 * unusable (agent-client.h): drop it, the next call reconnects. */
	if (err->kind == AB_E_SYSTEM || err->kind == AB_E_INTERNAL) {
		ab_agent_close (x->agent);
		x->agent = NULL;
	}
	switch (err->kind) {
	case AB_E_NOT_FOUND:
		ab_xs_fail (out, AB_XS_NOT_FOUND, "No such file or directory (os error 2): %s",
		            err->msg);
		break;
	case AB_E_INVALID: ab_xs_fail (out, AB_XS_BAD_PARAMS, "%s", err->msg); break;
	case AB_E_DENIED:
		ab_xs_fail (out, AB_XS_INTERNAL, "denied by the sandbox: %s", err->msg);
		break;
	default:
		ab_xs_fail (out, AB_XS_INTERNAL, "%s: %s", ab_error_kind_name (err->kind),
		            err->msg);
	}
}

int
ab_xs_send (struct ab_xs_conn_s *x, json_t *j)
{
	cleanup_free char *text = json_dumps (j, JSON_COMPACT);
	int rc;

	json_decref (j);
	if (!text)
		return -1;
	pthread_mutex_lock (&x->wlock);
	rc = ab_ws_send (x->r->fd, AB_WS_OP_TEXT, text, strlen (text), false);
	pthread_mutex_unlock (&x->wlock);
	return rc;
}

int
ab_xs_notify (struct ab_xs_conn_s *x, const char *method, json_t *params)
{
	return ab_xs_send (x, json_pack ("{s:s, s:o}", "method", method, "params", params));
}

/* {"id":ID,"result":{...,"KEY":"B64"}} without dumping B64 through
 * jansson. */
static int
send_spliced (struct ab_xs_conn_s *x, json_t *id, struct ab_xs_reply_s *rep)
{
	cleanup_free char *idtext = json_dumps (id, JSON_COMPACT | JSON_ENCODE_ANY);
	cleanup_free char *res = json_dumps (rep->result, JSON_COMPACT);
	cleanup_free char *text = NULL;
	size_t rl = res ? strlen (res) : 0;
	int rc = -1;

	json_decref (rep->result);
	rep->result = NULL;
	if (idtext && res && rl >= 2) {
		res[rl - 1] = 0; /* without its '}' */
		text = xasprintf ("{\"id\":%s,\"result\":%s%s\"%s\":\"%s\"}}", idtext, res,
		                  rl > 2 ? "," : "", rep->b64_key, rep->b64);
		pthread_mutex_lock (&x->wlock);
		rc = ab_ws_send (x->r->fd, AB_WS_OP_TEXT, text, strlen (text), false);
		pthread_mutex_unlock (&x->wlock);
	}
	free (rep->b64);
	rep->b64 = NULL;
	return rc;
}

int
ab_xs_answer (struct ab_xs_conn_s *x, json_t *id, struct ab_xs_reply_s *rep)
{
	json_t *m;

	if (rep->result && rep->b64)
		return send_spliced (x, id, rep);
	free (rep->b64);
	rep->b64 = NULL;
	if (rep->result)
		m = json_pack ("{s:O, s:o}", "id", id, "result", rep->result);
	else
		m = json_pack ("{s:O, s:{s:i, s:s}}", "id", id, "error", "code", rep->code,
		               "message", rep->msg);
	rep->result = NULL;
	return ab_xs_send (x, m);
}

/* After this long unused, the agent connection is pinged before use (and
 * remade if it went away meanwhile), so a quiet session's next call does
 * not fail on a stale connection. */
#define AGENT_IDLE_CHECK_MS 20000

ab_agent_conn_t *
ab_xs_agent (struct ab_xs_conn_s *x, ab_error_t *err)
{
	uint64_t now = ab_mono_ms ();
	ab_error_t perr = AB_ERROR_INIT;

	if (x->agent && now - x->agent_used_ms > AGENT_IDLE_CHECK_MS
	    && ab_agent_ping (x->agent, &perr) < 0) {
		ab_agent_close (x->agent);
		x->agent = NULL;
	}
	if (!x->agent)
		x->agent = ab_box_connect (x->r->d, x->b, err);
	x->agent_used_ms = now;
	return x->agent;
}

static void
make_session_id (char out[37])
{
	uint8_t u[16];

	if (getrandom (u, sizeof u, 0) != (ssize_t)sizeof u)
		memset (u, 0, sizeof u);
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* RFC 9562 version 4 */
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
	snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	          u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	          u[13], u[14], u[15]);
}

/* The sandbox's shell: /bin/bash when it runs there, else /bin/sh.
 * Probed by running it (the file service may not see /bin). */
static const char *
probe_shell (struct ab_xs_conn_s *x)
{
	char *const bash[] = { (char *)"/bin/bash", (char *)"-c", (char *)":", NULL };
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *out = NULL;
	int code = 127;

	if (!x->shell_path)
		x->shell_path =
		        xstrdup (ab_xs_run_capture (x, bash, &out, &code, &err) == 0 && code == 0
		                         ? "/bin/bash"
		                         : "/bin/sh");
	return x->shell_path;
}

static const char *
spec_env (const struct ab_box_s *b, const char *key)
{
	size_t n = strlen (key);

	for (char **e = b->spec.env; e && *e; e++)
		if (strncmp (*e, key, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* Every capability the reference names, true only for what we implement:
 * none of these optional features (docs/exec-server.md). */
static json_t *
capabilities (void)
{
	static const char *const names[] = {
		"networkProxyLaunch",
		"networkProxyReviewDomains",
		"networkProxyTransparentTcp",
		"credentialMasking",
		"credentialMaskingCustomProviders",
		"capabilityDiscoverySandbox",
		"fsWatchMissing",
		"capabilityDiscoveryV2",
		"environmentConfigRead",
		"httpHeaderEnvVars",
		"sandboxedFileStreaming",
		"fileWriteStreaming",
		"shellSnapshotV2",
		"windowsMxc",
		"linuxRootWritePreservesDevices",
		"linuxApprovedRootWritePreservesRestrictions",
	};
	json_t *c = json_object ();

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		json_object_set_new (c, names[i], json_false ());
	return c;
}

static json_t *
environment_info (struct ab_xs_conn_s *x)
{
	const struct ab_box_s *b = x->b;
	const char *shell = probe_shell (x), *home = spec_env (b, "HOME");
	const char *name = strrchr (shell, '/') + 1;
	cleanup_free char *cwd = ab_xs_path_uri (b, b->spec.workdir ? b->spec.workdir : "/", false);
	cleanup_free char *homeuri = ab_xs_path_uri (b,
	                                             home               ? home
	                                             : b->spec.uid == 0 ? "/root"
	                                                                : "/",
	                                             false);
	cleanup_free char *provider = xasprintf ("agentbox:%s", b->id);
	cleanup_free char *version = xasprintf ("agentbox-%s", b->backend);

	return json_pack ("{s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:[], s:[s], s:s, s:o}", "shell",
	                  "name", name, "path", shell, "executorVersion", version, "providerId",
	                  provider, "cwd", cwd, "userHomeDir", homeuri, "platformOs", "linux",
	                  "prependPathDirs", "temporaryDirectories", "file:///tmp", "tempDir",
	                  "file:///tmp", "capabilities", capabilities ());
}

static void
initialize (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	json_t *name = json_object_get (params, "clientName");

	if (x->initialize_seen)
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "initialize may only be sent once per connection");
	if (!json_is_object (params) || !json_is_string (name))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "initialize needs a string 'clientName'");
	x->initialize_seen = true;
	/* resumeSessionId is not implemented: a new session every time. */
	out->result = json_pack ("{s:s, s:o}", "sessionId", x->session_id, "environmentInfo",
	                         environment_info (x));
}

static bool
is_prefix (const char *method, const char *prefix)
{
	return strncmp (method, prefix, strlen (prefix)) == 0;
}

static void
dispatch (struct ab_xs_conn_s *x, const char *method, json_t *params, struct ab_xs_reply_s *out)
{
	if (strcmp (method, "initialize") == 0)
		return initialize (x, params, out);
	if (is_prefix (method, "environment/") && !x->initialize_seen)
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "client must call initialize before using environment methods");
	if (strcmp (method, "environment/info") == 0) {
		out->result = environment_info (x);
		return;
	}
	if (strcmp (method, "environment/status") == 0) {
		out->result = json_pack ("{s:s}", "status", "ready");
		return;
	}
	if ((is_prefix (method, "fs/") || is_prefix (method, "process/")
	     || is_prefix (method, "http/"))
	    && !x->initialized)
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "client must send initialized before using %s methods",
		                   is_prefix (method, "fs/")     ? "filesystem"
		                   : is_prefix (method, "http/") ? "http"
		                                                 : "process");
	if (strcmp (method, "process/start") == 0)
		return ab_xs_proc_start (x, params, out);
	if (strcmp (method, "process/write") == 0)
		return ab_xs_proc_write (x, params, out);
	if (strcmp (method, "process/signal") == 0)
		return ab_xs_proc_signal (x, params, out);
	if (strcmp (method, "process/terminate") == 0)
		return ab_xs_proc_terminate (x, params, out);
	if (ab_xs_fs (x, method, params, out))
		return;
	ab_xs_fail (out, AB_XS_UNKNOWN_METHOD, "agentbox exec-server does not implement `%s`",
	            method);
}

static void
parse_failure (struct ab_xs_conn_s *x, const char *why)
{
	struct ab_xs_reply_s rep = { 0 };
	json_t *id = json_integer (-1);

	ab_xs_fail (&rep, AB_XS_INVALID_REQUEST, "failed to parse JSON-RPC message: %s", why);
	ab_xs_answer (x, id, &rep);
	json_decref (id);
}

/* One client message: a request, a notification or a response. */
static void
message (struct ab_xs_conn_s *x, const char *text, size_t len)
{
	json_error_t je;
	json_t *j = json_loadb (text, len, JSON_REJECT_DUPLICATES, &je);
	json_t *id, *m;

	if (!j)
		return parse_failure (x, je.text);
	id = json_object_get (j, "id");
	m = json_object_get (j, "method");
	if (!json_is_object (j))
		parse_failure (x, "expected a JSON-RPC object");
	else if (m && !json_is_string (m))
		parse_failure (x, "'method' must be a string");
	else if (m && id && !json_is_integer (id) && !json_is_string (id))
		parse_failure (x, "'id' must be a number or a string");
	else if (m && id) {
		struct ab_xs_reply_s rep = { 0 };
		const char *method = json_string_value (m);
		json_t *params = json_object_get (j, "params");
		if (strcmp (method, "process/read") == 0 && x->initialized)
			ab_xs_proc_read (x, id, params); /* may answer from its own thread */
		else if (strcmp (method, "http/request") == 0 && x->initialized)
			ab_xs_http_request (x, id, params); /* answers from its own thread */
		else {
			dispatch (x, method, params, &rep);
			ab_xs_answer (x, id, &rep);
		}
	} else if (m) {
		/* Client notifications: only `initialized` means anything. */
		if (strcmp (json_string_value (m), "initialized") == 0 && x->initialize_seen)
			x->initialized = true;
	} else if (!id || (!json_object_get (j, "result") && !json_object_get (j, "error")))
		parse_failure (x, "neither a request, a notification nor a response");
	json_decref (j);
}

static void
close_with (struct ab_xs_conn_s *x, uint16_t code)
{
	uint8_t p[2] = { (uint8_t)(code >> 8), (uint8_t)code };

	pthread_mutex_lock (&x->wlock);
	ab_ws_send (x->r->fd, AB_WS_OP_CLOSE, p, sizeof p, false);
	pthread_mutex_unlock (&x->wlock);
}

static void
serve (struct ab_xs_conn_s *x)
{
	ab_error_t err = AB_ERROR_INIT;

	ab_ws_assembler_init (&x->r->io->ws, AB_XS_MAX_FRAME);
	for (;;) {
		struct ab_ws_msg_s m;
		int rc = ab_ws_recv (x->r->io, true, &m, &err);
		if (rc < 0) {
			close_with (x, err.kind == AB_E_LIMIT ? AB_WS_CLOSE_TOO_BIG
			                                      : AB_WS_CLOSE_PROTOCOL);
			break;
		}
		if (rc == 0)
			break;
		if (m.opcode == AB_WS_OP_CLOSE) {
			close_with (x, AB_WS_CLOSE_NORMAL);
			free (m.data);
			break;
		}
		if (m.opcode == AB_WS_OP_PING) {
			pthread_mutex_lock (&x->wlock);
			ab_ws_send (x->r->fd, AB_WS_OP_PONG, m.data, m.len, false);
			pthread_mutex_unlock (&x->wlock);
		} else if (m.opcode == AB_WS_OP_TEXT || m.opcode == AB_WS_OP_BINARY)
			message (x, (const char *)m.data, m.len);
		free (m.data);
	}
	shutdown (x->r->fd, SHUT_RDWR);
}

void
ab_api_exec_server (struct ab_req_s *r)
{
	struct ab_xs_conn_s x = { .r = r };

	x.b = ab_api_box (r, true);
	if (!x.b)
		return;
	if (ab_api_ws_handshake (r) == 0) {
		/* A Codex session is quiet while its model thinks: no idle
		 * timeout on reads (the send timeout still drops a client that
		 * stopped reading). */
		setsockopt (r->fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 0 },
		            sizeof (struct timeval));
		pthread_mutex_init (&x.wlock, NULL);
		pthread_mutex_init (&x.lock, NULL);
		pthread_cond_init (&x.cond, NULL);
		make_session_id (x.session_id);
		ab_metrics_inc ("exec_server_connections");
		serve (&x);
		ab_xs_proc_shutdown (&x);
		ab_agent_close (x.agent);
		free (x.shell_path);
		pthread_cond_destroy (&x.cond);
		pthread_mutex_destroy (&x.lock);
		pthread_mutex_destroy (&x.wlock);
	}
	ab_box_unref (r->d, x.b);
}
