/* The sandbox's desktop and its VNC door (docs/browser.md):
 *
 *   spec "desktop": true (`--desktop`) -> on first use, Xvfb :99 and x11vnc
 *       on the sandbox's loopback (port 5900), as the sandbox user, the VNC
 *       password in a file in the sandbox (written through the process's
 *       stdin: never on a command line);
 *   GET /v1/sandboxes/{id}/desktop -> {display, vnc_port, password} (the
 *       daemon's own credentials);
 *   GET /v1/sandboxes/{id}/vnc -> a WebSocket (subprotocol "binary")
 *       relayed to x11vnc through the agent's port relay.
 *
 * The door's hardening, after the seed's VNC proxy: the sandbox's port
 * token required (?token= or Authorization: Bearer; digests compared in
 * constant time; a sandbox without one is always refused), whatever other
 * credential came with the request; an Origin allow-list (loopback origins
 * only); messages from the client at most 1 MiB; a ping every 27 s and the
 * connection closed when no pong came for 30 s; a write that waits 10 s
 * ends it; errors in the seed's order: 401 bad token, 404 no such running
 * sandbox or no desktop, 502 VNC unreachable. */
#include "daemon/browser.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "net/ws-io.h"

#define VNC_PORT         5900
#define DESKTOP_DIR      "/tmp/agentbox-desktop"
#define PASSWD_FILE      DESKTOP_DIR "/passwd"
#define VNC_MAX_MESSAGE  (1U << 20)
#define PING_MS_DEFAULT  27000
#define PONG_MS_DEFAULT  30000
#define WRITE_TIMEOUT_S  10
#define START_TIMEOUT_MS 10000
#define PING_ENV         "AGENTBOX_VNC_PING_INTERVAL"
#define PONG_ENV         "AGENTBOX_VNC_PONG_TIMEOUT"

static pthread_mutex_t desktop_lock = PTHREAD_MUTEX_INITIALIZER;

static int
vnc_stream (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	ab_agent_conn_t *c = ab_box_connect (d, b, err);
	int fd = c ? ab_agent_port_open (&c, VNC_PORT, err) : -1;

	ab_agent_close (c);
	return fd;
}

/* Run argv as the sandbox user with `in` on stdin; its stdout (at most
 * cap - 1 bytes) in out; 0 when it exited 0. */
static int
run_in (struct ab_daemon_s *d, struct ab_box_s *b, char **argv, const char *in, char *out,
        size_t cap, ab_error_t *err)
{
	char *env[] = { "PATH=/usr/bin:/bin", "HOME=/tmp", NULL };
	struct ab_agent_proc_spec_s ps = { .argv = argv,
		                           .env = env,
		                           .cwd = "/",
		                           .uid = b->spec.uid,
		                           .gid = b->spec.gid,
		                           .stdin_open = in != NULL };
	ab_agent_conn_t *c = ab_box_connect (d, b, err);
	struct ab_agent_proc_s p;
	struct ab_agent_event_s ev;
	size_t have = 0;
	int rc = -1;

	if (!c || ab_agent_proc_start (c, &ps, &p, err) < 0) {
		ab_agent_close (c);
		return -1;
	}
	if (in
	    && (ab_agent_proc_write_stdin (c, p.pid, in, strlen (in), err) < 0
	        || ab_agent_proc_close_stdin (c, p.pid, err) < 0)) {
		ab_agent_close (c);
		return -1;
	}
	while (ab_agent_proc_next_event (c, &p, &ev, START_TIMEOUT_MS, err) == 1) {
		if (ev.kind == AB_AGENT_EV_STDOUT && out && have + ev.len < cap) {
			memcpy (out + have, ev.data, ev.len);
			have += ev.len;
		} else if (ev.kind == AB_AGENT_EV_EXIT) {
			rc = WIFEXITED (ev.exit.wait_status)
			                     && WEXITSTATUS (ev.exit.wait_status) == 0
			             ? 0
			             : ab_error (err, 0, AB_E_SYSTEM, "%s failed in the sandbox",
			                         argv[0]);
			break;
		}
	}
	if (out)
		out[have] = '\0';
	ab_agent_close (c);
	return rc;
}

