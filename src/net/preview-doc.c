#include "net/preview-doc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "net/http-head.h"
#include "net/preview-buf.h"
#include "policy/hostname.h"

static bool
hostname_char (char c, bool first)
{
	bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
	return alnum || (!first && (c == '_' || c == '.' || c == '-'));
}

static bool
hostname_valid (const char *h, size_t len)
{
	struct ab_hostport_s hp;
	ab_error_t err = AB_ERROR_INIT;

	if (len == 0 || len > AB_PREVIEW_HOSTNAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!hostname_char (h[i], i == 0))
			return false;
	/* The egress proxy's host parser refuses the numeric forms inet_aton
	 * reads as some other address ("2130706433", "0x7f.1", "127.1":
	 * CVE-2021-28918 class); a preview target names what it means or
	 * nothing.  A name it cannot parse for another reason (a label over
	 * 63 characters, "a..b") could never resolve through DNS either. */
	return ab_host_normalise (h, len, &hp, &err) == 0;
}

int
ab_preview_parse_target (const json_t *v, struct ab_preview_target_s *t)
{
	const json_t *h = json_object_get (v, "hostname");
	const json_t *p = json_object_get (v, "port");
	json_int_t port;

	if (!json_is_object (v) || !json_is_string (h) || !json_is_integer (p))
		return -1;
	if (!hostname_valid (json_string_value (h), json_string_length (h)))
		return -1;
	port = json_integer_value (p);
	if (port < 1 || port > 65535)
		return -1;
	memset (t, 0, sizeof *t);
	memcpy (t->hostname, json_string_value (h), json_string_length (h));
	t->port = (uint16_t)port;
	snprintf (t->host_header, sizeof t->host_header, "%s:%u", t->hostname, t->port);
	return 0;
}

bool
ab_preview_path_valid (const char *path)
{
	size_t n = strlen (path);

	if (n == 0 || n > AB_PREVIEW_PATH_MAX || path[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)path[i] <= 0x20 || (unsigned char)path[i] >= 0x7f
		    || path[i] == '#')
			return false;
	return true;
}

bool
ab_preview_token_valid (const char *s, size_t len, size_t max)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		          || (c != '\0' && strchr (extra, c) != NULL);
		if (!ok)
			return false;
	}
	return true;
}

size_t
ab_preview_char_count (const char *s, size_t len)
{
	size_t n = 0;

	/* Every byte but a continuation byte (10xxxxxx) starts a character. */
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

/* field-value: VCHAR, obs-text, SP and HTAB; nothing else (RFC 9110 5.5). */
static bool
value_valid (const char *s, size_t len)
{
	if (ab_preview_char_count (s, len) > AB_PREVIEW_HEADER_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

/* Fields the bridge writes itself, or that only mean something to one hop
 * (RFC 9110 7.6.1); lower case. */
static const char *const never_forwarded[] = {
	"host",       "content-length", "transfer-encoding",
	"connection", "keep-alive",     "proxy-connection",
	"te",         "trailer",        "upgrade",
};

static bool
forwardable (const char *name, size_t len, ab_preview_hdrs_mode mode)
{
	for (size_t i = 0; i < sizeof never_forwarded / sizeof never_forwarded[0]; i++)
		if (ab_http_token_eq (name, len, never_forwarded[i]))
			return false;
	/* RFC 6455 4.1: the key, version, protocol and extensions are the
	 * handshake's own; a caller's copy would make our Accept check lie. */
	if (mode == AB_PREVIEW_HDRS_WEBSOCKET && len >= 14
	    && strncasecmp (name, "sec-websocket-", 14) == 0)
		return false;
	return true;
}

/* A string, or an array of strings joined with ", "; NULL otherwise. */
static char *
header_value (const json_t *v)
{
	struct ab_iobuf_s b = { 0 };
	size_t i;
	const json_t *item;

	if (json_is_string (v))
		return xstrndup (json_string_value (v), json_string_length (v));
	if (!json_is_array (v) || json_array_size (v) == 0)
		return NULL;
	json_array_foreach (v, i, item)
	{
		if (!json_is_string (item)) {
			ab_iobuf_free (&b);
			return NULL;
		}
		if (i > 0)
			ab_iobuf_append (&b, ", ", 2);
		ab_preview_append (&b, json_string_value (item), json_string_length (item));
	}
	ab_iobuf_append (&b, "", 1);
	return b.data;
}

int
ab_preview_parse_headers (const json_t *v, ab_preview_hdrs_mode mode,
                          struct ab_preview_headers_s *out)
{
	const char *key;
	const json_t *val;

	memset (out, 0, sizeof *out);
	if (v == NULL)
		return 0;
	if (!json_is_object (v))
		return -1;
	json_object_foreach ((json_t *)v, key, val)
	{
		size_t klen = strlen (key);
		char *value;

		if (out->n >= AB_PREVIEW_MAX_HEADERS)
			break;
		if (!ab_preview_token_valid (key, klen, AB_PREVIEW_HEADER_NAME_MAX)
		    || !forwardable (key, klen, mode))
			continue;
		value = header_value (val);
		if (value == NULL)
			continue;
		if (!value_valid (value, strlen (value))) {
			free (value);
			continue;
		}
		out->v = xrealloc (out->v, (out->n + 1) * sizeof *out->v);
		out->v[out->n].name = xstrdup (key);
		out->v[out->n++].value = value;
	}
	return 0;
}

void
ab_preview_headers_free (struct ab_preview_headers_s *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free (h->v[i].name);
		free (h->v[i].value);
	}
	free (h->v);
	h->v = NULL;
	h->n = 0;
}

int
ab_preview_get_uint (const json_t *obj, const char *key, uint64_t min, uint64_t max, uint64_t def,
                     uint64_t *out)
{
	const json_t *v = json_object_get (obj, key);
	json_int_t n;

	if (v == NULL) {
		*out = def;
		return 0;
	}
	if (!json_is_integer (v))
		return -1;
	n = json_integer_value (v);
	if (n < 0 || (uint64_t)n < min || (uint64_t)n > max)
		return -1;
	*out = (uint64_t)n;
	return 0;
}

int
ab_preview_get_string (const json_t *obj, const char *key, const char *def, const char **out)
{
	const json_t *v = json_object_get (obj, key);

	if (v == NULL) {
		*out = def;
		return 0;
	}
	/* Embedded NULs would make the C string say less than the JSON did. */
	if (!json_is_string (v) || strlen (json_string_value (v)) != json_string_length (v))
		return -1;
	*out = json_string_value (v);
	return 0;
}

int
ab_preview_read_all (int fd, size_t max, struct ab_iobuf_s *out)
{
	for (;;) {
		ssize_t n = ab_iobuf_read (out, fd, 64 * 1024, max + 1);

		if (n == 0)
			return 0;
		if (n < 0 && errno == ENOBUFS) {
			errno = EFBIG;
			return -1;
		}
		if (n < 0)
			return -1;
		if (ab_iobuf_len (out) > max) {
			errno = EFBIG;
			return -1;
		}
	}
}
