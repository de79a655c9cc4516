/* Browser sessions (docs/browser.md): each one is its own Chromium in the
 * sandbox, started through the agent's process service as the sandbox
 * user, with its own profile under /tmp, DevTools on the sandbox's
 * loopback only (port 0: Chromium picks a free one and writes it to
 * DevToolsActivePort in the profile, read back through the agent's file
 * service), and every fetch through the sandbox's egress listener when the
 * sandbox has network "proxy".
 *
 * Chromium's own sandbox cannot start inside ours: its namespace sandbox
 * needs a nested user namespace, which our seccomp profile refuses
 * (SECURITY.md 6), and its setuid helper is inert under no_new_privs; so
 * it runs with --no-sandbox and our walls (namespaces, seccomp, Landlock,
 * cgroup limits, the egress proxy) are the walls around the page. */
#include "daemon/browser.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "session/egress-relay.h"

#define CHROMIUM          "/usr/bin/chromium"
#define LAUNCH_TIMEOUT_MS 20000
#define LAUNCH_POLL_MS    100
#define DEFAULT_WIDTH     1280
#define DEFAULT_HEIGHT    800
#define MAX_VIEWPORT      8192
#define ACTIVE_PORT_MAX   512

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ab_browser_s *sessions;

static void
session_free (struct ab_browser_s *s)
{
	free (s->browser_path);
	free (s->page_path);
	free (s->profile);
	pthread_mutex_destroy (&s->op_lock);
	free (s);
}

void
ab_browser_unref (struct ab_browser_s *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock (&sessions_lock);
	last = --s->refs == 0;
	pthread_mutex_unlock (&sessions_lock);
	if (last)
		session_free (s);
}

static void
unlink_locked (struct ab_browser_s *s)
{
	for (struct ab_browser_s **p = &sessions; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			s->refs--; /* the list's reference */
			return;
		}
}

/* Sessions of sandboxes that are gone: their Chromium died with the
 * sandbox's cgroup; only the record is left. */
static void
purge_gone (struct ab_daemon_s *d)
{
	pthread_mutex_lock (&sessions_lock);
	for (struct ab_browser_s **p = &sessions; *p;) {
		struct ab_browser_s *s = *p;
		ab_error_t ignored = AB_ERROR_INIT;
		struct ab_box_s *b = ab_registry_get (d, s->box_id, &ignored);
		bool gone = !b || ab_box_get_state (d, b) != AB_BOX_RUNNING;
		if (b)
			ab_box_unref (d, b);
		if (gone && --s->refs == 0) {
			*p = s->next;
			session_free (s);
		} else if (gone) {
			*p = s->next;
		} else
			p = &s->next;
	}
	pthread_mutex_unlock (&sessions_lock);
}

static unsigned
count_locked (const char *box_id)
{
	unsigned n = 0;

	for (struct ab_browser_s *s = sessions; s; s = s->next)
		n += strcmp (s->box_id, box_id) == 0;
	return n;
}

static struct ab_browser_s *
find (const char *box_id, const char *id)
{
	struct ab_browser_s *s;

	pthread_mutex_lock (&sessions_lock);
	for (s = sessions; s; s = s->next)
		if (strcmp (s->box_id, box_id) == 0 && strcmp (s->id, id) == 0) {
			s->refs++;
			break;
		}
	pthread_mutex_unlock (&sessions_lock);
	return s;
}

/* --- launch -------------------------------------------------------------- */

struct launch_s {
	bool headless;
	unsigned width, height;
};

static int
parse_launch (json_t *body, struct launch_s *l, ab_error_t *err)
{
	json_t *h = json_object_get (body, "headless"), *vp = json_object_get (body, "viewport");
	json_int_t w = DEFAULT_WIDTH, ht = DEFAULT_HEIGHT;

	l->headless = !h || json_is_true (h);
	if (h && !json_is_boolean (h))
		return ab_error (err, 0, AB_E_INVALID, "'headless' must be a boolean");
	if (vp && json_unpack (vp, "{s?I,s?I}", "width", &w, "height", &ht) < 0)
		return ab_error (err, 0, AB_E_INVALID, "'viewport' is {width, height}");
	if (w < 16 || w > MAX_VIEWPORT || ht < 16 || ht > MAX_VIEWPORT)
		return ab_error (err, 0, AB_E_INVALID, "viewport sides are 16..%d", MAX_VIEWPORT);
	l->width = (unsigned)w;
	l->height = (unsigned)ht;
	return 0;
}

