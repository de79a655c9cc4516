/* Strict parsers for the numbers users type: sizes, durations, counts.
 * Pure; every malformed input is an AB_E_INVALID error. */
#ifndef AB_BASE_PARSE_H
#define AB_BASE_PARSE_H

#include <stdint.h>

#include "base/error.h"

/* "512m", "2g", "64k", "1048576", "1.5g" (binary units, case-insensitive,
 * optional trailing "b"/"ib").  Result in bytes, > 0. */
int ab_parse_size (const char *s, uint64_t *out, ab_error_t *err);
/* "30s", "5m", "1h", "250ms", "1.5s", a bare number = seconds.  Result in ms. */
int ab_parse_duration (const char *s, uint64_t *out_ms, ab_error_t *err);
/* Decimal unsigned integer in [min, max], no sign, no spaces. */
int ab_parse_uint (const char *s, uint64_t min, uint64_t max, uint64_t *out, ab_error_t *err);
/* File permission bits in octal ("644", "0755"), at most 07777; NULL
 * (not given) is 0.  *mode is left as it was on failure. */
int ab_parse_mode (const char *s, uint32_t *mode, ab_error_t *err);
/* "1.5" CPUs -> 1500 millicpus; range (0, 1024]. */
int ab_parse_cpus (const char *s, uint64_t *out_millis, ab_error_t *err);

#endif