static int
start_detached (struct ab_daemon_s *d, struct ab_box_s *b, char **argv, ab_error_t *err)
{
	char *env[] = { "PATH=/usr/bin:/bin", "HOME=" DESKTOP_DIR, "DISPLAY=:99", NULL };
	struct ab_agent_proc_spec_s ps = { .argv = argv,
		                           .env = env,
		                           .cwd = DESKTOP_DIR,
		                           .uid = b->spec.uid,
		                           .gid = b->spec.gid,
		                           .detach = true };
	ab_agent_conn_t *c = ab_box_connect (d, b, err);
	struct ab_agent_proc_s p;
	int rc = c ? ab_agent_proc_start (c, &ps, &p, err) : -1;

	ab_agent_close (c);
	return rc;
}

/* 8 characters (a VNC password's length) from getrandom. */
static void
new_password (char pw[9])
{
	static const char alpha[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
	unsigned char raw[8];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort ();
	for (int i = 0; i < 8; i++)
		pw[i] = alpha[raw[i] % (sizeof alpha - 1)];
	pw[8] = '\0';
}

static int
start_desktop (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	char *mk[] = { "/bin/sh", "-c",
		       "umask 077 && mkdir -p " DESKTOP_DIR " && cat >" PASSWD_FILE, NULL };
	/* -nolisten local: no abstract-namespace socket, which processes the
	 * agent starts later could not reach (each runs in a Landlock domain
	 * of its own, and ABI 6 scopes abstract unix sockets to the domain);
	 * clients use /tmp/.X11-unix/X99. */
	char *xvfb[] = { "Xvfb",      ":99", "-screen",   "0",     "1280x800x24",
		         "-nolisten", "tcp", "-nolisten", "local", NULL };
	char *vnc[] = { "x11vnc", "-display",    ":99",       "-localhost", "-rfbport",
		        "5900",   "-passwdfile", PASSWD_FILE, "-forever",   "-shared",
		        "-quiet", "-noxdamage",  NULL };
	char *wait_x[] = { "/bin/sh", "-c",
		           "i=0; while [ ! -S /tmp/.X11-unix/X99 ] && [ $i -lt 100 ]; do "
		           "sleep 0.1; i=$((i+1)); done; [ -S /tmp/.X11-unix/X99 ]",
		           NULL };
	char pw[10];
	uint64_t until;

	new_password (pw);
	pw[8] = '\n';
	pw[9] = '\0';
	if (run_in (d, b, mk, pw, NULL, 0, err) < 0 || start_detached (d, b, xvfb, err) < 0)
		return ab_error_wrap (err, "starting the desktop");
	explicit_bzero (pw, sizeof pw);
	/* x11vnc gives up at once without a display: wait for Xvfb's socket */
	if (run_in (d, b, wait_x, NULL, NULL, 0, err) < 0)
		return ab_error_wrap (err, "Xvfb did not start");
	if (start_detached (d, b, vnc, err) < 0)
		return ab_error_wrap (err, "starting x11vnc");
	until = ab_mono_ms () + START_TIMEOUT_MS;
	while (ab_mono_ms () < until) {
		ab_error_t ignored = AB_ERROR_INIT;
		int fd = vnc_stream (d, b, &ignored);
		if (fd >= 0) {
			close (fd);
			return 0;
		}
		usleep (100 * 1000);
	}
	return ab_error (err, 0, AB_E_SYSTEM, "x11vnc did not listen within %d s",
	                 START_TIMEOUT_MS / 1000);
}

int
ab_desktop_ensure (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	ab_error_t ignored = AB_ERROR_INIT;
	int fd, rc = 0;

	if (!b->spec.desktop)
		return ab_error (err, 0, AB_E_NOT_FOUND,
		                 "sandbox %s has no desktop (create it with --desktop)", b->id);
	pthread_mutex_lock (&desktop_lock);
	if ((fd = vnc_stream (d, b, &ignored)) >= 0)
		close (fd);
	else
		rc = start_desktop (d, b, err);
	pthread_mutex_unlock (&desktop_lock);
	return rc;
}

void
ab_api_desktop (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_api_box (r, true);
	char *cat[] = { "/bin/cat", PASSWD_FILE, NULL };
	char pw[64];

	if (!b)
		return;
	if (ab_desktop_ensure (r->d, b, &err) < 0
	    || run_in (r->d, b, cat, NULL, pw, sizeof pw, &err) < 0)
		ab_resp_error (r, &err);
	else {
		pw[strcspn (pw, "\n")] = '\0';
		ab_resp_json (r, 200,
		              json_pack ("{s:s,s:i,s:s}", "display", ":99", "vnc_port", VNC_PORT,
		                         "password", pw));
		explicit_bzero (pw, sizeof pw);
	}
	ab_box_unref (r->d, b);
}

/* --- the WebSocket relay ---------------------------------------------------- */

struct vnc_s {
	struct ab_req_s *r;
	int vnc;
	pthread_mutex_t wlock;
	uint64_t last_pong_ms;
	volatile int done;
	atomic_bool reader_ended; /* client_to_vnc returned: the client's side needs no shutdown */
	pthread_mutex_t plock;
};

static int
ws_out (struct vnc_s *v, int op, const void *buf, size_t len)
{
	int rc;

	pthread_mutex_lock (&v->wlock);
	rc = ab_ws_send (v->r->fd, op, buf, len, false);
	pthread_mutex_unlock (&v->wlock);
	return rc;
}

static void
close_with (struct vnc_s *v, uint16_t code)
{
	uint8_t p[2] = { (uint8_t)(code >> 8), (uint8_t)code };

	ws_out (v, AB_WS_OP_CLOSE, p, sizeof p);
}

/* Client to VNC: binary (and text) messages' bytes; pings answered,
 * pongs noted; a message over 1 MiB closes with 1009. */
static void *
client_to_vnc (void *arg)
{
	struct vnc_s *v = arg;

	while (!v->done) {
		ab_error_t err = AB_ERROR_INIT;
		struct ab_ws_msg_s m = { 0 };
		int rc = ab_ws_recv (v->r->io, true, &m, &err);
		if (rc <= 0) {
			if (rc < 0 && err.kind == AB_E_LIMIT)
				close_with (v, AB_WS_CLOSE_TOO_BIG);
			else if (rc < 0 && err.kind == AB_E_INVALID)
				close_with (v, AB_WS_CLOSE_PROTOCOL);
			break;
		}
		if (m.opcode == AB_WS_OP_CLOSE) {
			close_with (v, AB_WS_CLOSE_NORMAL);
			free (m.data);
			break;
		}
		if (m.opcode == AB_WS_OP_PING)
			ws_out (v, AB_WS_OP_PONG, m.data, m.len);
		else if (m.opcode == AB_WS_OP_PONG) {
			pthread_mutex_lock (&v->plock);
			v->last_pong_ms = ab_mono_ms ();
			pthread_mutex_unlock (&v->plock);
		} else if (m.len && ab_http_write (v->vnc, m.data, m.len) < 0) {
			free (m.data);
			break;
		}
		free (m.data);
	}
	atomic_store (&v->reader_ended, true);
	v->done = 1;
	shutdown (v->vnc, SHUT_RDWR);
	return NULL;
}

static int
env_ms (const char *name, int def)
{
	const char *s = getenv (name);
	ab_error_t ignored = AB_ERROR_INIT;
	uint64_t ms;

	if (!s || ab_parse_duration (s, &ms, &ignored) < 0 || ms == 0 || ms > INT32_MAX)
		return def;
	return (int)ms;
}

/* VNC to client, and the ping timer. */
static void
vnc_to_client (struct vnc_s *v)
{
	int ping_ms = env_ms (PING_ENV, PING_MS_DEFAULT),
	    pong_ms = env_ms (PONG_ENV, PONG_MS_DEFAULT);
	uint64_t next_ping = ab_mono_ms () + (uint64_t)ping_ms;
	char buf[64 * 1024];

	while (!v->done) {
		struct pollfd p = { .fd = v->vnc, .events = POLLIN };
		uint64_t now = ab_mono_ms (), last;
		int n = poll (&p, 1, now < next_ping ? (int)(next_ping - now) : 0);
		ssize_t got;

		if (n < 0 && errno != EINTR)
			break;
		now = ab_mono_ms ();
		pthread_mutex_lock (&v->plock);
		last = v->last_pong_ms;
		pthread_mutex_unlock (&v->plock);
		if (now - last > (uint64_t)pong_ms) {
			ab_log (AB_LOG_INFO, "vnc client of %s sent no pong for %d ms: closed",
			        v->r->params[0], pong_ms);
			close_with (v, AB_WS_CLOSE_GOING_AWAY);
			break;
		}
		if (now >= next_ping) {
			if (ws_out (v, AB_WS_OP_PING, "agentbox", 8) < 0)
				break;
			next_ping = now + (uint64_t)ping_ms;
		}
		if (n <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		got = recv (v->vnc, buf, sizeof buf, 0);
		if (got <= 0 || ws_out (v, AB_WS_OP_BINARY, buf, (size_t)got) < 0)
			break;
	}
	v->done = 1;
	/* Ends the reader's ab_ws_recv when it still waits.  Not after it
	 * ended itself (a 1009, a close): the client may still be sending, and
	 * the server's linger must read that rest, or closing with it unread
	 * resets the connection before the client reads our close frame. */
	if (!atomic_load (&v->reader_ended))
		shutdown (v->r->fd, SHUT_RDWR);
}

static void
relay (struct ab_req_s *r, int vnc)
{
	struct vnc_s v = { .r = r, .vnc = vnc, .last_pong_ms = ab_mono_ms () };
	struct timeval snd = { .tv_sec = WRITE_TIMEOUT_S };
	pthread_t t;

	pthread_mutex_init (&v.wlock, NULL);
	pthread_mutex_init (&v.plock, NULL);
	setsockopt (r->fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
	setsockopt (vnc, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
	r->io->deadline_ms = 0;
	ab_ws_assembler_init (&r->io->ws, VNC_MAX_MESSAGE);
	if (pthread_create (&t, NULL, client_to_vnc, &v) == 0) {
		vnc_to_client (&v);
		pthread_join (t, NULL);
	}
	pthread_mutex_destroy (&v.wlock);
	pthread_mutex_destroy (&v.plock);
}

static bool
wants_binary (const struct ab_req_s *r)
{
	size_t len = 0;
	const char *v = ab_http_io_field (r->io, "sec-websocket-protocol", &len);
	cleanup_free char *s = v ? xstrndup (v, len) : NULL;

	return s && strstr (s, "binary") != NULL;
}

void
ab_api_vnc (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_registry_get (r->d, r->params[0], &err);
	size_t olen = 0;
	const char *origin = ab_http_io_field (r->io, "origin", &olen);
	int fd;

	r->close = true;
	if (!b || !ab_browser_request_token_ok (b, r->io)) {
		ab_resp_fail (r, 401, "unauthorized", "missing or wrong sandbox token");
	} else if (origin && !ab_browser_origin_ok (origin, olen)) {
		ab_resp_fail (r, 403, "forbidden", "origin not allowed");
	} else if (ab_box_get_state (r->d, b) != AB_BOX_RUNNING || !b->spec.desktop) {
		ab_resp_fail (r, 404, "not_found", "sandbox %s has no running desktop", b->id);
	} else if (ab_desktop_ensure (r->d, b, &err) < 0 || (fd = vnc_stream (r->d, b, &err)) < 0) {
		ab_resp_fail (r, 502, "bad_gateway", "VNC is unreachable in sandbox %s", b->id);
	} else {
		r->resp_headers = wants_binary (r) ? "Sec-WebSocket-Protocol: binary\r\n" : NULL;
		if (ab_api_ws_handshake (r) == 0)
			relay (r, fd);
		close (fd);
	}
	if (b)
		ab_box_unref (r->d, b);
}
