#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {
	[AB_E_NONE] = "none",     [AB_E_SYSTEM] = "system",       [AB_E_INVALID] = "invalid",
	[AB_E_DENIED] = "denied", [AB_E_NOT_FOUND] = "not_found", [AB_E_CONFLICT] = "conflict",
	[AB_E_LIMIT] = "limit",   [AB_E_INTERNAL] = "internal",
};

const char *
ab_error_kind_name (ab_error_kind kind)
{
	if ((size_t)kind >= sizeof kind_names / sizeof kind_names[0])
		return "internal";
	return kind_names[kind];
}

int
ab_error_code (const ab_error_t *err)
{
	return err->errnum > 0 ? -err->errnum : -1;
}

int
ab_error (ab_error_t *err, int errnum, ab_error_kind kind, const char *fmt, ...)
{
	va_list ap;
	int n;

	err->kind = kind;
	err->errnum = errnum;
	va_start (ap, fmt);
	n = vsnprintf (err->msg, sizeof err->msg, fmt, ap);
	va_end (ap);
	if (errnum > 0 && n >= 0 && (size_t)n < sizeof err->msg)
		snprintf (err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror (errnum));
	return ab_error_code (err);
}

int
ab_error_wrap (ab_error_t *err, const char *fmt, ...)
{
	char joined[2 * AB_ERROR_MSG_MAX + 2];
	va_list ap;
	int n;

	va_start (ap, fmt);
	n = vsnprintf (joined, AB_ERROR_MSG_MAX, fmt, ap);
	va_end (ap);
	if (n < 0)
		n = 0;
	if (n >= AB_ERROR_MSG_MAX)
		n = AB_ERROR_MSG_MAX - 1;
	memcpy (joined + n, ": ", 2);
	memcpy (joined + n + 2, err->msg, sizeof err->msg);
	joined[sizeof joined - 1] = '\0';
	memcpy (err->msg, joined, sizeof err->msg - 1);
	err->msg[sizeof err->msg - 1] = '\0';
	return ab_error_code (err);
}

void
ab_error_clear (ab_error_t *err)
{
	err->kind = AB_E_NONE;
	err->errnum = 0;
	err->msg[0] = '\0';
}
