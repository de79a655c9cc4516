#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fd.h"
#include "base/clock.h"

/* Written only by main before threads start (log.h), read by every thread. */
static ab_log_level min_level = AB_LOG_INFO;
static ab_log_format out_format = AB_LOG_TEXT;
static const char *program_name = "agentbox";
static int out_fd = 2;

static const struct {
	const char *name;       /* JSON "level" and what AGENTBOX_LOG_LEVEL takes */
	const char *text_label; /* the text line's prefix; info has none */
} levels[] = {
	[AB_LOG_DEBUG] = { "debug", "debug: " },
	[AB_LOG_INFO] = { "info", "" },
	[AB_LOG_WARN] = { "warn", "warning: " },
	[AB_LOG_ERROR] = { "error", "error: " },
};

#define N_LEVELS (sizeof levels / sizeof levels[0])

/* Room kept at the end of the buffer for what closes a line: a cut marker,
 * the JSON punctuation, kind and errno fields, '\n' and the NUL. */
#define LINE_RESERVE 128

void
ab_log_set_level (ab_log_level level)
{
	min_level = level;
}

void
ab_log_set_format (ab_log_format format)
{
	out_format = format;
}

void
ab_log_set_program (const char *program)
{
	program_name = program;
}

void
ab_log_set_fd (int fd)
{
	out_fd = fd;
}

int
ab_log_parse_level (const char *s, ab_log_level *level, ab_error_t *err)
{
	for (size_t i = 0; i < N_LEVELS; i++)
		if (strcmp (s, levels[i].name) == 0) {
			*level = (ab_log_level)i;
			return 0;
		}
	if (strcmp (s, "warning") == 0) {
		*level = AB_LOG_WARN;
		return 0;
	}
	return ab_error (err, 0, AB_E_INVALID,
	                 "log level '%s' is not one of debug, info, warn, error", s);
}

int
ab_log_parse_format (const char *s, ab_log_format *format, ab_error_t *err)
{
	if (strcmp (s, "text") == 0)
		*format = AB_LOG_TEXT;
	else if (strcmp (s, "json") == 0)
		*format = AB_LOG_JSON;
	else
		return ab_error (err, 0, AB_E_INVALID, "log format '%s' is not text or json", s);
	return 0;
}

int
ab_log_setup_from_env (ab_error_t *err)
{
	const char *lv = getenv ("AGENTBOX_LOG_LEVEL"), *fm = getenv ("AGENTBOX_LOG_FORMAT");
	ab_log_level level = min_level;
	ab_log_format format = out_format;

	if (lv && *lv && ab_log_parse_level (lv, &level, err) < 0)
		return ab_error_wrap (err, "AGENTBOX_LOG_LEVEL");
	if (fm && *fm && ab_log_parse_format (fm, &format, err) < 0)
		return ab_error_wrap (err, "AGENTBOX_LOG_FORMAT");
	min_level = level;
	out_format = format;
	return 0;
}

bool
ab_log_enabled (ab_log_level level)
{
	return (size_t)level < N_LEVELS && level >= min_level;
}

/* ---- building one line ------------------------------------------------------------ */

struct line_s {
	char *buf;
	size_t len;
	size_t limit; /* where escaped text stops; the reserve lies beyond */
	size_t cap;
	bool cut;
};

/* Punctuation: always fits, the reserve is sized for it. */
static void
put_fixed (struct line_s *l, const char *s)
{
	size_t n = strlen (s), room = l->cap - 2 - l->len; /* '\n' and NUL follow */

	if (n > room)
		n = room;
	memcpy (l->buf + l->len, s, n);
	l->len += n;
}

/* Text: the first piece that does not fit before the reserve cuts the line. */
static bool
put_text (struct line_s *l, const char *s, size_t n)
{
	if (l->cut || l->len + n > l->limit) {
		l->cut = true;
		return false;
	}
	memcpy (l->buf + l->len, s, n);
	l->len += n;
	return true;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), 0 if there is none. */
