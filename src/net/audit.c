/* One JSON line per egress decision; see audit.h. */
#include "net/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fd.h"
#include "base/xalloc.h"

struct ab_audit_s {
	int fd;
	bool own_fd;
	uint64_t failures;
};

struct ab_audit_s *
ab_audit_from_fd (int fd)
{
	struct ab_audit_s *a = xcalloc (1, sizeof *a);

	a->fd = fd;
	a->own_fd = true;
	return a;
}

struct ab_audit_s *
ab_audit_open (const char *path, ab_error_t *err)
{
	struct ab_audit_s *a;
	int fd;

	if (strcmp (path, "-") == 0) {
		a = ab_audit_from_fd (STDOUT_FILENO);
		a->own_fd = false;
		return a;
	}
	fd = open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "open audit log %s", path);
		return NULL;
	}
	return ab_audit_from_fd (fd);
}

void
ab_audit_close (struct ab_audit_s *a)
{
	if (a == NULL)
		return;
	if (a->own_fd)
		close (a->fd);
	free (a);
}

uint64_t
ab_audit_failures (const struct ab_audit_s *a)
{
	return a->failures;
}

static void
set_str (json_t *o, const char *key, const char *v)
{
	if (v != NULL)
		json_object_set_new (o, key, json_string (v));
}

char *
ab_audit_format (const struct ab_audit_record_s *r)
{
	char when[AB_UTC_MS_LEN];
	json_t *o = json_object ();
	char *s;

	ab_utc_ms_format ((int64_t)r->time.tv_sec * 1000 + r->time.tv_nsec / 1000000, when);
	json_object_set_new (o, "time", json_string (when));
	set_str (o, "sandbox", r->sandbox);
	set_str (o, "method", r->method);
	set_str (o, "host", r->host);
	if (r->port >= 0)
		json_object_set_new (o, "port", json_integer (r->port));
	set_str (o, "addr", r->addr);
	json_object_set_new (o, "decision", json_string (r->allowed ? "allow" : "deny"));
	set_str (o, "reason", r->reason);
	if (r->status > 0)
		json_object_set_new (o, "status", json_integer (r->status));
	set_str (o, "error", r->error);
	json_object_set_new (o, "bytes_up", json_integer ((json_int_t)r->bytes_up));
	json_object_set_new (o, "bytes_down", json_integer ((json_int_t)r->bytes_down));
	json_object_set_new (o, "duration_ms", json_real ((double)r->duration_us / 1000.0));
	/* Hosts are ASCII after normalisation, but reasons may quote client
	 * bytes: JSON_ENSURE_ASCII keeps the line 7-bit whatever they hold. */
	s = json_dumps (o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII
	                           | JSON_REAL_PRECISION (6));
	json_decref (o);
	if (s == NULL)
		abort (); /* jansson fails only on allocation */
	return s;
}

void
ab_audit_write (struct ab_audit_s *a, const struct ab_audit_record_s *r)
{
	char *s;
	size_t n;

	if (a == NULL)
		return;
	s = ab_audit_format (r);
	n = strlen (s);
	s = xrealloc (s, n + 2);
	s[n++] = '\n';
	s[n] = '\0';
	if (ab_write_all (a->fd, s, n) < 0)
		a->failures++;
	free (s);
}
