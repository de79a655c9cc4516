/* The strict HTTP/1.1 head parser (src/net/http-head.c), table-driven:
 * every framing edge case the proxy must refuse, and the ordinary ones it
 * must accept.  Each head is also fed one byte at a time to
 * ab_http_head_end, which must reach the same verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/http-head.h"

#define MAX_FIELDS 8

static const struct ab_http_limits_s limits = { .max_head = 512, .max_fields = MAX_FIELDS };

/* Run head_end over all of `in`, then parse; returns the HTTP status of the
 * refusal, 0 if accepted, or -2 if the head is incomplete. */
static int
parse_req (const char *in, size_t len, struct ab_http_head_s *h)
{
	struct ab_http_error_s e = { 0, NULL };
	size_t scan = 0;
	ssize_t n = ab_http_head_end (in, len, &scan, &limits, &e);

	if (n < 0)
		return e.status;
	if (n == 0)
		return -2;
	if (ab_http_parse_request (in, (size_t)n, &limits, h, &e) < 0)
		return e.status;
	return 0;
}

/* The same input fed to head_end byte by byte must give the same verdict
 * on the boundary (complete / error / incomplete). */
static ssize_t
head_end_bytewise (const char *in, size_t len, int *status)
{
	struct ab_http_error_s e = { 0, NULL };
	size_t scan = 0;

	for (size_t i = 1; i <= len; i++) {
		ssize_t n = ab_http_head_end (in, i, &scan, &limits, &e);
		if (n != 0) {
			*status = n < 0 ? e.status : 0;
			return n;
		}
	}
	*status = -2;
	return 0;
}

struct req_case_s {
	const char *name;
	const char *in;
	int status; /* 0 accepted, -2 incomplete, else the refusal status */
	ab_http_body_kind body;
	uint64_t cl;
};

