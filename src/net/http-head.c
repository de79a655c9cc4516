/* Strict HTTP/1.1 head parser: see http-head.h for why every refusal is
 * there.  Grammar references are to RFC 9110 (semantics) and RFC 9112
 * (HTTP/1.1 message syntax). */
#include "net/http-head.h"

#include <string.h>

#include "base/hex.h"

/* Character classes (RFC 9110 5.6.2 tchar, 5.5 field-vchar). */
enum {
	C_TCHAR = 1u << 0,
	C_FIELD = 1u << 1,  /* VCHAR / obs-text / SP / HTAB */
	C_TARGET = 1u << 2, /* visible ASCII: what a request-target may hold */
	C_HEX = 1u << 3,
};

static unsigned char char_class[256];

/* Filled once before main(), so concurrent parsers only ever read it. */
__attribute__ ((constructor)) static void
init_char_class (void)
{
	static const char tchar_extra[] = "!#$%&'*+-.^_`|~";

	for (int c = 0x21; c <= 0x7e; c++)
		char_class[c] |= C_FIELD | C_TARGET;
	for (int c = 0x80; c <= 0xff; c++)
		char_class[c] |= C_FIELD;
	char_class[' '] |= C_FIELD;
	char_class['\t'] |= C_FIELD;
	for (int c = '0'; c <= '9'; c++)
		char_class[c] |= C_TCHAR | C_HEX;
	for (int c = 'a'; c <= 'z'; c++)
		char_class[c] |= C_TCHAR;
	for (int c = 'A'; c <= 'Z'; c++)
		char_class[c] |= C_TCHAR;
	for (int c = 'a'; c <= 'f'; c++)
		char_class[c] |= C_HEX;
	for (int c = 'A'; c <= 'F'; c++)
		char_class[c] |= C_HEX;
	for (const char *p = tchar_extra; *p; p++)
		char_class[(unsigned char)*p] |= C_TCHAR;
}

static inline bool
is_class (char c, unsigned cls)
{
	return (char_class[(unsigned char)c] & cls) != 0;
}

static int
fail (struct ab_http_error_s *e, int status, const char *reason)
{
	e->status = status;
	e->reason = reason;
	return -1;
}

bool
ab_http_token_eq (const char *s, size_t len, const char *lower)
{
	size_t n = strlen (lower);

	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lower[i])
			return false;
	}
	return true;
}

/* Bytes of leading empty lines (CRLF pairs) at the start of buf. */
static size_t
leading_empty_lines (const char *buf, size_t len)
{
	size_t i = 0;

	while (i + 1 < len && buf[i] == '\r' && buf[i + 1] == '\n')
		i += 2;
	return i;
}

ssize_t
ab_http_head_end (const char *buf, size_t len, size_t *scan, const struct ab_http_limits_s *lim,
                  struct ab_http_error_s *e)
{
	size_t limit = len < lim->max_head ? len : lim->max_head;
	size_t start = leading_empty_lines (buf, len);
	size_t i;

	for (i = *scan; i < limit; i++) {
		char c = buf[i];

		if (c == '\n') {
			/* A bare LF is a line end to some servers and not to others. */
			if (i == 0 || buf[i - 1] != '\r')
				return fail (e, 400, "bare LF in head");
			if (i >= 3 && i - 3 >= start && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
				*scan = i + 1;
				return (ssize_t)(i + 1);
			}
		} else if (c == '\r') {
			if (i + 1 >= len)
				break; /* decide when the next byte arrives */
			if (buf[i + 1] != '\n')
				return fail (e, 400, "bare CR in head");
		} else if (c == '\0') {
			return fail (e, 400, "NUL in head");
		}
	}
	*scan = i;
	if (i >= lim->max_head)
		return fail (e, 431, "request header fields too large");
	return 0;
}

/* The next line of a complete head: [*p, returned end) without CRLF; *p
 * moves past the CRLF.  ab_http_head_end guaranteed every CR is followed by
 * LF and every LF preceded by CR. */