static size_t
utf8_len (const unsigned char *s, size_t left)
{
	unsigned c = s[0];
	uint32_t cp;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
	    || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* One byte (or UTF-8 sequence) of s escaped into e; returns bytes of s used. */
static size_t
escape_one (bool json, const unsigned char *s, size_t left, char e[8], size_t *elen)
{
	unsigned c = s[0];
	size_t n;

	switch (c) {
	case '\n': *elen = 2, memcpy (e, "\\n", 2); return 1;
	case '\r': *elen = 2, memcpy (e, "\\r", 2); return 1;
	case '\t': *elen = 2, memcpy (e, "\\t", 2); return 1;
	case '"':
	case '\\':
		if (json) {
			*elen = 2, e[0] = '\\', e[1] = (char)c;
			return 1;
		}
		break;
	default: break;
	}
	if (c < 0x20 || c == 0x7f) {
		*elen = (size_t)snprintf (e, 8, json ? "\\u%04x" : "\\x%02x", c);
		return 1;
	}
	/* JSON text must be UTF-8 (RFC 8259 8.1); a stray byte becomes U+FFFD.
	 * Text lines pass bytes through. */
	if (json && c >= 0x80) {
		if ((n = utf8_len (s, left)) == 0) {
			*elen = 6, memcpy (e, "\\ufffd", 6);
			return 1;
		}
		*elen = n, memcpy (e, s, n);
		return n;
	}
	*elen = 1, e[0] = (char)c;
	return 1;
}

/* s escaped so that it stays on one line (and, for JSON, inside a string). */
static void
put_escaped (struct line_s *l, bool json, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen (s);
	char e[8];
	size_t elen;

	if (l->cut)
		return; /* one marker per line */
	while (left > 0) {
		size_t used = escape_one (json, p, left, e, &elen);
		if (!put_text (l, e, elen))
			break;
		p += used, left -= used;
	}
	if (left > 0)
		put_fixed (l, "...");
}

static void
format_text (struct line_s *l, const char *program, ab_log_level level, const char *msg,
             const ab_error_t *err)
{
	put_escaped (l, false, program);
	put_text (l, ": ", 2);
	put_text (l, levels[level].text_label, strlen (levels[level].text_label));
	put_escaped (l, false, msg);
	if (err && *msg)
		put_text (l, ": ", 2);
	if (err)
		put_escaped (l, false, err->msg);
}

static void
format_json (struct line_s *l, const char *program, ab_log_level level, const char *msg,
             const ab_error_t *err, int64_t time_ms)
{
	char num[24], ts[AB_UTC_MS_LEN];

	ab_utc_ms_format (time_ms, ts);
	put_fixed (l, "{\"time\":\"");
	put_fixed (l, ts);
	put_fixed (l, "\",\"level\":\"");
	put_fixed (l, levels[level].name);
	put_fixed (l, "\",\"program\":\"");
	put_escaped (l, true, program);
	put_fixed (l, "\",\"msg\":\"");
	put_escaped (l, true, msg);
	put_fixed (l, "\"");
	if (err) {
		put_fixed (l, ",\"error\":\"");
		put_escaped (l, true, err->msg);
		put_fixed (l, "\",\"kind\":\"");
		put_fixed (l, ab_error_kind_name (err->kind));
		put_fixed (l, "\"");
		if (err->errnum) {
			snprintf (num, sizeof num, ",\"errno\":%d", err->errnum);
			put_fixed (l, num);
		}
	}
	put_fixed (l, "}");
}

size_t
ab_log_format_line (char *buf, size_t cap, ab_log_format format, const char *program,
                    ab_log_level level, const char *msg, const ab_error_t *err, int64_t time_ms)
{
	struct line_s l = { .buf = buf, .cap = cap, .limit = cap - LINE_RESERVE };

	if ((size_t)level >= N_LEVELS)
		level = AB_LOG_ERROR;
	if (!program)
		program = "agentbox";
	if (format == AB_LOG_JSON)
		format_json (&l, program, level, msg, err, time_ms);
	else
		format_text (&l, program, level, msg, err);
	/* put_fixed always leaves room for these two. */
	buf[l.len++] = '\n';
	buf[l.len] = '\0';
	return l.len;
}

/* ---- writing it -------------------------------------------------------------------- */

static void __attribute__ ((format (printf, 3, 0)))
emit (ab_log_level level, const ab_error_t *err, const char *fmt, va_list ap)
{
	char msg[1024] = "";
	char line[AB_LOG_LINE_MAX];
	int saved = errno; /* a log call never changes what the caller sees */
	size_t n;

	if (fmt && vsnprintf (msg, sizeof msg, fmt, ap) >= (int)sizeof msg)
		memcpy (msg + sizeof msg - 4, "...", 4); /* cut, and says so */
	n = ab_log_format_line (line, sizeof line, out_format, program_name, level, msg, err,
	                        out_format == AB_LOG_JSON ? (int64_t)ab_unix_ms () : 0);
	/* One write: at most PIPE_BUF bytes, so a pipe never splits it. */
	(void)ab_write_all (out_fd, line, n);
	errno = saved;
}

void
ab_log (ab_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!ab_log_enabled (level))
		return;
	va_start (ap, fmt);
	emit (level, NULL, fmt, ap);
	va_end (ap);
}

void
ab_log_error (ab_log_level level, const ab_error_t *err, const char *fmt, ...)
{
	va_list ap;

	if (!ab_log_enabled (level))
		return;
	va_start (ap, fmt);
	emit (level, err, fmt, ap);
	va_end (ap);
}
