#include "base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parse "<digits>[.<digits>]" into a value scaled by 1000 (milli-units);
 * returns the number of characters consumed, 0 on error or overflow. */
static size_t
parse_decimal_milli (const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t whole = 0, frac = 0, scale = 100;

	if (!isdigit ((unsigned char)*p))
		return 0;
	for (; isdigit ((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX / 1000 - 9) / 10)
			return 0;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit ((unsigned char)*p))
			return 0;
		for (; isdigit ((unsigned char)*p); p++) {
			frac += (uint64_t)(*p - '0') * scale;
			scale /= 10;
		}
	}
	*out = whole * 1000 + frac;
	return (size_t)(p - s);
}

static int
mul_overflows (uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow (a, b, out);
}

int
ab_parse_size (const char *s, uint64_t *out, ab_error_t *err)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 },
		{ "b", 1 },
		{ "k", 1ULL << 10 },
		{ "kb", 1ULL << 10 },
		{ "kib", 1ULL << 10 },
		{ "m", 1ULL << 20 },
		{ "mb", 1ULL << 20 },
		{ "mib", 1ULL << 20 },
		{ "g", 1ULL << 30 },
		{ "gb", 1ULL << 30 },
		{ "gib", 1ULL << 30 },
		{ "t", 1ULL << 40 },
		{ "tb", 1ULL << 40 },
		{ "tib", 1ULL << 40 },
	};
	uint64_t milli, bytes;
	size_t n = parse_decimal_milli (s, &milli);

	if (n == 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid size '%s' (expected e.g. 512m, 2g)",
		                 s);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp (s + n, units[i].suffix) != 0)
			continue;
		if (mul_overflows (milli, units[i].mult, &bytes))
			return ab_error (err, 0, AB_E_INVALID, "size '%s' is too large", s);
		bytes /= 1000;
		if (bytes == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "size '%s' must be greater than zero", s);
		*out = bytes;
		return 0;
	}
	return ab_error (err, 0, AB_E_INVALID, "invalid size '%s' (expected e.g. 512m, 2g)", s);
}

int
ab_parse_duration (const char *s, uint64_t *out_ms, ab_error_t *err)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = { { "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 } };
	uint64_t milli, ms;
	size_t n = parse_decimal_milli (s, &milli);

	if (n == 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "invalid duration '%s' (expected e.g. 30s, 5m)", s);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp (s + n, units[i].suffix) != 0)
			continue;
		if (mul_overflows (milli, units[i].ms, &ms))
			return ab_error (err, 0, AB_E_INVALID, "duration '%s' is too large", s);
		*out_ms = ms / 1000;
		return 0;
	}
	return ab_error (err, 0, AB_E_INVALID, "invalid duration '%s' (expected e.g. 30s, 5m)", s);
}

int
ab_parse_uint (const char *s, uint64_t min, uint64_t max, uint64_t *out, ab_error_t *err)
{
	uint64_t v = 0;
	const char *p = s;

	if (!isdigit ((unsigned char)*p))
		return ab_error (err, 0, AB_E_INVALID, "invalid number '%s'", s);
	for (; isdigit ((unsigned char)*p); p++)
		if (mul_overflows (v, 10, &v)
		    || __builtin_add_overflow (v, (uint64_t)(*p - '0'), &v))
			return ab_error (err, 0, AB_E_INVALID, "number '%s' is too large", s);
	if (*p != '\0')
		return ab_error (err, 0, AB_E_INVALID, "invalid number '%s'", s);
	if (v < min || v > max)
		return ab_error (err, 0, AB_E_INVALID, "number %s is out of range [%llu, %llu]", s,
		                 (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int
ab_parse_cpus (const char *s, uint64_t *out_millis, ab_error_t *err)
{
	uint64_t milli;
	size_t n = parse_decimal_milli (s, &milli);

	if (n == 0 || s[n] != '\0')
		return ab_error (err, 0, AB_E_INVALID, "invalid CPU count '%s' (expected e.g. 1.5)",
		                 s);
	if (milli == 0 || milli > 1024 * 1000)
		return ab_error (err, 0, AB_E_INVALID, "CPU count '%s' is out of range (0, 1024]",
		                 s);
	*out_millis = milli;
	return 0;
}

int
ab_parse_mode (const char *s, uint32_t *mode, ab_error_t *err)
{
	char *end;
	unsigned long v;

	if (!s) {
		*mode = 0;
		return 0;
	}
	errno = 0;
	v = strtoul (s, &end, 8);
	if (!*s || *end || errno || v > 07777 || !isdigit ((unsigned char)*s))
		return ab_error (err, 0, AB_E_INVALID, "mode '%s' must be octal, at most 7777", s);
	*mode = (uint32_t)v;
	return 0;
}