static const char *
next_line (const char **p, const char *end)
{
	const char *line = *p;
	const char *cr = memchr (line, '\r', (size_t)(end - line));

	if (cr == NULL)
		cr = end; /* cannot happen on a head from ab_http_head_end */
	*p = cr + 2 <= end ? cr + 2 : end;
	return cr;
}

/* "HTTP/1.0" or "HTTP/1.1" -> minor version; another HTTP version -> -2
 * (505); anything else -> -1 (400). */
static int
parse_version (const char *s, size_t len)
{
	if (len != 8 || memcmp (s, "HTTP/", 5) != 0 || s[6] != '.')
		return -1;
	if (s[5] < '0' || s[5] > '9' || s[7] < '0' || s[7] > '9')
		return -1;
	if (s[5] != '1' || (s[7] != '0' && s[7] != '1'))
		return -2;
	return s[7] - '0';
}

static int
parse_request_line (const char *p, const char *eol, struct ab_http_head_s *h,
                    struct ab_http_error_s *e)
{
	const char *s = p;
	int v;

	while (s < eol && is_class (*s, C_TCHAR))
		s++;
	if (s == p || s == eol || *s != ' ')
		return fail (e, 400, "malformed request line");
	h->method = p;
	h->method_len = (uint32_t)(s - p);
	p = ++s;
	while (s < eol && is_class (*s, C_TARGET))
		s++;
	if (s == p || s == eol || *s != ' ')
		return fail (e, 400, "malformed request line");
	h->target = p;
	h->target_len = (uint32_t)(s - p);
	p = s + 1;
	v = parse_version (p, (size_t)(eol - p));
	if (v == -2)
		return fail (e, 505, "HTTP version not supported");
	if (v < 0)
		return fail (e, 400, "malformed request line");
	h->version_minor = v;
	return 0;
}

static int
parse_status_line (const char *p, const char *eol, struct ab_http_head_s *h,
                   struct ab_http_error_s *e)
{
	int v;

	if (eol - p < 12)
		return fail (e, 502, "malformed status line");
	v = parse_version (p, 8);
	if (v < 0 || p[8] != ' ')
		return fail (e, 502, "malformed status line");
	h->version_minor = v;
	p += 9;
	if (p[0] < '1' || p[0] > '5' || p[1] < '0' || p[1] > '9' || p[2] < '0' || p[2] > '9')
		return fail (e, 502, "malformed status line");
	h->status = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
	p += 3;
	/* RFC 9112 4: SP before an empty reason is required, but some servers
	 * omit it; nothing can be smuggled through its absence. */
	if (p < eol && *p++ != ' ')
		return fail (e, 502, "malformed status line");
	h->reason = p;
	h->reason_len = (uint32_t)(eol - p);
	for (; p < eol; p++)
		if (!is_class (*p, C_FIELD))
			return fail (e, 502, "malformed status line");
	return 0;
}

/* Content-Length = 1*DIGIT (RFC 9110 8.6).  Lists ("5, 5"), signs and
 * values beyond 2^53 are refused. */
static bool
parse_content_length (const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 16)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > (UINT64_C (1) << 53))
		return false;
	*out = v;
	return true;
}

struct conn_tokens_s {
	const char *tok[AB_HTTP_MAX_CONN_TOKENS];
	uint32_t len[AB_HTTP_MAX_CONN_TOKENS];
	unsigned n;
};

/* Connection = #connection-option (RFC 9110 7.6.1): a comma list of tokens,
 * empty elements allowed. */
static int
parse_connection (const struct ab_http_field_s *f, struct ab_http_head_s *h,
                  struct conn_tokens_s *ct, int bad_status, struct ab_http_error_s *e)
{
	const char *p = f->value;
	const char *end = f->value + f->value_len;

	while (p < end) {
		const char *t;
		uint32_t tlen;

		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		t = p;
		while (p < end && is_class (*p, C_TCHAR))
			p++;
		tlen = (uint32_t)(p - t);
		if (tlen == 0) {
			if (p < end)
				return fail (e, bad_status, "invalid Connection field");
			break;
		}
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p != ',')
			return fail (e, bad_status, "invalid Connection field");
		if (ct->n >= AB_HTTP_MAX_CONN_TOKENS)
			return fail (e, bad_status, "too many Connection options");
		ct->tok[ct->n] = t;
		ct->len[ct->n++] = tlen;
		if (ab_http_token_eq (t, tlen, "close"))
			h->conn_close = true;
		else if (ab_http_token_eq (t, tlen, "keep-alive"))
			h->conn_keep_alive = true;
	}
	return 0;
}

