/* The one logger: levels, one line per event, plain text or JSON lines.
 *
 * Library code returns errors (base/error.h); it logs only events of a
 * long-running service that no caller is waiting to hear about (a daemon's
 * sandbox died, a proxy refused a connection at its limit).  The program's
 * main configures the logger once, before any thread starts; after that
 * every call is thread-safe: a line is built in a buffer and leaves in one
 * write(2), so lines from concurrent threads never interleave.
 *
 * Text:  "PROGRAM: [debug: |warning: |error: ]message[: error]\n", control
 *        bytes escaped so one event stays one line.
 * JSON:  {"time":"2026-01-02T03:04:05.678Z","level":"warn","program":"...",
 *         "msg":"...","error":"...","kind":"system","errno":2}
 *
 * libc only: the static agent links it. */
#ifndef AB_BASE_LOG_H
#define AB_BASE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef enum {
	AB_LOG_DEBUG,
	AB_LOG_INFO,
	AB_LOG_WARN,
	AB_LOG_ERROR,
} ab_log_level;

typedef enum {
	AB_LOG_TEXT,
	AB_LOG_JSON,
} ab_log_format;

/* A longer line is cut (text: "...", JSON: a still valid object). */
#define AB_LOG_LINE_MAX 4096

/* Settings: call from main before any thread starts.  Defaults: info,
 * text, program "agentbox", fd 2.  program is borrowed. */
void ab_log_set_level (ab_log_level level);
void ab_log_set_format (ab_log_format format);
void ab_log_set_program (const char *program);
void ab_log_set_fd (int fd);

/* "debug", "info", "warn" (or "warning"), "error"; "text", "json". */
int ab_log_parse_level (const char *s, ab_log_level *level, ab_error_t *err);
int ab_log_parse_format (const char *s, ab_log_format *format, ab_error_t *err);

/* AGENTBOX_LOG_LEVEL and AGENTBOX_LOG_FORMAT, when set. */
int ab_log_setup_from_env (ab_error_t *err);

bool ab_log_enabled (ab_log_level level);

void ab_log (ab_log_level level, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/* One event about a failure: "message: err->msg" (fmt NULL: err->msg
 * alone); JSON carries the error's message, kind and errno as fields. */
void ab_log_error (ab_log_level level, const ab_error_t *err, const char *fmt, ...)
        __attribute__ ((format (printf, 3, 4)));

/* The line ab_log writes (pure, for tests): at most cap-1 bytes plus a NUL,
 * always ending in '\n'; returns its length.  err may be NULL; time_ms is
 * the Unix time in milliseconds (JSON only).  cap must be at least 256. */
size_t ab_log_format_line (char *buf, size_t cap, ab_log_format format, const char *program,
                           ab_log_level level, const char *msg, const ab_error_t *err,
                           int64_t time_ms);

#endif
