/* The credential proxy's configuration document: parse, validate, share.
 * See credential-config.h for the rules. */
#include "net/credential-config.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/http-head.h"

/* Fields whose value the proxy computes itself; injecting one would let a
 * configuration break the message framing or the routing. */
static const char *const reserved_headers[] = {
	"host",
	"content-length",
	"transfer-encoding",
	"connection",
	"keep-alive",
	"proxy-connection",
	"proxy-authorization",
	"proxy-authenticate",
	"te",
	"trailer",
	"upgrade",
};

bool
ab_cred_reserved_header (const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof reserved_headers / sizeof reserved_headers[0]; i++)
		if (ab_http_token_eq (name, len, reserved_headers[i]))
			return true;
	return false;
}

static bool
is_tchar (char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	       || (c != '\0' && strchr ("!#$%&'*+-.^_`|~", c) != NULL);
}

/* RFC 9110 5.1 field-name = token. */
static bool
valid_field_name (const char *s)
{
	size_t n = strlen (s);

	if (n == 0 || n > 256)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar (s[i]))
			return false;
	return true;
}

/* RFC 9110 5.5 field-value without leading or trailing whitespace, and
 * ASCII only: no CR, LF, NUL or other control can split the head. */
static bool
valid_field_value (const char *s, size_t n)
{
	if (n > AB_CRED_VALUE_MAX)
		return false;
	if (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\t') || c >= 0x7f)
			return false;
	}
	return true;
}

/* ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ */
static bool
valid_name (const char *s)
{
	size_t n = strlen (s);

	if (n == 0 || n > AB_CRED_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum =
		        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}

static bool
valid_token (const char *s, size_t n)
{
	if (n == 0 || n > AB_CRED_TOKEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static void
sha256 (const void *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	if (EVP_Digest (p, n, out, &len, EVP_sha256 (), NULL) != 1)
		abort (); /* SHA-256 cannot fail short of a broken libcrypto */
}

static void
free_secret (char *s)
{
	if (s != NULL) {
		OPENSSL_cleanse (s, strlen (s));
		free (s);
	}
}

static void
upstream_clear (struct ab_cred_upstream_s *u)
{
	ab_url_clear (&u->url);
	for (size_t i = 0; i < u->n_inject; i++) {
		free (u->inject[i].name);
		free_secret (u->inject[i].value);
	}
	free (u->inject);
	for (size_t i = 0; i < u->n_strip; i++)
		free (u->strip[i]);
	free (u->strip);
}

static void
config_free (struct ab_cred_config_s *c)
{
	for (size_t i = 0; i < c->n_ups; i++)
		upstream_clear (&c->ups[i]);
	free (c->ups);
	free_secret (c->token);
	OPENSSL_cleanse (c->token_digest, sizeof c->token_digest);
	free (c);
}

static void
cleanup_configp (struct ab_cred_config_s **c)
{
	if (*c != NULL)
		config_free (*c);
}

static void
cleanup_jsonp (json_t **j)
{
	json_decref (*j);
}

/* http:// only to this machine: the secret never crosses a network in
 * clear text. */
static bool
loopback_host (const struct ab_hostport_s *hp)
{
	static const unsigned char v6_loopback[16] = { [15] = 1 };

	if (hp->kind == AB_HOST_NAME)
		return strcmp (hp->host, "localhost") == 0;
	if (hp->addr.family == AF_INET)
		return hp->addr.bytes[0] == 127;
	return memcmp (hp->addr.bytes, v6_loopback, 16) == 0;
}

static int
parse_inject (json_t *arr, const char *where, struct ab_cred_upstream_s *u, ab_error_t *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array (arr))
		return ab_error (err, 0, AB_E_INVALID, "%s.inject must be an array", where);
	u->inject = xcalloc (json_array_size (arr) + 1, sizeof *u->inject);
	json_array_foreach (arr, i, e)
	{
		json_t *h = json_object_get (e, "header");
		json_t *v = json_object_get (e, "value");
		const char *hn = json_string_value (h);

		if (!json_is_object (e) || !json_is_string (h) || !json_is_string (v))
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s.inject[%zu] needs string header and value", where, i);
		if (!valid_field_name (hn) || ab_cred_reserved_header (hn, strlen (hn)))
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s.inject[%zu].header is not allowed", where, i);
		if (!valid_field_value (json_string_value (v), json_string_length (v))
		    || strlen (json_string_value (v)) != json_string_length (v))
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s.inject[%zu].value is not a valid field value", where,
			                 i);
		u->inject[u->n_inject].name = xstrdup (hn);
		u->inject[u->n_inject++].value = xstrdup (json_string_value (v));
	}
	return 0;
}

static int
parse_strip (json_t *arr, const char *where, struct ab_cred_upstream_s *u, ab_error_t *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array (arr))
		return ab_error (err, 0, AB_E_INVALID, "%s.stripRequestHeaders must be an array",
		                 where);
	u->strip = xcalloc (json_array_size (arr) + 1, sizeof *u->strip);
	json_array_foreach (arr, i, e)
	{
		if (!json_is_string (e) || !valid_field_name (json_string_value (e)))
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s.stripRequestHeaders[%zu] is not a field name", where,
			                 i);
		u->strip[u->n_strip++] = xstrdup (json_string_value (e));
	}
	return 0;
}