/* Fields the proxy treats specially, by name. */
typedef enum {
	FK_OTHER = 0,
	FK_HOP,
	FK_CONNECTION,
	FK_HOST,
	FK_CONTENT_LENGTH,
	FK_TRANSFER_ENCODING,
	FK_EXPECT,
} field_kind;

static const struct {
	const char *name;
	field_kind kind;
} known_fields[] = {
	/* RFC 9110 7.6.1 and RFC 9112 9.6: hop-by-hop, never forwarded. */
	{ "connection", FK_CONNECTION },
	{ "keep-alive", FK_HOP },
	{ "proxy-connection", FK_HOP },    /* non-standard, still sent by clients */
	{ "proxy-authorization", FK_HOP }, /* credentials for us, never the origin */
	{ "proxy-authenticate", FK_HOP },
	{ "te", FK_HOP },
	{ "trailer", FK_HOP },
	{ "upgrade", FK_HOP }, /* the proxy does not switch protocols */
	{ "host", FK_HOST },
	{ "content-length", FK_CONTENT_LENGTH },
	{ "transfer-encoding", FK_TRANSFER_ENCODING },
	{ "expect", FK_EXPECT },
};

static field_kind
classify_field (const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof known_fields / sizeof known_fields[0]; i++)
		if (ab_http_token_eq (name, len, known_fields[i].name))
			return known_fields[i].kind;
	return FK_OTHER;
}

/* One field line "name: OWS value OWS" (RFC 9112 5). */
static int
split_field (const char *p, const char *eol, struct ab_http_field_s *f, int bad,
             struct ab_http_error_s *e)
{
	const char *s = p;
	const char *v;
	const char *ve;

	if (p < eol && (*p == ' ' || *p == '\t'))
		return fail (e, bad, "obsolete line folding");
	while (s < eol && is_class (*s, C_TCHAR))
		s++;
	if (s < eol && (*s == ' ' || *s == '\t'))
		return fail (e, bad, "whitespace before field colon");
	if (s == p || s == eol || *s != ':')
		return fail (e, bad, "invalid field name");
	v = s + 1;
	while (v < eol && (*v == ' ' || *v == '\t'))
		v++;
	ve = eol;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	for (const char *q = v; q < ve; q++)
		if (!is_class (*q, C_FIELD))
			return fail (e, bad, "invalid character in field value");
	f->name = p;
	f->name_len = (uint32_t)(s - p);
	f->value = v;
	f->value_len = (uint32_t)(ve - v);
	f->flags = 0;
	return 0;
}

/* Record what a special field says; refuse the ambiguous ones. */
static int
note_field (struct ab_http_field_s *f, bool request, struct ab_http_head_s *h,
            struct conn_tokens_s *ct, struct ab_http_error_s *e)
{
	int bad = request ? 400 : 502;

	switch (classify_field (f->name, f->name_len)) {
	case FK_OTHER: return 0;
	case FK_HOP: f->flags |= AB_HTTP_F_HOP; return 0;
	case FK_CONNECTION: f->flags |= AB_HTTP_F_HOP; return parse_connection (f, h, ct, bad, e);
	case FK_HOST:
		f->flags |= AB_HTTP_F_HOST;
		h->n_host++;
		return 0;
	case FK_CONTENT_LENGTH:
		f->flags |= AB_HTTP_F_FRAMING;
		if (h->has_content_length)
			return fail (e, bad, "duplicate Content-Length");
		if (!parse_content_length (f->value, f->value_len, &h->content_length))
			return fail (e, bad, "invalid Content-Length");
		h->has_content_length = true;
		return 0;
	case FK_TRANSFER_ENCODING:
		f->flags |= AB_HTTP_F_FRAMING | AB_HTTP_F_HOP;
		if (h->has_transfer_encoding)
			return fail (e, bad, "duplicate Transfer-Encoding");
		h->has_transfer_encoding = true;
		/* Only a lone "chunked": "gzip, chunked", "chunked, identity" and
		 * "xchunked" are read differently by different servers. */
		if (!ab_http_token_eq (f->value, f->value_len, "chunked"))
			return fail (e, request ? 501 : 502, "unsupported transfer coding");
		return 0;
	case FK_EXPECT:
		if (ab_http_token_eq (f->value, f->value_len, "100-continue"))
			h->expect_continue = true;
		return 0;
	}
	return 0;
}