/* The flags, each for a reason:
 *  --no-sandbox: see the top of this file.
 *  --remote-debugging-address/-port=0: DevTools on the sandbox's loopback,
 *    a free port (several sessions), written to DevToolsActivePort.
 *  --proxy-server with --proxy-bypass-list=<-loopback>: every request
 *    through the egress proxy, loopback ones too (Chromium otherwise goes
 *    direct to localhost, a door around the policy).
 *  background networking, component updates, sync, first-run, QUIC (UDP
 *    past an HTTP proxy), crash reports: no connection the page did not
 *    ask for. */
static char **
chromium_argv (struct ab_box_s *b, const struct launch_s *l, const char *profile)
{
	char **v = NULL;
	cleanup_free char *ud = xasprintf ("--user-data-dir=%s", profile);
	cleanup_free char *ws = xasprintf ("--window-size=%u,%u", l->width, l->height);
	static const char *const fixed[] = {
		"--no-sandbox",
		"--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-quic",
		"--disable-breakpad",
		"--disable-crash-reporter",
		"--disable-default-apps",
		"--disable-extensions",
		"--disable-domain-reliability",
		"--disable-client-side-phishing-detection",
		"--metrics-recording-only",
		"--password-store=basic",
		"--disable-dev-shm-usage",
		"--disable-gpu",
		"--mute-audio",
		"--hide-scrollbars",
		"--disable-features=MediaRouter,OptimizationHints,Translate",
	};

	ab_strv_push (&v, CHROMIUM);
	if (l->headless)
		ab_strv_push (&v, "--headless");
	for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
		ab_strv_push (&v, fixed[i]);
	ab_strv_push (&v, ud);
	ab_strv_push (&v, ws);
	if (b->spec.network == AB_NETWORK_PROXY) {
		cleanup_free char *px =
		        xasprintf ("--proxy-server=http://127.0.0.1:%d", AB_EGRESS_PORT);
		ab_strv_push (&v, px);
		ab_strv_push (&v, "--proxy-bypass-list=<-loopback>");
	}
	ab_strv_push (&v, "about:blank");
	return v;
}

static char **
chromium_env (struct ab_box_s *b, const struct launch_s *l, const char *profile)
{
	char **v = NULL;
	cleanup_free char *home = xasprintf ("HOME=%s", profile);
	cleanup_free char *tmp = xasprintf ("TMPDIR=%s", profile);

	for (char **e = b->spec.env; e && *e; e++)
		if (strncmp (*e, "HOME=", 5) != 0 && strncmp (*e, "DISPLAY=", 8) != 0
		    && strncmp (*e, "TMPDIR=", 7) != 0)
			ab_strv_push (&v, *e);
	ab_strv_push (&v, home);
	ab_strv_push (&v, tmp);
	if (!l->headless)
		ab_strv_push (&v, "DISPLAY=:99");
	return v;
}

static int
start_chromium (ab_agent_conn_t *c, struct ab_box_s *b, const struct launch_s *l,
                const char *profile, uint32_t *pid, ab_error_t *err)
{
	cleanup_strv char **argv = chromium_argv (b, l, profile);
	cleanup_strv char **env = chromium_env (b, l, profile);
	struct ab_agent_proc_spec_s ps = {
		.argv = argv,
		.env = env,
		.cwd = "/tmp",
		.uid = b->spec.uid,
		.gid = b->spec.gid,
		.detach = true,
		.grace_ms = 2000,
	};
	struct ab_agent_proc_s p;

	if (ab_agent_proc_start (c, &ps, &p, err) < 0)
		return ab_error_wrap (err, "starting %s in the sandbox", CHROMIUM);
	*pid = p.pid;
	return 0;
}

