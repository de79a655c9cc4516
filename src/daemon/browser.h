/* The browser inside a sandbox (docs/browser.md): Debian's chromium started
 * through the agent's process service as the sandbox user, driven over the
 * DevTools protocol (CDP) on the sandbox's own loopback, reached through
 * the agent's port relay (never a host port into the sandbox).
 *
 *   browser.c        sessions: launch, lookup, crash detection, close
 *   browser-cdp.c    a CDP client over one agent port stream (WebSocket)
 *   browser-ops.c    the REST operations (navigate, click, ... close)
 *   net/browser-url.c the URL policy checked before and after navigation
 *   browser-relay.c  GET .../browser/{session}/cdp: raw CDP for tools
 *   vnc.c            the desktop (Xvfb, x11vnc) and GET .../vnc */
#ifndef AB_DAEMON_BROWSER_H
#define AB_DAEMON_BROWSER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "daemon/daemon-internal.h"
#include "net/browser-url.h"
#include "net/cdp.h"
#include "net/http-io.h"
#include "policy/egress-policy.h"

/* "tab limit reached: 10" past this many sessions in one sandbox. */
#define AB_BROWSER_MAX_SESSIONS 10
#define AB_BROWSER_ID_LEN       16
/* Screenshots travel in chunks of this size, never past the cap. */
#define AB_BROWSER_SHOT_CHUNK (64 * 1024)
#define AB_BROWSER_SHOT_MAX   AB_CDP_SHOT_MAX

struct ab_browser_s {
	struct ab_browser_s *next;
	char id[AB_BROWSER_ID_LEN + 1];
	char box_id[AB_BOX_ID_LEN + 1];
	unsigned refs;
	uint32_t pid;       /* chromium's pid in the sandbox */
	uint16_t port;      /* its DevTools port on the sandbox's loopback */
	char *browser_path; /* "/devtools/browser/<uuid>" */
	char *page_path;    /* "/devtools/page/<id>" of the session's tab */
	char *profile;      /* its profile directory in the sandbox */
	bool headless;
	unsigned width, height;  /* the viewport */
	pthread_mutex_t op_lock; /* one operation at a time per session */
};

/* --- browser.c --- */
void ab_api_browser_launch (struct ab_req_s *r);
void ab_api_browser_op (struct ab_req_s *r);
void ab_api_browser_close (struct ab_req_s *r);
void ab_api_browser_list (struct ab_req_s *r);
/* params[0] the sandbox, params[1] the session; a reference or NULL with
 * the answer sent (404, or 410 when its browser died: the session is
 * removed). */
struct ab_browser_s *ab_browser_get (struct ab_req_s *r, struct ab_box_s *b);
void ab_browser_unref (struct ab_browser_s *s);
/* Stop the session's chromium and forget it. */
void ab_browser_end (struct ab_daemon_s *d, struct ab_box_s *b, struct ab_browser_s *s);

/* --- browser-cdp.c --- */
/* A WebSocket to path (a DevTools endpoint) on port in the sandbox. */
int ab_browser_cdp_open (struct ab_daemon_s *d, struct ab_box_s *b, uint16_t port, const char *path,
                         struct ab_cdp_s *c, ab_error_t *err);
/* GET path over HTTP on port in the sandbox, its JSON body. */
json_t *ab_browser_http_json (struct ab_daemon_s *d, struct ab_box_s *b, uint16_t port,
                              const char *path, ab_error_t *err);

/* --- browser-ops.c --- */
/* Run op with its JSON arguments; the answer is sent. */
void ab_browser_run_op (struct ab_req_s *r, struct ab_box_s *b, struct ab_browser_s *s,
                        const char *op, json_t *args);

/* --- browser-relay.c --- */
void ab_api_browser_cdp (struct ab_req_s *r);
/* For the TCP listener: whether this request is a door that the
 * sandbox's port token also opens (the CDP relay), and if so whether the
 * token it carries is right. */
bool ab_browser_door_target (const struct ab_http_io_s *io);
bool ab_browser_door_token_ok (struct ab_daemon_s *d, const struct ab_http_io_s *io);
/* The sandbox's port token as "Authorization: Bearer T" or "?token=T" in
 * the request's target. */
bool ab_browser_request_token_ok (const struct ab_box_s *b, const struct ab_http_io_s *io);
/* An Origin field's value that is http(s)://localhost, 127.0.0.1 or [::1]
 * with any port. */
bool ab_browser_origin_ok (const char *v, size_t len);

/* --- vnc.c --- */
/* Xvfb :99 and x11vnc on the sandbox's loopback, started once (spec
 * "desktop"; AB_E_NOT_FOUND without it). */
int ab_desktop_ensure (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
void ab_api_desktop (struct ab_req_s *r);
void ab_api_vnc (struct ab_req_s *r);

#endif