/* Fields named by Connection are hop-by-hop too (RFC 9110 7.6.1). */
static void
mark_connection_options (struct ab_http_head_s *h, const struct conn_tokens_s *ct)
{
	for (unsigned i = 0; i < h->n_fields; i++) {
		struct ab_http_field_s *f = &h->fields[i];
		for (unsigned j = 0; j < ct->n; j++) {
			if (f->name_len == ct->len[j]
			    && strncasecmp (f->name, ct->tok[j], ct->len[j]) == 0) {
				f->flags |= AB_HTTP_F_HOP;
				break;
			}
		}
	}
}

static int
parse_fields (const char *p, const char *end, const struct ab_http_limits_s *lim, bool request,
              struct ab_http_head_s *h, struct ab_http_error_s *e)
{
	struct conn_tokens_s ct = { .n = 0 };
	int bad = request ? 400 : 502;

	for (;;) {
		const char *line = p;
		const char *eol = next_line (&p, end);

		if (eol == line)
			break; /* the empty line that ends the head */
		if (h->n_fields >= lim->max_fields)
			return fail (e, request ? 431 : 502, "too many header fields");
		if (split_field (line, eol, &h->fields[h->n_fields], bad, e) < 0)
			return -1;
		/* A continuation line belongs to this field: refuse before the
		 * field's own (truncated) value is judged. */
		if (p < end && (*p == ' ' || *p == '\t'))
			return fail (e, bad, "obsolete line folding");
		if (note_field (&h->fields[h->n_fields], request, h, &ct, e) < 0)
			return -1;
		h->n_fields++;
		if (p >= end)
			return fail (e, bad, "truncated head");
	}
	mark_connection_options (h, &ct);
	/* RFC 9112 6.1: a message with both is an attack or a bug; and
	 * Transfer-Encoding in HTTP/1.0 cannot be trusted. */
	if (h->has_transfer_encoding && h->has_content_length)
		return fail (e, bad, "both Content-Length and Transfer-Encoding");
	if (h->has_transfer_encoding && h->version_minor == 0)
		return fail (e, bad, "Transfer-Encoding in HTTP/1.0");
	return 0;
}

static void
head_reset (struct ab_http_head_s *h, size_t len)
{
	struct ab_http_field_s *fields = h->fields;

	memset (h, 0, sizeof *h);
	h->fields = fields;
	h->head_len = len;
}

int
ab_http_parse_request (const char *buf, size_t len, const struct ab_http_limits_s *lim,
                       struct ab_http_head_s *h, struct ab_http_error_s *e)
{
	const char *end = buf + len;
	const char *p = buf + leading_empty_lines (buf, len);
	const char *line = p;
	const char *eol;

	head_reset (h, len);
	eol = next_line (&p, end);
	if (parse_request_line (line, eol, h, e) < 0)
		return -1;
	if (parse_fields (p, end, lim, true, h, e) < 0)
		return -1;
	/* RFC 9112 3.2: exactly one Host in HTTP/1.1 (the proxy replaces it
	 * from the URL, but two of them mean the client is up to something). */
	if (h->n_host > 1)
		return fail (e, 400, "multiple Host fields");
	if (h->n_host == 0 && h->version_minor == 1)
		return fail (e, 400, "missing Host field");
	if (h->has_transfer_encoding)
		h->body = AB_HTTP_BODY_CHUNKED;
	else if (h->has_content_length)
		h->body = AB_HTTP_BODY_LENGTH;
	else
		h->body = AB_HTTP_BODY_NONE;
	return 0;
}