struct text_sink_s {
	char buf[ACTIVE_PORT_MAX];
	size_t len;
};

static int
text_data (void *ctx, const void *buf, size_t len, ab_error_t *err)
{
	struct text_sink_s *t = ctx;

	if (t->len + len >= sizeof t->buf)
		return ab_error (err, 0, AB_E_LIMIT, "DevToolsActivePort too long");
	memcpy (t->buf + t->len, buf, len);
	t->len += len;
	return 0;
}

/* Whether pid still runs; its exit, when not. */
static int
proc_state (ab_agent_conn_t *c, uint32_t pid, bool *running, struct ab_agent_exit_s *ex,
            ab_error_t *err)
{
	struct ab_agent_proc_info_s *v = NULL;
	size_t n = 0;

	if (ab_agent_proc_list (c, &v, &n, err) < 0)
		return -1;
	*running = false;
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid) {
			*running = v[i].running;
			*ex = v[i].exit;
		}
	ab_agent_proc_info_free (v, n);
	return 0;
}

static char *
exit_text (const struct ab_agent_exit_s *ex)
{
	if (WIFSIGNALED (ex->wait_status))
		return xasprintf ("killed by signal %d", WTERMSIG (ex->wait_status));
	return xasprintf ("exit status %d", WEXITSTATUS (ex->wait_status));
}

/* DevToolsActivePort: "PORT\n/devtools/browser/UUID\n", once Chromium
 * listens. */
static int
wait_devtools (ab_agent_conn_t *c, struct ab_browser_s *s, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/DevToolsActivePort", s->profile);
	uint64_t until = ab_mono_ms () + LAUNCH_TIMEOUT_MS;

	while (ab_mono_ms () < until) {
		struct text_sink_s t = { .len = 0 };
		struct ab_agent_file_sink_s sink = { .data = text_data, .ctx = &t };
		ab_error_t ferr = AB_ERROR_INIT;
		struct ab_agent_exit_s ex = { 0 };
		unsigned port = 0;
		char bpath[256];
		bool running;

		if (ab_agent_file_read (c, path, &sink, &ferr) == 0) {
			t.buf[t.len] = '\0';
			if (sscanf (t.buf, "%u\n%255s", &port, bpath) == 2 && port > 0
			    && port < 65536 && strncmp (bpath, "/devtools/browser/", 18) == 0) {
				s->port = (uint16_t)port;
				s->browser_path = xstrdup (bpath);
				return 0;
			}
		}
		if (proc_state (c, s->pid, &running, &ex, err) < 0)
			return -1;
		if (!running) {
			cleanup_free char *why = exit_text (&ex);
			return ab_error (err, 0, AB_E_SYSTEM, "the browser ended at launch (%s)",
			                 why);
		}
		usleep (LAUNCH_POLL_MS * 1000);
	}
	return ab_error (err, 0, AB_E_SYSTEM, "the browser did not open DevTools within %d s",
	                 LAUNCH_TIMEOUT_MS / 1000);
}

/* The first page target: the session's tab. */
static int
find_page (struct ab_daemon_s *d, struct ab_box_s *b, struct ab_browser_s *s, ab_error_t *err)
{
	json_t *list = ab_browser_http_json (d, b, s->port, "/json/list", err), *t;
	size_t i;

	if (!list)
		return -1;
	json_array_foreach (list, i, t)
	{
		const char *ty = json_string_value (json_object_get (t, "type"));
		const char *u = json_string_value (json_object_get (t, "webSocketDebuggerUrl"));
		const char *p = u ? strstr (u, "/devtools/page/") : NULL;
		if (ty && strcmp (ty, "page") == 0 && p) {
			s->page_path = xstrdup (p);
			break;
		}
	}
	json_decref (list);
	return s->page_path ? 0 : ab_error (err, 0, AB_E_SYSTEM, "the browser has no page");
}

static void
new_id (char id[AB_BROWSER_ID_LEN + 1])
{
	unsigned char raw[AB_BROWSER_ID_LEN / 2];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort ();
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (id + 2 * i, 3, "%02x", raw[i]);
}