static int
parse_upstream (json_t *o, size_t idx, struct ab_cred_upstream_s *u, ab_error_t *err)
{
	char where[32];
	json_t *name = json_object_get (o, "name");
	json_t *base = json_object_get (o, "baseUrl");
	json_t *inject = json_object_get (o, "inject");
	json_t *strip = json_object_get (o, "stripRequestHeaders");

	snprintf (where, sizeof where, "upstreams[%zu]", idx);
	/* json_object_get on a non-object is NULL: this check only picks the
	 * message. */
	if (!json_is_object (o))
		return ab_error (err, 0, AB_E_INVALID, "%s must be an object", where);
	if (!json_is_string (name) || !valid_name (json_string_value (name)))
		return ab_error (err, 0, AB_E_INVALID, "%s.name is invalid", where);
	snprintf (u->name, sizeof u->name, "%s", json_string_value (name));
	if (!json_is_string (base) || ab_url_parse (json_string_value (base), &u->url, err) < 0)
		return ab_error (err, 0, AB_E_INVALID, "%s.baseUrl is not a valid http(s) URL",
		                 where);
	if (!u->url.tls && !loopback_host (&u->url.hp))
		return ab_error (err, 0, AB_E_INVALID,
		                 "%s.baseUrl must be https (http only to loopback)", where);
	ab_url_host_field (&u->url, u->host_field, sizeof u->host_field);
	if (inject != NULL && parse_inject (inject, where, u, err) < 0)
		return -1;
	if (strip != NULL && parse_strip (strip, where, u, err) < 0)
		return -1;
	return 0;
}

static int
parse_upstreams (json_t *arr, struct ab_cred_config_s *c, ab_error_t *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array (arr))
		return ab_error (err, 0, AB_E_INVALID, "upstreams must be an array");
	c->ups = xcalloc (json_array_size (arr) + 1, sizeof *c->ups);
	json_array_foreach (arr, i, e)
	{
		struct ab_cred_upstream_s *u = &c->ups[c->n_ups++];
		if (parse_upstream (e, i, u, err) < 0)
			return -1;
		if (ab_cred_config_find (c, u->name, strlen (u->name)) != u)
			return ab_error (err, 0, AB_E_INVALID, "upstreams[%zu].name is a duplicate",
			                 i);
	}
	return 0;
}