int
ab_http_parse_response (const char *buf, size_t len, const struct ab_http_limits_s *lim,
                        bool req_is_head, struct ab_http_head_s *h, struct ab_http_error_s *e)
{
	const char *end = buf + len;
	const char *p = buf + leading_empty_lines (buf, len);
	const char *line = p;
	const char *eol;

	head_reset (h, len);
	eol = next_line (&p, end);
	if (parse_status_line (line, eol, h, e) < 0)
		return -1;
	if (parse_fields (p, end, lim, false, h, e) < 0)
		return -1;
	/* RFC 9112 6.3, in its order. */
	if (req_is_head || h->status < 200 || h->status == 204 || h->status == 304)
		h->body = AB_HTTP_BODY_NONE;
	else if (h->has_transfer_encoding)
		h->body = AB_HTTP_BODY_CHUNKED;
	else if (h->has_content_length)
		h->body = AB_HTTP_BODY_LENGTH;
	else
		h->body = AB_HTTP_BODY_UNTIL_CLOSE;
	return 0;
}

static bool
is_scheme_char (char c, bool first)
{
	bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

	if (first)
		return alpha;
	return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

ab_http_uri_kind
ab_http_split_uri (const char *t, size_t len, struct ab_http_uri_s *u)
{
	size_t i = 0;
	size_t a;
	ab_http_uri_kind kind;

	memset (u, 0, sizeof *u);
	if (len == 0)
		return AB_URI_INVALID;
	if (t[0] == '/' || (len == 1 && t[0] == '*'))
		return AB_URI_NOT_ABSOLUTE;
	if (memchr (t, '#', len) != NULL)
		return AB_URI_INVALID;
	while (i < len && is_scheme_char (t[i], i == 0))
		i++;
	if (i == 0 || i + 3 > len || t[i] != ':' || t[i + 1] != '/' || t[i + 2] != '/')
		return AB_URI_INVALID;
	if (ab_http_token_eq (t, i, "http"))
		kind = AB_URI_HTTP;
	else if (ab_http_token_eq (t, i, "https"))
		kind = AB_URI_HTTPS;
	else
		kind = AB_URI_OTHER_SCHEME;
	a = i + 3;
	for (i = a; i < len && t[i] != '/' && t[i] != '?'; i++)
		if (t[i] == '@')
			return AB_URI_INVALID;
	if (i == a)
		return AB_URI_INVALID;
	u->authority = t + a;
	u->authority_len = i - a;
	u->path = t + i;
	u->path_len = len - i;
	return kind;
}

/* Chunked coding. */
enum {
	CH_SIZE = 0,
	CH_EXT_BWS, /* whitespace after the size: only ';' may follow */
	CH_EXT,
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER_START, /* first byte of a trailer line (or the final CRLF) */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_END_LF,
	CH_DONE,
};

/* 15 hex digits: chunk sizes stay below 2^60, far from overflow. */
#define CH_MAX_DIGITS  15
#define CH_MAX_TRAILER (16 * AB_HTTP_MAX_CHUNK_LINE)

void
ab_http_chunked_init (struct ab_http_chunked_s *c)
{
	memset (c, 0, sizeof *c);
	c->state = CH_SIZE;
}

/* One byte of a chunk-size line: 1*HEXDIG [ BWS ";" chunk-ext ] CRLF. */
static int
chunk_size_byte (struct ab_http_chunked_s *c, char ch, struct ab_http_error_s *e)
{
	if (++c->line_len > AB_HTTP_MAX_CHUNK_LINE)
		return fail (e, 400, "chunk size line too long");
	switch (c->state) {
	case CH_SIZE:
		if (is_class (ch, C_HEX)) {
			if (c->digits > 0 || ch != '0')
				c->digits++;
			if (c->digits > CH_MAX_DIGITS)
				return fail (e, 400, "chunk size too large");
			c->remaining = (c->remaining << 4) | (uint64_t)ab_hex_digit (ch);
			return 0;
		}
		if (c->line_len == 1)
			return fail (e, 400, "invalid chunk size");
		if (ch == '\r')
			c->state = CH_SIZE_LF;
		else if (ch == ';')
			c->state = CH_EXT;
		else if (ch == ' ' || ch == '\t')
			c->state = CH_EXT_BWS;
		else
			return fail (e, 400, "invalid chunk size");
		return 0;
	case CH_EXT_BWS:
		if (ch == ';')
			c->state = CH_EXT;
		else if (ch != ' ' && ch != '\t')
			return fail (e, 400, "invalid chunk extension");
		return 0;
	case CH_EXT:
		if (ch == '\r')
			c->state = CH_SIZE_LF;
		else if (!is_class (ch, C_FIELD))
			return fail (e, 400, "invalid chunk extension");
		return 0;
	default: /* CH_SIZE_LF */
		if (ch != '\n')
			return fail (e, 400, "bare CR in chunk size line");
		c->line_len = 0;
		c->digits = 0;
		if (c->remaining == 0) {
			c->state = CH_TRAILER_START;
			return 0;
		}
		c->state = CH_DATA;
		return 0;
	}
}

/* One byte of the trailer section: field lines, then CRLF (RFC 9112 7.1.2). */
static int
trailer_byte (struct ab_http_chunked_s *c, char ch, struct ab_http_error_s *e)
{
	if (++c->trailer_len > CH_MAX_TRAILER)
		return fail (e, 400, "trailer section too large");
	switch (c->state) {
	case CH_TRAILER_START:
		if (ch == '\r')
			c->state = CH_END_LF;
		else if (ch == ' ' || ch == '\t')
			return fail (e, 400, "obsolete line folding in trailer");
		else if (is_class (ch, C_TCHAR))
			c->state = CH_TRAILER_NAME;
		else
			return fail (e, 400, "invalid trailer field");
		return 0;
	case CH_TRAILER_NAME:
		if (ch == ':')
			c->state = CH_TRAILER_VALUE;
		else if (!is_class (ch, C_TCHAR))
			return fail (e, 400, "invalid trailer field");
		return 0;
	case CH_TRAILER_VALUE:
		if (ch == '\r')
			c->state = CH_TRAILER_LF;
		else if (!is_class (ch, C_FIELD))
			return fail (e, 400, "invalid trailer field");
		return 0;
	case CH_TRAILER_LF:
		if (ch != '\n')
			return fail (e, 400, "bare CR in trailer");
		c->state = CH_TRAILER_START;
		return 0;
	default: /* CH_END_LF */
		if (ch != '\n')
			return fail (e, 400, "bare CR after last chunk");
		c->state = CH_DONE;
		c->done = true;
		return 0;
	}
}

ssize_t
ab_http_chunked_advance (struct ab_http_chunked_s *c, const char *buf, size_t len,
                         struct ab_http_error_s *e)
{
	size_t i = 0;

	while (i < len && c->state != CH_DONE) {
		switch (c->state) {
		case CH_DATA: {
			size_t n = len - i;
			if ((uint64_t)n > c->remaining)
				n = (size_t)c->remaining;
			c->remaining -= n;
			i += n;
			if (c->remaining == 0)
				c->state = CH_DATA_CR;
			continue;
		}
		case CH_DATA_CR:
			if (buf[i] != '\r')
				return fail (e, 400, "missing CRLF after chunk data");
			c->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (buf[i] != '\n')
				return fail (e, 400, "missing CRLF after chunk data");
			c->state = CH_SIZE;
			break;
		case CH_SIZE:
		case CH_EXT_BWS:
		case CH_EXT:
		case CH_SIZE_LF:
			if (chunk_size_byte (c, buf[i], e) < 0)
				return -1;
			break;
		default:
			if (trailer_byte (c, buf[i], e) < 0)
				return -1;
			break;
		}
		i++;
	}
	return (ssize_t)i;
}

uint64_t
ab_http_chunked_data_left (const struct ab_http_chunked_s *c)
{
	return c->state == CH_DATA ? c->remaining : 0;
}