/* Reserve a slot: the session is in the list (not yet usable: no page)
 * so that ten concurrent launches cannot make eleven. */
static struct ab_browser_s *
reserve (struct ab_box_s *b, const struct launch_s *l, ab_error_t *err)
{
	struct ab_browser_s *s;

	pthread_mutex_lock (&sessions_lock);
	if (count_locked (b->id) >= AB_BROWSER_MAX_SESSIONS) {
		pthread_mutex_unlock (&sessions_lock);
		ab_error (err, 0, AB_E_LIMIT, "tab limit reached: %d", AB_BROWSER_MAX_SESSIONS);
		return NULL;
	}
	s = xcalloc (1, sizeof *s);
	new_id (s->id);
	snprintf (s->box_id, sizeof s->box_id, "%s", b->id);
	s->profile = xasprintf ("/tmp/agentbox-browser-%s", s->id);
	s->headless = l->headless;
	s->width = l->width;
	s->height = l->height;
	s->refs = 2; /* the list's and the caller's */
	pthread_mutex_init (&s->op_lock, NULL);
	s->next = sessions;
	sessions = s;
	pthread_mutex_unlock (&sessions_lock);
	return s;
}

static int
launch (struct ab_daemon_s *d, struct ab_box_s *b, struct ab_browser_s *s, const struct launch_s *l,
        ab_error_t *err)
{
	ab_agent_conn_t *c = ab_box_connect (d, b, err);
	int rc;

	if (!c)
		return -1;
	if (!l->headless && ab_desktop_ensure (d, b, err) < 0) {
		ab_agent_close (c);
		return -1;
	}
	rc = start_chromium (c, b, l, s->profile, &s->pid, err) < 0 || wait_devtools (c, s, err) < 0
	             ? -1
	             : 0;
	ab_agent_close (c);
	return rc < 0 ? -1 : find_page (d, b, s, err);
}

static json_t *
session_json (const struct ab_browser_s *s)
{
	return json_pack ("{s:s,s:i,s:b,s:s}", "session", s->id, "pid", (json_int_t)s->pid,
	                  "headless", s->headless, "cdp_path",
	                  s->browser_path ? s->browser_path : "");
}

void
ab_api_browser_launch (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *body = NULL;
	struct launch_s l = { .headless = true };
	struct ab_box_s *b = ab_api_box (r, true);
	struct ab_browser_s *s = NULL;

	if (!b)
		return;
	purge_gone (r->d);
	if (ab_req_body_json (r, &body, &err) < 0 || parse_launch (body, &l, &err) < 0
	    || !(s = reserve (b, &l, &err)))
		ab_resp_error (r, &err);
	else if (launch (r->d, b, s, &l, &err) < 0) {
		ab_log (AB_LOG_INFO, "browser launch in %s failed: %s", b->id, err.msg);
		ab_browser_end (r->d, b, s);
		ab_resp_error (r, &err);
	} else {
		ab_log (AB_LOG_INFO, "browser %s in %s: pid %u, DevTools on port %u", s->id, b->id,
		        (unsigned)s->pid, (unsigned)s->port);
		ab_resp_json (r, 201, session_json (s));
	}
	ab_browser_unref (s);
	json_decref (body);
	ab_box_unref (r->d, b);
}

/* --- lookup, crash, close ------------------------------------------------- */

/* rm -rf as the sandbox user: the profile (and Chromium's temporary
 * files, TMPDIR) lie under /tmp, outside the agent's file roots. */
static void
remove_profile (ab_agent_conn_t *c, struct ab_box_s *b, const struct ab_browser_s *s)
{
	char *argv[] = { "/bin/rm", "-rf", "--", s->profile, NULL };
	char *env[] = { "PATH=/usr/bin:/bin", NULL };
	struct ab_agent_proc_spec_s ps = {
		.argv = argv,
		.env = env,
		.cwd = "/",
		.uid = b->spec.uid,
		.gid = b->spec.gid,
		.detach = true,
	};
	struct ab_agent_proc_s p;
	ab_error_t ignored = AB_ERROR_INIT;

	ab_agent_proc_start (c, &ps, &p, &ignored);
}