#define H "Host: example.com\r\n"
static const struct req_case_s req_cases[] = {
	{ "simple GET", "GET http://example.com/ HTTP/1.1\r\n" H "\r\n", 0, AB_HTTP_BODY_NONE, 0 },
	{ "HTTP/1.0 without Host", "GET http://example.com/ HTTP/1.0\r\n\r\n", 0, AB_HTTP_BODY_NONE,
	  0 },
	{ "CONNECT", "CONNECT example.com:443 HTTP/1.1\r\n" H "\r\n", 0, AB_HTTP_BODY_NONE, 0 },
	{ "leading empty line", "\r\nGET / HTTP/1.1\r\n" H "\r\n", 0, AB_HTTP_BODY_NONE, 0 },
	{ "two leading empty lines", "\r\n\r\nGET / HTTP/1.1\r\n" H "\r\n", 0, AB_HTTP_BODY_NONE,
	  0 },
	{ "content-length", "POST http://e/ HTTP/1.1\r\n" H "Content-Length: 5\r\n\r\n", 0,
	  AB_HTTP_BODY_LENGTH, 5 },
	{ "content-length 0", "POST http://e/ HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", 0,
	  AB_HTTP_BODY_LENGTH, 0 },
	{ "content-length OWS", "POST / HTTP/1.1\r\n" H "Content-Length: \t 7 \t\r\n\r\n", 0,
	  AB_HTTP_BODY_LENGTH, 7 },
	{ "chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n", 0,
	  AB_HTTP_BODY_CHUNKED, 0 },
	{ "chunked upper case", "POST / HTTP/1.1\r\n" H "transfer-encoding: CHUNKED\r\n\r\n", 0,
	  AB_HTTP_BODY_CHUNKED, 0 },
	{ "empty field value", "GET / HTTP/1.1\r\n" H "X-Empty:\r\n\r\n", 0, AB_HTTP_BODY_NONE, 0 },
	{ "obs-text in value", "GET / HTTP/1.1\r\n" H "X-A: caf\xc3\xa9\r\n\r\n", 0,
	  AB_HTTP_BODY_NONE, 0 },
	{ "8 fields is the limit",
	  "GET / HTTP/1.1\r\n" H "a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\nf: 6\r\ng: 7\r\n\r\n", 0,
	  AB_HTTP_BODY_NONE, 0 },

	/* request smuggling: RFC 9112 6.1, 6.3 */
	{ "CL and TE",
	  "POST / HTTP/1.1\r\n" H "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400, 0,
	  0 },
	{ "TE and CL",
	  "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400, 0,
	  0 },
	{ "duplicate CL", "POST / HTTP/1.1\r\n" H "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
	  400, 0, 0 },
	{ "duplicate CL differing",
	  "POST / HTTP/1.1\r\n" H "Content-Length: 5\r\ncontent-length: 6\r\n\r\n", 400, 0, 0 },
	{ "CL list", "POST / HTTP/1.1\r\n" H "Content-Length: 5, 5\r\n\r\n", 400, 0, 0 },
	{ "CL sign", "POST / HTTP/1.1\r\n" H "Content-Length: +5\r\n\r\n", 400, 0, 0 },
	{ "CL negative", "POST / HTTP/1.1\r\n" H "Content-Length: -1\r\n\r\n", 400, 0, 0 },
	{ "CL hex", "POST / HTTP/1.1\r\n" H "Content-Length: 0x10\r\n\r\n", 400, 0, 0 },
	{ "CL empty", "POST / HTTP/1.1\r\n" H "Content-Length:\r\n\r\n", 400, 0, 0 },
	{ "CL space inside", "POST / HTTP/1.1\r\n" H "Content-Length: 1 0\r\n\r\n", 400, 0, 0 },
	{ "CL overflow", "POST / HTTP/1.1\r\n" H "Content-Length: 99999999999999999999999\r\n\r\n",
	  400, 0, 0 },
	{ "CL beyond 2^53", "POST / HTTP/1.1\r\n" H "Content-Length: 9007199254740993\r\n\r\n", 400,
	  0, 0 },
	{ "TE gzip, chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip, chunked\r\n\r\n",
	  501, 0, 0 },
	{ "TE chunked, identity",
	  "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked, identity\r\n\r\n", 501, 0, 0 },
	{ "TE xchunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: xchunked\r\n\r\n", 501, 0, 0 },
	{ "TE identity", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: identity\r\n\r\n", 501, 0, 0 },
	{ "TE twice",
	  "POST / HTTP/1.1\r\n" H
	  "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	  400, 0, 0 },
	{ "TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, 0, 0 },
	{ "space before colon", "POST / HTTP/1.1\r\n" H "Transfer-Encoding : chunked\r\n\r\n", 400,
	  0, 0 },
	{ "tab before colon", "POST / HTTP/1.1\r\n" H "Content-Length\t: 5\r\n\r\n", 400, 0, 0 },
	{ "obs-fold", "GET / HTTP/1.1\r\n" H "X-A: a\r\n b\r\n\r\n", 400, 0, 0 },
	{ "obs-fold tab", "GET / HTTP/1.1\r\n" H "X-A: a\r\n\tb\r\n\r\n", 400, 0, 0 },
	{ "obs-fold of Transfer-Encoding",
	  "POST / HTTP/1.1\r\n" H "Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n\r\n",
	  400, 0, 0 },
	{ "whitespace before first field", "GET / HTTP/1.1\r\n " H "\r\n", 400, 0, 0 },
	{ "bare CR in value", "GET / HTTP/1.1\r\n" H "X-A: a\rb\r\n\r\n", 400, 0, 0 },
	{ "bare CR line end", "GET / HTTP/1.1\r\n" H "X-A: a\r\r\n\r\n", 400, 0, 0 },
	{ "bare LF line end", "GET / HTTP/1.1\r\n" H "X-A: a\n\r\n", 400, 0, 0 },
	{ "bare LF head end", "GET / HTTP/1.1\n\n", 400, 0, 0 },
	{ "NUL in value", "GET / HTTP/1.1\r\n" H "X-A: a\0b\r\n\r\n", 400, 0, 0 },
	{ "control in value", "GET / HTTP/1.1\r\n" H "X-A: a\x01z\r\n\r\n", 400, 0, 0 },
	{ "DEL in value", "GET / HTTP/1.1\r\n" H "X-A: a\x7fz\r\n\r\n", 400, 0, 0 },
	{ "empty field name", "GET / HTTP/1.1\r\n" H ": v\r\n\r\n", 400, 0, 0 },
	{ "no colon", "GET / HTTP/1.1\r\n" H "X-A\r\n\r\n", 400, 0, 0 },
	{ "bad name char", "GET / HTTP/1.1\r\n" H "X(A): v\r\n\r\n", 400, 0, 0 },
	{ "two Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, 0, 0 },
	{ "no Host in 1.1", "GET http://a/ HTTP/1.1\r\n\r\n", 400, 0, 0 },
	{ "9 fields",
	  "GET / HTTP/1.1\r\n" H
	  "a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\nf: 6\r\ng: 7\r\nh: 8\r\n\r\n",
	  431, 0, 0 },
	{ "bad Connection token", "GET / HTTP/1.1\r\n" H "Connection: clo se\r\n\r\n", 400, 0, 0 },

	/* request line */
	{ "lower-case version", "GET / http/1.1\r\n" H "\r\n", 400, 0, 0 },
	{ "HTTP/2.0", "GET / HTTP/2.0\r\n" H "\r\n", 505, 0, 0 },
	{ "HTTP/1.2", "GET / HTTP/1.2\r\n" H "\r\n", 505, 0, 0 },
	{ "HTTP/0.9 style", "GET /\r\n\r\n", 400, 0, 0 },
	{ "two spaces", "GET  / HTTP/1.1\r\n" H "\r\n", 400, 0, 0 },
	{ "tab separator", "GET\t/ HTTP/1.1\r\n" H "\r\n", 400, 0, 0 },
	{ "trailing space", "GET / HTTP/1.1 \r\n" H "\r\n", 400, 0, 0 },
	{ "bad method char", "G(T / HTTP/1.1\r\n" H "\r\n", 400, 0, 0 },
	{ "empty method", " / HTTP/1.1\r\n" H "\r\n", 400, 0, 0 },
	{ "non-ASCII target", "GET /caf\xc3\xa9 HTTP/1.1\r\n" H "\r\n", 400, 0, 0 },
	{ "incomplete", "GET / HTTP/1.1\r\n" H, -2, 0, 0 },
	{ "incomplete after CR", "GET / HTTP/1.1\r\n" H "\r", -2, 0, 0 },
};

static void
test_requests (void **state)
{
	for (size_t i = 0; i < sizeof req_cases / sizeof req_cases[0]; i++) {
		const struct req_case_s *tc = &req_cases[i];
		size_t len = strlen (tc->in);
		struct ab_http_field_s fields[MAX_FIELDS];
		struct ab_http_head_s h = { .fields = fields };
		int st;
		int bw_status;
		ssize_t bw;

		/* Cases with an embedded NUL: measure up to the final CRLFCRLF. */
		if (strstr (tc->name, "NUL") != NULL)
			len = sizeof "GET / HTTP/1.1\r\n" H "X-A: a\0b\r\n\r\n" - 1;
		st = parse_req (tc->in, len, &h);
		if (st != tc->status)
			fail_msg ("%s: status %d, want %d", tc->name, st, tc->status);
		bw = head_end_bytewise (tc->in, len, &bw_status);
		/* head_end refuses framing-level errors itself; others are
		 * refused by the parser after head_end accepted the boundary. */
		if (bw < 0 && bw_status != tc->status)
			fail_msg ("%s: bytewise status %d, want %d", tc->name, bw_status,
			          tc->status);
		if (tc->status == -2 && bw != 0)
			fail_msg ("%s: bytewise found an end", tc->name);
		if (st == 0) {
			if (h.body != tc->body)
				fail_msg ("%s: body %d, want %d", tc->name, h.body, tc->body);
			if (h.content_length != tc->cl)
				fail_msg ("%s: CL %llu", tc->name,
				          (unsigned long long)h.content_length);
		}
	}
}

static void
test_oversized_head (void **state)
{
	char big[1024];
	struct ab_http_error_s e = { 0, NULL };
	size_t scan = 0;
	int n = snprintf (big, sizeof big, "GET / HTTP/1.1\r\nX-Big: ");

	memset (big + n, 'a', sizeof big - (size_t)n);
	assert_int_equal (ab_http_head_end (big, sizeof big, &scan, &limits, &e), -1);
	assert_int_equal (e.status, 431);
	/* Exactly at the limit is fine; one byte over is not. */
	{
		char edge[513];
		const char *pre = "GET / HTTP/1.1\r\nX: ";
		size_t pl = strlen (pre);
		memcpy (edge, pre, pl);
		memset (edge + pl, 'b', 512 - pl - 4);
		memcpy (edge + 508, "\r\n\r\n", 4);
		scan = 0;
		assert_int_equal (ab_http_head_end (edge, 512, &scan, &limits, &e), 512);
		edge[508] = 'b';
		memcpy (edge + 509, "\r\n\r\n", 4);
		scan = 0;
		assert_int_equal (ab_http_head_end (edge, 513, &scan, &limits, &e), -1);
		assert_int_equal (e.status, 431);
	}
}

/* The flags of the named field, -1 if there is none. */
static int
field_flags (const struct ab_http_head_s *h, const char *name)
{
	for (unsigned i = 0; i < h->n_fields; i++)
		if (ab_http_token_eq (h->fields[i].name, h->fields[i].name_len, name))
			return (int)h->fields[i].flags;
	return -1;
}

static void
test_hop_by_hop (void **state)
{
	static const char in[] = "GET http://e/ HTTP/1.1\r\n"
	                         "Host: e\r\n"
	                         "Connection: keep-alive, X-Secret , close\r\n"
	                         "Keep-Alive: 5\r\n"
	                         "Proxy-Connection: keep-alive\r\n"
	                         "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
	                         "TE: trailers\r\n"
	                         "Trailer: X-T\r\n"
	                         "X-Secret: 1\r\n"
	                         "Accept: */*\r\n\r\n";
	static const struct {
		const char *name;
		unsigned flags;
	} want[] = {
		{ "host", AB_HTTP_F_HOST },
		{ "connection", AB_HTTP_F_HOP },
		{ "keep-alive", AB_HTTP_F_HOP },
		{ "proxy-connection", AB_HTTP_F_HOP },
		{ "proxy-authorization", AB_HTTP_F_HOP },
		{ "te", AB_HTTP_F_HOP },
		{ "trailer", AB_HTTP_F_HOP },
		{ "x-secret", AB_HTTP_F_HOP },
		{ "accept", 0 },
	};
	struct ab_http_field_s fields[16];
	struct ab_http_limits_s lim = { .max_head = 4096, .max_fields = 16 };
	struct ab_http_head_s h = { .fields = fields };
	struct ab_http_error_s e;

	assert_int_equal (ab_http_parse_request (in, sizeof in - 1, &lim, &h, &e), 0);
	assert_true (h.conn_close);
	assert_true (h.conn_keep_alive);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int flags = field_flags (&h, want[i].name);
		if (flags != (int)want[i].flags)
			fail_msg ("%s: flags %d want %u", want[i].name, flags, want[i].flags);
	}
	/* Upgrade and framing fields. */
	{
		static const char in2[] =
		        "POST / HTTP/1.1\r\nHost: e\r\nUpgrade: websocket\r\n"
		        "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n";
		assert_int_equal (ab_http_parse_request (in2, sizeof in2 - 1, &lim, &h, &e), 0);
		assert_int_equal (field_flags (&h, "upgrade"), AB_HTTP_F_HOP);
		assert_int_equal (field_flags (&h, "transfer-encoding"),
		                  AB_HTTP_F_HOP | AB_HTTP_F_FRAMING);
		assert_true (h.expect_continue);
	}
}

static void
test_field_values_trimmed (void **state)
{
	static const char in[] = "GET / HTTP/1.1\r\nHost:  \t e.com \t\r\nX-A:b\r\n\r\n";
	struct ab_http_field_s fields[4];
	struct ab_http_limits_s lim = { .max_head = 4096, .max_fields = 4 };
	struct ab_http_head_s h = { .fields = fields };
	struct ab_http_error_s e;

	assert_int_equal (ab_http_parse_request (in, sizeof in - 1, &lim, &h, &e), 0);
	assert_int_equal (h.n_fields, 2);
	assert_int_equal (fields[0].value_len, 5);
	assert_memory_equal (fields[0].value, "e.com", 5);
	assert_int_equal (fields[1].value_len, 1);
	assert_int_equal (h.method_len, 3);
	assert_int_equal (h.target_len, 1);
	assert_int_equal (h.version_minor, 1);
}

struct resp_case_s {
	const char *name;
	const char *in;
	bool req_is_head;
	int status; /* 0 accepted, else refusal (502) */
	int code;   /* parsed status code */
	ab_http_body_kind body;
};

static const struct resp_case_s resp_cases[] = {
	{ "200 CL", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", false, 0, 200,
	  AB_HTTP_BODY_LENGTH },
	{ "200 chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, 0, 200,
	  AB_HTTP_BODY_CHUNKED },
	{ "200 until close", "HTTP/1.0 200 OK\r\n\r\n", false, 0, 200, AB_HTTP_BODY_UNTIL_CLOSE },
	{ "204", "HTTP/1.1 204 No Content\r\n\r\n", false, 0, 204, AB_HTTP_BODY_NONE },
	{ "304 with CL", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, 0, 304,
	  AB_HTTP_BODY_NONE },
	{ "HEAD response", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true, 0, 200,
	  AB_HTTP_BODY_NONE },
	{ "100 continue", "HTTP/1.1 100 Continue\r\n\r\n", false, 0, 100, AB_HTTP_BODY_NONE },
	{ "no reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, 0, 200,
	  AB_HTTP_BODY_LENGTH },
	{ "empty reason", "HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n", false, 0, 404,
	  AB_HTTP_BODY_LENGTH },
	{ "CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
	  false, 502, 0, 0 },
	{ "duplicate CL", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
	  false, 502, 0, 0 },
	{ "TE gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, 502, 0, 0 },
	{ "obs-fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n\r\n", false, 502, 0, 0 },
	{ "status 600", "HTTP/1.1 600 X\r\n\r\n", false, 502, 0, 0 },
	{ "status 99", "HTTP/1.1 099 X\r\n\r\n", false, 502, 0, 0 },
	{ "status 2 digits", "HTTP/1.1 20 X\r\n\r\n", false, 502, 0, 0 },
	{ "no space", "HTTP/1.1 200OK\r\n\r\n", false, 502, 0, 0 },
	{ "HTTP/2", "HTTP/2.0 200 OK\r\n\r\n", false, 502, 0, 0 },
	{ "garbage", "ICY 200 OK\r\n\r\n", false, 502, 0, 0 },
	{ "control in reason", "HTTP/1.1 200 O\x01K\r\n\r\n", false, 502, 0, 0 },
};

static void
test_responses (void **state)
{
	for (size_t i = 0; i < sizeof resp_cases / sizeof resp_cases[0]; i++) {
		const struct resp_case_s *tc = &resp_cases[i];
		struct ab_http_field_s fields[MAX_FIELDS];
		struct ab_http_head_s h = { .fields = fields };
		struct ab_http_error_s e = { 0, NULL };
		size_t scan = 0;
		ssize_t n = ab_http_head_end (tc->in, strlen (tc->in), &scan, &limits, &e);
		int st;

		if (n <= 0)
			fail_msg ("%s: head_end %zd", tc->name, n);
		st = ab_http_parse_response (tc->in, (size_t)n, &limits, tc->req_is_head, &h, &e)
		                     < 0
		             ? e.status
		             : 0;
		if (st != tc->status)
			fail_msg ("%s: status %d want %d (%s)", tc->name, st, tc->status,
			          st ? e.reason : "");
		if (st == 0 && (h.status != tc->code || h.body != tc->body))
			fail_msg ("%s: code %d body %d", tc->name, h.status, h.body);
	}
}

struct chunk_case_s {
	const char *name;
	const char *in;
	ssize_t consumed; /* -1: refused */
	bool done;
};

static const struct chunk_case_s chunk_cases[] = {
	{ "one chunk", "5\r\nhello\r\n0\r\n\r\n", 15, true },
	{ "trailing bytes not taken", "0\r\n\r\nGET", 5, true },
	{ "two chunks", "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", 20, true },
	{ "hex upper", "A\r\n0123456789\r\n0\r\n\r\n", 20, true },
	{ "hex lower", "a\r\n0123456789\r\n0\r\n\r\n", 20, true },
	{ "leading zeros", "0005\r\nhello\r\n0\r\n\r\n", 18, true },
	{ "extension", "5;name=value\r\nhello\r\n0\r\n\r\n", 26, true },
	{ "extension quoted", "5;n=\"v v\"\r\nhello\r\n0\r\n\r\n", 23, true },
	{ "BWS before ;", "5 ;x\r\nhello\r\n0\r\n\r\n", 18, true },
	{ "trailer", "0\r\nX-T: 1\r\n\r\n", 13, true },
	{ "incomplete", "5\r\nhel", 6, false },
	{ "incomplete trailer", "0\r\nX-T: 1\r\n", 11, false },
	{ "empty size", "\r\nhello\r\n0\r\n\r\n", -1, false },
	{ "non-hex size", "g\r\n", -1, false },
	{ "size with sign", "+5\r\nhello\r\n", -1, false },
	{ "size 0x", "0x5\r\nhello\r\n", -1, false },
	{ "space without ext", "5 \r\nhello\r\n", -1, false },
	{ "overflow 16 digits", "10000000000000000\r\n", -1, false },
	{ "overflow 64-bit wrap", "ffffffffffffffff\r\n", -1, false },
	{ "just under limit", "fffffffffffffff\r\n", 17, false },
	{ "bare LF after size", "5\nhello\r\n", -1, false },
	{ "bare CR after size", "5\rhello\r\n", -1, false },
	{ "data longer than size", "3\r\nabcd\r\n", -1, false },
	{ "missing CRLF after data", "3\r\nabc0\r\n\r\n", -1, false },
	{ "LF only after data", "3\r\nabc\n0\r\n\r\n", -1, false },
	{ "bare CR in ext", "5;a\rb\r\nhello\r\n", -1, false },
	{ "control in ext", "5;a\x01\r\nhello\r\n", -1, false },
	{ "obs-fold in trailer", "0\r\nX-T: 1\r\n 2\r\n\r\n", -1, false },
	{ "bad trailer name", "0\r\n(x): 1\r\n\r\n", -1, false },
	{ "bare LF ends trailers", "0\r\n\n", -1, false },
	{ "bare CR in trailer", "0\r\nX: a\rb\r\n\r\n", -1, false },
};

static void
test_chunked (void **state)
{
	for (size_t i = 0; i < sizeof chunk_cases / sizeof chunk_cases[0]; i++) {
		const struct chunk_case_s *tc = &chunk_cases[i];
		size_t len = strlen (tc->in);
		struct ab_http_chunked_s c;
		struct ab_http_error_s e;
		ssize_t n;
		ssize_t total = 0;
		bool failed = false;

		ab_http_chunked_init (&c);
		n = ab_http_chunked_advance (&c, tc->in, len, &e);
		if (n != tc->consumed || (n >= 0 && c.done != tc->done))
			fail_msg ("%s: consumed %zd done %d, want %zd %d", tc->name, n, c.done,
			          tc->consumed, tc->done);
		/* One byte at a time must agree. */
		ab_http_chunked_init (&c);
		for (size_t k = 0; k < len && !c.done; k++) {
			n = ab_http_chunked_advance (&c, tc->in + k, 1, &e);
			if (n < 0) {
				failed = true;
				break;
			}
			total += n;
		}
		if (failed != (tc->consumed < 0) || (!failed && total != tc->consumed))
			fail_msg ("%s: bytewise failed=%d total=%zd", tc->name, failed, total);
	}
}

static void
test_chunked_large_chunk (void **state)
{
	/* A chunk bigger than any buffer streams through in pieces. */
	static char buf[70000];
	struct ab_http_chunked_s c;
	struct ab_http_error_s e;
	size_t off = (size_t)snprintf (buf, sizeof buf, "10000\r\n");
	size_t total = 0;

	memset (buf + off, 'x', 0x10000);
	off += 0x10000;
	memcpy (buf + off, "\r\n0\r\n\r\n", 7);
	off += 7;
	ab_http_chunked_init (&c);
	for (size_t k = 0; k < off; k += 1000) {
		size_t n = off - k < 1000 ? off - k : 1000;
		ssize_t r = ab_http_chunked_advance (&c, buf + k, n, &e);
		assert_true (r >= 0);
		total += (size_t)r;
	}
	assert_true (c.done);
	assert_int_equal (total, off);
}

struct uri_case_s {
	const char *in;
	ab_http_uri_kind kind;
	const char *authority;
	const char *path;
};

static const struct uri_case_s uri_cases[] = {
	{ "http://example.com/", AB_URI_HTTP, "example.com", "/" },
	{ "http://example.com", AB_URI_HTTP, "example.com", "" },
	{ "HTTP://Example.com:8080/a?b=c", AB_URI_HTTP, "Example.com:8080", "/a?b=c" },
	{ "http://example.com?q", AB_URI_HTTP, "example.com", "?q" },
	{ "http://[::1]:80/x", AB_URI_HTTP, "[::1]:80", "/x" },
	{ "https://example.com/", AB_URI_HTTPS, "example.com", "/" },
	{ "ftp://example.com/", AB_URI_OTHER_SCHEME, "example.com", "/" },
	{ "/index.html", AB_URI_NOT_ABSOLUTE, NULL, NULL },
	{ "*", AB_URI_NOT_ABSOLUTE, NULL, NULL },
	{ "example.com:443", AB_URI_INVALID, NULL, NULL },
	{ "http:/example.com/", AB_URI_INVALID, NULL, NULL },
	{ "http:example.com", AB_URI_INVALID, NULL, NULL },
	{ "http:///path", AB_URI_INVALID, NULL, NULL },
	{ "http://user:pw@example.com/", AB_URI_INVALID, NULL, NULL },
	{ "http://evil.com@good.com/", AB_URI_INVALID, NULL, NULL },
	{ "http://example.com/#frag", AB_URI_INVALID, NULL, NULL },
	{ "1http://x/", AB_URI_INVALID, NULL, NULL },
	{ "", AB_URI_INVALID, NULL, NULL },
};

static void
test_uris (void **state)
{
	for (size_t i = 0; i < sizeof uri_cases / sizeof uri_cases[0]; i++) {
		const struct uri_case_s *tc = &uri_cases[i];
		struct ab_http_uri_s u;
		ab_http_uri_kind k = ab_http_split_uri (tc->in, strlen (tc->in), &u);

		if (k != tc->kind)
			fail_msg ("%s: kind %d want %d", tc->in, k, tc->kind);
		if (tc->authority
		    && (u.authority_len != strlen (tc->authority)
		        || memcmp (u.authority, tc->authority, u.authority_len) != 0))
			fail_msg ("%s: authority %.*s", tc->in, (int)u.authority_len, u.authority);
		if (tc->path
		    && (u.path_len != strlen (tc->path)
		        || memcmp (u.path, tc->path, u.path_len) != 0))
			fail_msg ("%s: path %.*s", tc->in, (int)u.path_len, u.path);
	}
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_requests),
		cmocka_unit_test (test_oversized_head),
		cmocka_unit_test (test_hop_by_hop),
		cmocka_unit_test (test_field_values_trimmed),
		cmocka_unit_test (test_responses),
		cmocka_unit_test (test_chunked),
		cmocka_unit_test (test_chunked_large_chunk),
		cmocka_unit_test (test_uris),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
