/* Strict parsing of `firecracker --version` and the minimum-version rule
 * (semver 2.0.0 precedence, https://semver.org/#spec-item-11).  Pure except
 * ab_firecracker_version_query, which runs the binary. */
#include "backend/firecracker-version.h"

#include <stdio.h>
#include <string.h>

#include "backend/monitor.h"

const struct ab_fc_version_s ab_firecracker_version_min = { 1, 14, 1, "" };

/* What Firecracker's main.rs prints before " v": "Firecracker v{}". */
static const char *const program_names[] = { "Firecracker", "firecracker" };

static bool
is_digit (char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_ident_char (char c)
{
	return is_digit (c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

static bool
is_eol (char c)
{
	return c == '\0' || c == '\n';
}

/* The first line, printable, bounded, for error messages: the output of a
 * binary we do not trust yet must not put control bytes in our logs. */
static void
quote_first_line (const char *s, char *buf, size_t size)
{
	size_t n = 0;
	for (; !is_eol (*s) && n + 1 < size; s++, n++)
		buf[n] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	buf[n] = '\0';
}

/* "0" or [1-9][0-9]* that fits in 32 bits; returns the characters used,
 * 0 when there is no such number here. */
static size_t
parse_component (const char *s, uint32_t *out)
{
	uint64_t v = 0;
	size_t n = 0;

	if (!is_digit (s[0]) || (s[0] == '0' && is_digit (s[1])))
		return 0;
	for (; is_digit (s[n]); n++) {
		v = v * 10 + (uint64_t)(s[n] - '0');
		if (v > UINT32_MAX)
			return 0;
	}
	*out = (uint32_t)v;
	return n;
}

/* Semver prerelease: dot-separated non-empty identifiers of [0-9A-Za-z-];
 * numeric identifiers without leading zeros.  Ends at the end of the line. */
static bool
valid_prerelease (const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > AB_FC_PRERELEASE_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			if (!is_ident_char (s[i]))
				return false;
			continue;
		}
		size_t n = i - start;
		bool numeric = n > 0;
		for (size_t k = start; k < i; k++)
			numeric = numeric && is_digit (s[k]);
		if (n == 0 || (numeric && n > 1 && s[start] == '0'))
			return false;
		start = i + 1;
	}
	return true;
}

static const char *
skip_program_name (const char *s)
{
	for (size_t i = 0; i < sizeof program_names / sizeof program_names[0]; i++) {
		size_t n = strlen (program_names[i]);
		if (strncmp (s, program_names[i], n) == 0 && s[n] == ' ' && s[n + 1] == 'v')
			return s + n + 2;
	}
	return NULL;
}

int
ab_firecracker_version_parse (const char *output, struct ab_fc_version_s *v, ab_error_t *err)
{
	struct ab_fc_version_s r = { 0 };
	uint32_t *parts[] = { &r.major, &r.minor, &r.patch };
	char line[96];
	const char *p;

	quote_first_line (output, line, sizeof line);
	p = skip_program_name (output);
	if (!p)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'%s' is not Firecracker's version line (expected "
		                 "'Firecracker vX.Y.Z')",
		                 line);
	for (size_t i = 0; i < 3; i++) {
		size_t n = parse_component (p, parts[i]);
		if (n == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s': version component %zu is not a decimal number "
			                 "without leading zeros below 2^32",
			                 line, i + 1);
		p += n;
		if (i < 2 && *p++ != '.')
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s': expected three components X.Y.Z", line);
	}
	if (*p == '-') {
		size_t len = strcspn (++p, "\n");
		if (!valid_prerelease (p, len))
			return ab_error (err, 0, AB_E_INVALID, "'%s': malformed prerelease suffix",
			                 line);
		memcpy (r.prerelease, p, len);
		p += len;
	}
	if (!is_eol (*p))
		return ab_error (err, 0, AB_E_INVALID, "'%s': unexpected text after the version",
		                 line);
	*v = r;
	return 0;
}

static int
cmp_u32 (uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

static bool
all_digits (const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit (s[i]))
			return false;
	return true;
}

/* Numeric identifiers compare as numbers (no leading zeros: longer is
 * larger), others in ASCII order, and numeric ones sort first. */
static int
cmp_ident (const char *a, size_t na, const char *b, size_t nb)
{
	bool an = all_digits (a, na), bn = all_digits (b, nb);
	int c;

	if (an != bn)
		return an ? -1 : 1;
	if (an && na != nb)
		return na < nb ? -1 : 1;
	c = memcmp (a, b, na < nb ? na : nb);
	if (c != 0)
		return c < 0 ? -1 : 1;
	return na < nb ? -1 : na > nb;
}

static int
cmp_prerelease (const char *a, const char *b)
{
	if (*a == '\0' || *b == '\0')
		return (*a == '\0') - (*b == '\0'); /* a release is above its prereleases */
	for (;;) {
		size_t na = strcspn (a, "."), nb = strcspn (b, ".");
		int c = cmp_ident (a, na, b, nb);
		if (c != 0)
			return c;
		a += na;
		b += nb;
		if (*a == '\0' || *b == '\0')
			return (*a != '\0') - (*b != '\0'); /* more identifiers = higher */
		a++;
		b++;
	}
}

int
ab_firecracker_version_cmp (const struct ab_fc_version_s *a, const struct ab_fc_version_s *b)
{
	int c = cmp_u32 (a->major, b->major);
	if (c == 0)
		c = cmp_u32 (a->minor, b->minor);
	if (c == 0)
		c = cmp_u32 (a->patch, b->patch);
	if (c == 0)
		c = cmp_prerelease (a->prerelease, b->prerelease);
	return c;
}

bool
ab_firecracker_version_ok (const struct ab_fc_version_s *v)
{
	return ab_firecracker_version_cmp (v, &ab_firecracker_version_min) >= 0;
}

void
ab_firecracker_version_format (const struct ab_fc_version_s *v, char *buf, size_t size)
{
	snprintf (buf, size, "%u.%u.%u%s%s", v->major, v->minor, v->patch,
	          v->prerelease[0] ? "-" : "", v->prerelease);
}

int
ab_firecracker_version_check (const char *output, struct ab_fc_version_s *v, ab_error_t *err)
{
	char have[96], want[32];

	if (ab_firecracker_version_parse (output, v, err) < 0)
		return ab_error_code (err);
	if (ab_firecracker_version_ok (v))
		return 0;
	ab_firecracker_version_format (v, have, sizeof have);
	ab_firecracker_version_format (&ab_firecracker_version_min, want, sizeof want);
	return ab_error (err, 0, AB_E_DENIED, "firecracker %s is older than the required %s%s",
	                 have, want,
	                 v->prerelease[0] ? " (a prerelease is older than its release)" : "");
}

int
ab_firecracker_version_query (const char *binary, int timeout_ms, struct ab_fc_version_s *v,
                              ab_error_t *err)
{
	char *argv[] = { (char *)binary, (char *)"--version", NULL };
	char out[1024], line[96];
	int status = ab_run_tool (argv, out, sizeof out, timeout_ms, err);

	if (status < 0)
		return ab_error_wrap (err, "while running %s --version", binary);
	if (status != 0) {
		quote_first_line (out, line, sizeof line);
		return ab_error (err, 0, AB_E_INVALID, "%s --version exited with status %d: %s",
		                 binary, status, line);
	}
	if (ab_firecracker_version_check (out, v, err) < 0)
		return ab_error_wrap (err, "%s", binary);
	return 0;
}
