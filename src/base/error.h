/* One error contract for all of agentbox (modelled on crun's libcrun_error).
 *
 * Every fallible function returns int (negative = failure) or a pointer
 * (NULL = failure) and takes `ab_error_t *err` as its last parameter.  On
 * success `err` is left untouched.  The kind lets the API map an error to an
 * HTTP status and the CLI to an exit code without matching strings. */
#ifndef AB_BASE_ERROR_H
#define AB_BASE_ERROR_H

#include <stddef.h>

typedef enum {
	AB_E_NONE = 0,
	AB_E_SYSTEM,    /* a system call failed; errnum says why */
	AB_E_INVALID,   /* the caller's input is malformed */
	AB_E_DENIED,    /* refused by policy */
	AB_E_NOT_FOUND, /* a named thing does not exist */
	AB_E_CONFLICT,  /* the thing exists or is in the wrong state */
	AB_E_LIMIT,     /* a configured limit was hit */
	AB_E_INTERNAL,  /* a bug or an impossible state */
} ab_error_kind;

#define AB_ERROR_MSG_MAX 512

typedef struct ab_error_s {
	ab_error_kind kind;
	int errnum;
	char msg[AB_ERROR_MSG_MAX];
} ab_error_t;

#define AB_ERROR_INIT                                                                              \
	{                                                                                          \
		AB_E_NONE, 0,                                                                      \
		{                                                                                  \
			0                                                                          \
		}                                                                                  \
	}

/* Fill *err and return a negative code (-errnum, or -1 without errnum).
 * When errnum != 0, ": strerror(errnum)" is appended to the message. */
int ab_error (ab_error_t *err, int errnum, ab_error_kind kind, const char *fmt, ...)
        __attribute__ ((format (printf, 4, 5)));

/* Prefix context ("while doing X: <old message>"), keep kind and errnum,
 * return the same negative code as ab_error. */
int ab_error_wrap (ab_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/* Negative code for an already filled error. */
int ab_error_code (const ab_error_t *err);

const char *ab_error_kind_name (ab_error_kind kind);

void ab_error_clear (ab_error_t *err);

#endif
