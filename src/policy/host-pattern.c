/* Host patterns for allow and deny lists (hostname.h has the syntax). */
#include "policy/hostname.h"

#include <stdio.h>
#include <string.h>

/* "*" and "*:PORT". */
static int
parse_any (const char *text, struct ab_host_pattern_s *out, ab_error_t *err)
{
	struct ab_hostport_s hp;
	ab_error_t perr = AB_ERROR_INIT;

	out->kind = AB_PATTERN_ANY;
	if (text[1] == '\0')
		return 0;
	/* Reuse the authority parser for the port with a stand-in host. */
	char buf[16];
	if (strlen (text) > 7)
		return ab_error (err, 0, AB_E_INVALID, "invalid host pattern '%s': invalid port",
		                 text);
	snprintf (buf, sizeof buf, "x%s", text + 1);
	if (ab_hostport_parse (buf, 0, &hp, &perr) < 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid host pattern '%s': %s", text,
		                 perr.msg);
	out->has_port = hp.has_port;
	out->port = hp.port;
	return 0;
}

static int
parse_host (const char *text, const char *authority, struct ab_host_pattern_s *out, ab_error_t *err)
{
	struct ab_hostport_s hp;
	ab_error_t perr = AB_ERROR_INIT;

	if (ab_hostport_parse (authority, 0, &hp, &perr) < 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid host pattern '%s': %s", text,
		                 perr.msg);
	if (out->kind == AB_PATTERN_SUBDOMAINS && hp.kind != AB_HOST_NAME)
		return ab_error (
		        err, 0, AB_E_INVALID,
		        "invalid host pattern '%s': '*.' needs a domain name, not an address",
		        text);
	memcpy (out->host, hp.host, sizeof out->host);
	out->has_port = hp.has_port;
	out->port = hp.port;
	return 0;
}

int
ab_host_pattern_parse (const char *text, struct ab_host_pattern_s *out, ab_error_t *err)
{
	struct ab_host_pattern_s p;
	int r;

	memset (&p, 0, sizeof p);
	if (text[0] == '*' && (text[1] == '\0' || text[1] == ':'))
		r = parse_any (text, &p, err);
	else if (text[0] == '*' && text[1] == '.') {
		p.kind = AB_PATTERN_SUBDOMAINS;
		r = parse_host (text, text + 2, &p, err);
	} else {
		p.kind = AB_PATTERN_EXACT;
		r = parse_host (text, text, &p, err);
	}
	if (r < 0)
		return r;
	/* Port 0 is never dialed: a pattern naming it is a mistake. */
	if (p.has_port && p.port == 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid host pattern '%s': invalid port",
		                 text);
	*out = p;
	return 0;
}

/* "*.example.com" matches "a.example.com" and "a.b.example.com", not
 * "example.com" and not "badexample.com". */
static bool
is_subdomain (const char *host, const char *parent)
{
	size_t h = strlen (host), p = strlen (parent);

	return h > p + 1 && host[h - p - 1] == '.' && memcmp (host + h - p, parent, p) == 0;
}

bool
ab_host_pattern_match (const struct ab_host_pattern_s *p, const struct ab_hostport_s *hp)
{
	if (p->has_port && p->port != hp->port)
		return false;
	switch (p->kind) {
	case AB_PATTERN_ANY: return true;
	case AB_PATTERN_EXACT: return strcmp (p->host, hp->host) == 0;
	case AB_PATTERN_SUBDOMAINS:
		return hp->kind == AB_HOST_NAME && is_subdomain (hp->host, p->host);
	}
	return false;
}

const char *
ab_host_pattern_format (const struct ab_host_pattern_s *p, char buf[AB_HOST_PATTERN_STRLEN])
{
	char port[8] = "";
	bool v6 = p->kind == AB_PATTERN_EXACT && strchr (p->host, ':');

	if (p->has_port)
		snprintf (port, sizeof port, ":%u", (unsigned)p->port);
	if (p->kind == AB_PATTERN_ANY)
		snprintf (buf, AB_HOST_PATTERN_STRLEN, "*%s", port);
	else
		snprintf (buf, AB_HOST_PATTERN_STRLEN, "%s%s%s%s%s",
		          p->kind == AB_PATTERN_SUBDOMAINS ? "*." : "", v6 ? "[" : "", p->host,
		          v6 ? "]" : "", port);
	return buf;
}