void
ab_browser_end (struct ab_daemon_s *d, struct ab_box_s *b, struct ab_browser_s *s)
{
	ab_error_t ignored = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_box_connect (d, b, &ignored);

	pthread_mutex_lock (&sessions_lock);
	unlink_locked (s);
	pthread_mutex_unlock (&sessions_lock);
	if (!c)
		return;
	/* TERM, then KILL: the renderers end when their browser's IPC closes;
	 * the sandbox's cgroup ends anything left at teardown. */
	if (s->pid) {
		bool running = true;
		struct ab_agent_exit_s ex;
		ab_agent_proc_signal (c, s->pid, SIGTERM, &ignored);
		for (int i = 0; i < 30 && running; i++) {
			usleep (100 * 1000);
			if (proc_state (c, s->pid, &running, &ex, &ignored) < 0)
				break;
		}
		if (running)
			ab_agent_proc_signal (c, s->pid, SIGKILL, &ignored);
	}
	remove_profile (c, b, s);
	ab_agent_close (c);
}

struct ab_browser_s *
ab_browser_get (struct ab_req_s *r, struct ab_box_s *b)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_browser_s *s = find (b->id, r->params[1]);
	ab_agent_conn_t *c;
	struct ab_agent_exit_s ex = { 0 };
	bool running = false;

	if (!s || !s->page_path) {
		ab_browser_unref (s);
		ab_resp_fail (r, 404, "not_found", "no browser session %s in sandbox %s",
		              r->params[1], b->id);
		return NULL;
	}
	if (!(c = ab_box_connect (r->d, b, &err))
	    || proc_state (c, s->pid, &running, &ex, &err) < 0) {
		ab_agent_close (c);
		ab_browser_unref (s);
		ab_resp_error (r, &err);
		return NULL;
	}
	ab_agent_close (c);
	if (!running) {
		cleanup_free char *why = exit_text (&ex);
		ab_log (AB_LOG_WARN, "browser %s in %s crashed (%s)", s->id, b->id, why);
		ab_browser_end (r->d, b, s);
		ab_browser_unref (s);
		ab_resp_fail (r, 410, "browser_crashed",
		              "the browser crashed (%s); the session is gone", why);
		return NULL;
	}
	return s;
}

void
ab_api_browser_op (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *args = NULL;
	struct ab_box_s *b = ab_api_box (r, true);
	struct ab_browser_s *s;

	if (!b)
		return;
	if ((s = ab_browser_get (r, b))) {
		if (ab_req_body_json (r, &args, &err) < 0)
			ab_resp_error (r, &err);
		else {
			pthread_mutex_lock (&s->op_lock);
			ab_browser_run_op (r, b, s, r->params[2], args);
			pthread_mutex_unlock (&s->op_lock);
		}
		ab_browser_unref (s);
	}
	json_decref (args);
	ab_box_unref (r->d, b);
}

void
ab_api_browser_close (struct ab_req_s *r)
{
	struct ab_box_s *b = ab_api_box (r, true);
	struct ab_browser_s *s;

	if (!b)
		return;
	if ((s = find (b->id, r->params[1]))) {
		ab_browser_end (r->d, b, s);
		ab_browser_unref (s);
		ab_resp_empty (r, 204);
	} else
		ab_resp_fail (r, 404, "not_found", "no browser session %s in sandbox %s",
		              r->params[1], b->id);
	ab_box_unref (r->d, b);
}

void
ab_api_browser_list (struct ab_req_s *r)
{
	struct ab_box_s *b = ab_api_box (r, true);
	json_t *arr;

	if (!b)
		return;
	arr = json_array ();
	pthread_mutex_lock (&sessions_lock);
	for (struct ab_browser_s *s = sessions; s; s = s->next)
		if (strcmp (s->box_id, b->id) == 0 && s->page_path)
			json_array_append_new (arr, session_json (s));
	pthread_mutex_unlock (&sessions_lock);
	ab_resp_json (r, 200, json_pack ("{s:o}", "sessions", arr));
	ab_box_unref (r->d, b);
}
