/* Image references: parsing and normalising, pure code (unit-tested in
 * tests/unit/test-image-ref.c). */
#include "image/ref.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define MAX_NAME 255 /* the distribution spec's limit on a repository name */
#define MAX_TAG  128

bool
ab_image_digest_valid (const char *s)
{
	if (!s || strncmp (s, "sha256:", 7) != 0 || strlen (s) != 7 + 64)
		return false;
	for (const char *p = s + 7; *p; p++)
		if (!(isdigit ((unsigned char)*p) || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* A path component: [a-z0-9]+ joined by '.', '_', '__' or '-'+. */
static bool
valid_component (const char *s, size_t n)
{
	if (n == 0 || !isalnum ((unsigned char)s[0]) || !isalnum ((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if ((c >= 'a' && c <= 'z') || isdigit ((unsigned char)c))
			continue;
		if (c != '.' && c != '_' && c != '-')
			return false;
		if (c == '.' && !isalnum ((unsigned char)s[i + 1]))
			return false;
		if (c == '_' && s[i + 1] == '_' && s[i + 2] == '_')
			return false;
	}
	return true;
}

static bool
valid_path (const char *s)
{
	while (*s) {
		size_t n = strcspn (s, "/");
		if (!valid_component (s, n))
			return false;
		s += n;
		if (*s == '/' && !*++s)
			return false;
	}
	return true;
}

/* A registry host: letters, digits, '-', '.', an optional :PORT, or a
 * bracketed IPv6 literal. */
static bool
valid_domain (const char *s)
{
	const char *colon;

	if (!*s)
		return false;
	if (s[0] == '[') {
		const char *end = strchr (s, ']');
		if (!end || end == s + 1)
			return false;
		colon = end[1] ? end + 1 : NULL;
		if (colon && *colon != ':')
			return false;
	} else {
		colon = strrchr (s, ':');
		for (const char *p = s; p < (colon ? colon : s + strlen (s)); p++)
			if (!isalnum ((unsigned char)*p) && *p != '-' && *p != '.')
				return false;
		if (colon == s)
			return false;
	}
	if (colon) {
		if (!colon[1] || strlen (colon + 1) > 5)
			return false;
		for (const char *p = colon + 1; *p; p++)
			if (!isdigit ((unsigned char)*p))
				return false;
	}
	return true;
}

static bool
valid_tag (const char *s)
{
	size_t n = strlen (s);
	if (n == 0 || n > MAX_TAG || !(isalnum ((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum ((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

static bool
is_domain (const char *first, size_t n)
{
	return memchr (first, '.', n) || memchr (first, ':', n)
	       || (n == 9 && strncmp (first, "localhost", 9) == 0) || memchr (first, '[', n);
}

static int
bad (ab_error_t *err, const char *s, const char *why)
{
	return ab_error (err, 0, AB_E_INVALID, "invalid image reference '%s': %s", s, why);
}

int
ab_image_ref_parse (const char *s, struct ab_image_ref_s *ref, ab_error_t *err)
{
	cleanup_free char *copy = NULL;
	char *at, *rest, *slash, *colon;
	struct ab_image_ref_s r = { 0 };

	if (!s || !*s || strlen (s) > 4 * MAX_NAME)
		return bad (err, s ? s : "", "empty or too long");
	copy = xstrdup (s);
	at = strchr (copy, '@');
	if (at) {
		*at++ = '\0';
		if (!ab_image_digest_valid (at))
			return bad (err, s,
			            "the digest must be sha256: and 64 lower-case hex digits");
		r.digest = xstrdup (at);
	}
	rest = copy;
	slash = strchr (rest, '/');
	if (slash && is_domain (rest, (size_t)(slash - rest))) {
		*slash = '\0';
		if (!valid_domain (rest)) {
			free (r.digest);
			return bad (err, s, "bad registry host");
		}
		r.registry = xstrdup (rest);
		rest = slash + 1;
	} else
		r.registry = xstrdup ("docker.io");
	/* The tag is after a ':' in the last component only (a port is in
	 * the first). */
	slash = strrchr (rest, '/');
	colon = strchr (slash ? slash : rest, ':');
	if (colon) {
		*colon++ = '\0';
		if (!valid_tag (colon)) {
			ab_image_ref_free (&r);
			return bad (err, s, "bad tag");
		}
		r.tag = xstrdup (colon);
	}
	if (!valid_path (rest) || strlen (rest) > MAX_NAME) {
		ab_image_ref_free (&r);
		return bad (err, s, "the name must be lower-case letters, digits and . _ - /");
	}
	if (strcmp (r.registry, "docker.io") == 0 && !strchr (rest, '/'))
		r.repository = xasprintf ("library/%s", rest);
	else
		r.repository = xstrdup (rest);
	if (!r.tag && !r.digest)
		r.tag = xstrdup ("latest");
	*ref = r;
	return 0;
}

void
ab_image_ref_free (struct ab_image_ref_s *ref)
{
	free (ref->registry);
	free (ref->repository);
	free (ref->tag);
	free (ref->digest);
	memset (ref, 0, sizeof *ref);
}

char *
ab_image_ref_name (const struct ab_image_ref_s *ref)
{
	if (ref->digest)
		return xasprintf ("%s/%s@%s", ref->registry, ref->repository, ref->digest);
	return xasprintf ("%s/%s:%s", ref->registry, ref->repository, ref->tag);
}

const char *
ab_image_ref_api_host (const struct ab_image_ref_s *ref)
{
	return strcmp (ref->registry, "docker.io") == 0 ? "registry-1.docker.io" : ref->registry;
}