struct ab_cred_config_s *
ab_cred_config_parse (const char *text, size_t len, ab_error_t *err)
{
	__attribute__ ((cleanup (cleanup_configp))) struct ab_cred_config_s *c = NULL;
	__attribute__ ((cleanup (cleanup_jsonp))) json_t *root = NULL;
	json_error_t jerr;
	json_t *tok;

	root = json_loadb (text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		ab_error (err, 0, AB_E_INVALID, "not valid JSON (line %d, column %d)", jerr.line,
		          jerr.column);
		return NULL;
	}
	if (!json_is_object (root)) {
		ab_error (err, 0, AB_E_INVALID, "the document must be an object");
		return NULL;
	}
	c = xcalloc (1, sizeof *c);
	c->refs = 1;
	tok = json_object_get (root, "threadToken");
	if (!json_is_string (tok)
	    || !valid_token (json_string_value (tok), json_string_length (tok))
	    || strlen (json_string_value (tok)) != json_string_length (tok)) {
		ab_error (err, 0, AB_E_INVALID,
		          "threadToken must be 1 to %d visible ASCII characters",
		          AB_CRED_TOKEN_MAX);
		return NULL;
	}
	c->token = xstrdup (json_string_value (tok));
	sha256 (c->token, strlen (c->token), c->token_digest);
	if (parse_upstreams (json_object_get (root, "upstreams"), c, err) < 0)
		return NULL;
	return steal_pointer (&c);
}

struct ab_cred_config_s *
ab_cred_config_load (const char *path, ab_error_t *err)
{
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	cleanup_free char *buf = NULL;
	struct ab_cred_config_s *c;
	size_t len = 0;
	struct stat st;

	if (fd < 0) {
		ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM, "open %s",
		          path);
		return NULL;
	}
	if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_size > AB_CRED_FILE_MAX) {
		ab_error (err, 0, AB_E_INVALID, "%s is not a regular file of at most %d bytes",
		          path, AB_CRED_FILE_MAX);
		return NULL;
	}
	buf = xmalloc (AB_CRED_FILE_MAX + 1);
	for (;;) {
		ssize_t n = read (fd, buf + len, AB_CRED_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ab_error (err, errno, AB_E_SYSTEM, "read %s", path);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > AB_CRED_FILE_MAX) {
			ab_error (err, 0, AB_E_LIMIT, "%s is larger than %d bytes", path,
			          AB_CRED_FILE_MAX);
			return NULL;
		}
	}
	c = ab_cred_config_parse (buf, len, err);
	OPENSSL_cleanse (buf, len);
	return c;
}

struct ab_cred_config_s *
ab_cred_config_ref (struct ab_cred_config_s *c)
{
	if (c != NULL)
		c->refs++;
	return c;
}

void
ab_cred_config_unref (struct ab_cred_config_s *c)
{
	if (c != NULL && --c->refs == 0)
		config_free (c);
}

const struct ab_cred_upstream_s *
ab_cred_config_find (const struct ab_cred_config_s *c, const char *name, size_t len)
{
	for (size_t i = 0; i < c->n_ups; i++)
		if (strlen (c->ups[i].name) == len && memcmp (c->ups[i].name, name, len) == 0)
			return &c->ups[i];
	return NULL;
}

char *
ab_cred_config_names (const struct ab_cred_config_s *c)
{
	size_t n = 1;
	char *s;

	for (size_t i = 0; i < c->n_ups; i++)
		n += strlen (c->ups[i].name) + 1;
	s = xcalloc (1, n);
	for (size_t i = 0; i < c->n_ups; i++) {
		if (i > 0)
			strcat (s, ",");
		strcat (s, c->ups[i].name);
	}
	return s;
}

bool
ab_cred_token_ok (const struct ab_cred_config_s *c, const char *presented, size_t len)
{
	unsigned char d[32];
	bool ok;

	sha256 (presented, len, d);
	ok = CRYPTO_memcmp (d, c->token_digest, sizeof d) == 0;
	OPENSSL_cleanse (d, sizeof d);
	return ok;
}
