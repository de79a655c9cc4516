/* The preview bridge's pure parts, table-driven: the input documents
 * (targets, paths, header filtering), chunked decoding and the
 * response-header object built from the strict parser's fields, and the
 * signalling store (ordering, role filter, the 256-message window, byte
 * and session bounds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/http-head.h"
#include "net/preview-cdp.h"
#include "net/preview-doc.h"
#include "net/preview-http.h"
#include "net/preview-signal-store.h"

/* ---- targets and paths ------------------------------------------------------------ */

static const struct {
	const char *json;
	bool ok;
} targets[] = {
	{ "{\"hostname\":\"localhost\",\"port\":3000}", true },
	{ "{\"hostname\":\"127.0.0.1\",\"port\":1}", true },
	{ "{\"hostname\":\"my_app.internal-1\",\"port\":65535}", true },
	{ "{\"hostname\":\"A\",\"port\":80}", true },
	{ "{\"hostname\":\"localhost\",\"port\":0}", false },
	{ "{\"hostname\":\"localhost\",\"port\":65536}", false },
	{ "{\"hostname\":\"localhost\",\"port\":\"80\"}", false },
	{ "{\"hostname\":\"localhost\",\"port\":80.5}", false },
	{ "{\"hostname\":\"localhost\"}", false },
	{ "{\"port\":80}", false },
	{ "{\"hostname\":\"\",\"port\":80}", false },
	{ "{\"hostname\":\"-lead\",\"port\":80}", false },
	{ "{\"hostname\":\".lead\",\"port\":80}", false },
	{ "{\"hostname\":\"a b\",\"port\":80}", false },
	{ "{\"hostname\":\"a:b\",\"port\":80}", false },
	{ "{\"hostname\":\"a/b\",\"port\":80}", false },
	{ "{\"hostname\":\"[::1]\",\"port\":80}", false },
	{ "{\"hostname\":\"a\\u0000b\",\"port\":80}", false },
	{ "{\"hostname\":\"h\\u00e9\",\"port\":80}", false },
	{ "{\"hostname\":\"2130706433\",\"port\":80}", false }, /* inet_aton's 127.0.0.1 */
	{ "{\"hostname\":\"127.1\",\"port\":80}", false },
	{ "{\"hostname\":\"0x7f.1\",\"port\":80}", false },
	{ "\"localhost:80\"", false },
	{ "null", false },
};

static void
test_targets (void **state)
{
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		json_t *v = json_loads (targets[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		struct ab_preview_target_s t;

		printf ("  %s\n", targets[i].json);
		assert_non_null (v);
		assert_int_equal (ab_preview_parse_target (v, &t) == 0, targets[i].ok);
		json_decref (v);
	}
}

static void
test_target_length_and_host_field (void **state)
{
	char name[200];
	json_t *v;
	struct ab_preview_target_s t;

	/* 128 characters is the longest the pattern allows, 129 is refused. */
	memset (name, 'a', sizeof name);
	for (int i = 60; i < 128; i += 61)
		name[i] = '.'; /* keep DNS labels under 64 */
	name[128] = '\0';
	v = json_pack ("{s:s, s:i}", "hostname", name, "port", 8080);
	assert_int_equal (ab_preview_parse_target (v, &t), 0);
	assert_int_equal (strlen (t.host_header), 128 + 5);
	json_decref (v);
	name[128] = 'a';
	name[129] = '\0';
	v = json_pack ("{s:s, s:i}", "hostname", name, "port", 8080);
	assert_int_equal (ab_preview_parse_target (v, &t), -1);
	json_decref (v);
	v = json_pack ("{s:s, s:i}", "hostname", "Dev.Local", "port", 5173);
	assert_int_equal (ab_preview_parse_target (v, &t), 0);
	assert_string_equal (t.host_header, "Dev.Local:5173");
	json_decref (v);
}

static void
test_paths (void **state)
{
	static const struct {
		const char *p;
		bool ok;
	} paths[] = {
		{ "/", true },
		{ "/a/b?c=d&e=%20", true },
		{ "/~x!$'()*+,;=:@", true },
		{ "", false },
		{ "a", false },
		{ "/a b", false },
		{ "/a\r\nX: y", false },
		{ "/a\tb", false },
		{ "/a#frag", false },
		{ "/caf\xc3\xa9", false },
		{ "http://x/", false },
		{ "/\x7f", false },
	};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		assert_int_equal (ab_preview_path_valid (paths[i].p), paths[i].ok);
}

/* ---- header filtering -------------------------------------------------------------- */

static void
test_request_headers (void **state)
{
	char long_name[200], long_value[9000];
	json_t *h;
	struct ab_preview_headers_s out;

	memset (long_name, 'n', 129);
	long_name[129] = '\0';
	memset (long_value, 'v', 8193);
	long_value[8193] = '\0';
	h = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:[s,s], s:i, s:s, s:s, s:s}",
	               "accept", "text/html", long_name, "x", "x-long", long_value, "x-crlf",
	               "a\r\nX: y", "bad name", "x", "Host", "evil", "content-length", "5",
	               "Connection", "close", "transfer-encoding", "chunked", "x-list", "a", "b",
	               "x-number", 5, "x-tab", "a\tb", "sec-websocket-key", "k", "Upgrade", "h2c");
	assert_non_null (h);
	assert_int_equal (ab_preview_parse_headers (h, AB_PREVIEW_HDRS_HTTP, &out), 0);
	/* Kept: accept, x-list (joined), x-tab, sec-websocket-key (only the
	 * WebSocket mode drops it). */
	assert_int_equal (out.n, 4);
	assert_string_equal (out.v[0].name, "accept");
	assert_string_equal (out.v[1].name, "x-list");
	assert_string_equal (out.v[1].value, "a, b");
	assert_string_equal (out.v[2].name, "x-tab");
	assert_string_equal (out.v[3].name, "sec-websocket-key");
	ab_preview_headers_free (&out);
	assert_int_equal (ab_preview_parse_headers (h, AB_PREVIEW_HDRS_WEBSOCKET, &out), 0);
	assert_int_equal (out.n, 3);
	ab_preview_headers_free (&out);
	json_decref (h);

	/* The limits are inclusive: 128 and 8192 characters pass. */
	long_name[128] = '\0';
	long_value[8192] = '\0';
	h = json_pack ("{s:s}", long_name, long_value);
	assert_int_equal (ab_preview_parse_headers (h, AB_PREVIEW_HDRS_HTTP, &out), 0);
	assert_int_equal (out.n, 1);
	ab_preview_headers_free (&out);
	json_decref (h);

	/* Characters, not bytes: 8192 two-byte characters pass, 8193 do not. */
	{
		char *wide = malloc (2 * 8193 + 1);
		for (int i = 0; i < 8193; i++)
			memcpy (wide + 2 * i, "\xc3\xa9", 2);
		wide[2 * 8192] = '\0';
		h = json_pack ("{s:s}", "x-wide", wide);
		assert_int_equal (ab_preview_parse_headers (h, AB_PREVIEW_HDRS_HTTP, &out), 0);
		assert_int_equal (out.n, 1);
		ab_preview_headers_free (&out);
		json_decref (h);
		memcpy (wide + 2 * 8192, "\xc3\xa9", 3);
		h = json_pack ("{s:s}", "x-wide", wide);
		assert_int_equal (ab_preview_parse_headers (h, AB_PREVIEW_HDRS_HTTP, &out), 0);
		assert_int_equal (out.n, 0);
		json_decref (h);
		free (wide);
	}

	h = json_pack ("[s]", "x");
	assert_int_equal (ab_preview_parse_headers (h, AB_PREVIEW_HDRS_HTTP, &out), -1);
	json_decref (h);
	assert_int_equal (ab_preview_parse_headers (NULL, AB_PREVIEW_HDRS_HTTP, &out), 0);
	assert_int_equal (out.n, 0);
}

static void
test_request_head_format (void **state)
{
	struct ab_preview_header_s f[] = { { (char *)"accept", (char *)"*/*" } };
	struct ab_preview_headers_s h = { f, 1 };
	struct ab_preview_http_req_s get = { "GET", "/x?y", "localhost:3000", &h, NULL, 0 };
	struct ab_preview_http_req_s post = { "POST", "/", "h:1", NULL, (const uint8_t *)"abc", 3 };
	struct ab_iobuf_s out = { 0 };

	ab_preview_http_format_request (&get, &out);
	ab_iobuf_append (&out, "", 1);
	assert_string_equal (ab_iobuf_peek (&out), "GET /x?y HTTP/1.1\r\nHost: localhost:3000\r\n"
	                                           "accept: */*\r\nConnection: close\r\n\r\n");
	ab_iobuf_free (&out);
	ab_preview_http_format_request (&post, &out);
	ab_iobuf_append (&out, "", 1);
	assert_string_equal (ab_iobuf_peek (&out),
	                     "POST / HTTP/1.1\r\nHost: h:1\r\n"
	                     "Connection: close\r\nContent-Length: 3\r\n\r\n");
	ab_iobuf_free (&out);
}

/* ---- responses: headers and chunked bodies ------------------------------------------- */

static void
test_response_headers_json (void **state)
{
	static const char head[] = "HTTP/1.1 200 OK\r\n"
	                           "Set-Cookie: a=1\r\n"
	                           "Content-Type: text/plain\r\n"
	                           "set-cookie: b=2\r\n"
	                           "Connection: close, x-hop\r\n"
	                           "X-Hop: gone\r\n"
	                           "Keep-Alive: timeout=5\r\n"
	                           "Transfer-Encoding: chunked\r\n"
	                           "SET-COOKIE: c=3\r\n"
	                           "\r\n";
	const struct ab_http_limits_s lim = { .max_head = 4096, .max_fields = 16 };
	struct ab_http_field_s fields[16];
	struct ab_http_head_s h = { .fields = fields };
	struct ab_http_error_s e;
	json_t *o;
	char *text;

	assert_int_equal (ab_http_parse_response (head, sizeof head - 1, &lim, false, &h, &e), 0);
	o = ab_preview_http_headers_json (&h);
	text = json_dumps (o, JSON_COMPACT);
	assert_string_equal (text,
	                     "{\"set-cookie\":\"a=1, b=2, c=3\",\"content-type\":\"text/plain\"}");
	free (text);
	json_decref (o);
}

static void
test_response_header_limits (void **state)
{
	char head[20000];
	char name[130], value[8200];
	const struct ab_http_limits_s lim = { .max_head = sizeof head, .max_fields = 16 };
	struct ab_http_field_s fields[16];
	struct ab_http_head_s h = { .fields = fields };
	struct ab_http_error_s e;
	json_t *o;

	memset (name, 'n', 129);
	name[129] = '\0';
	memset (value, 'v', 8193);
	value[8193] = '\0';
	snprintf (head, sizeof head,
	          "HTTP/1.1 204 No\r\n%s: 1\r\nx-big: %s\r\nx-edge: %.8192s\r\n\r\n", name, value,
	          value);
	assert_int_equal (ab_http_parse_response (head, strlen (head), &lim, false, &h, &e), 0);
	o = ab_preview_http_headers_json (&h);
	assert_int_equal (json_object_size (o), 1);
	assert_int_equal (json_string_length (json_object_get (o, "x-edge")), 8192);
	json_decref (o);
}

static const struct {
	const char *name;
	const char *in;
	int verdict; /* 0 done, -1 malformed, -2 too big, 1 needs more */
	const char *data;
} chunked_cases[] = {
	{ "two chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 0, "hello world" },
	{ "extension and trailer", "3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n", 0, "abc" },
	{ "hex size", "A\r\n0123456789\r\n0\r\n\r\n", 0, "0123456789" },
	{ "not finished", "5\r\nhel", 1, "hel" },
	{ "missing CRLF after data", "3\r\nabcX\r\n0\r\n\r\n", -1, NULL },
	{ "bad size", "g\r\n", -1, NULL },
	{ "over the limit", "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n", -2, NULL },
};

static void
test_dechunk (void **state)
{
	for (size_t i = 0; i < sizeof chunked_cases / sizeof chunked_cases[0]; i++) {
		const char *in = chunked_cases[i].in;
		struct ab_http_chunked_s c;
		struct ab_http_error_s e;
		struct ab_iobuf_s out = { 0 };
		ssize_t n = 0;
		int verdict;

		printf ("  %s\n", chunked_cases[i].name);
		/* Fed one byte at a time: the decoder must not depend on where
		 * the reads split. */
		ab_http_chunked_init (&c);
		for (size_t k = 0; k < strlen (in) && !c.done; k++) {
			n = ab_preview_dechunk (&c, in + k, 1, &out, 16, &e);
			if (n < 0)
				break;
		}
		verdict = n < 0 ? (int)n : c.done ? 0 : 1;
		assert_int_equal (verdict, chunked_cases[i].verdict);
		if (chunked_cases[i].data) {
			assert_int_equal (ab_iobuf_len (&out), strlen (chunked_cases[i].data));
			assert_memory_equal (ab_iobuf_peek (&out), chunked_cases[i].data,
			                     ab_iobuf_len (&out));
		}
		ab_iobuf_free (&out);
	}
}

static void
test_dechunk_stops_at_message_end (void **state)
{
	static const char in[] = "2\r\nab\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
	struct ab_http_chunked_s c;
	struct ab_http_error_s e;
	struct ab_iobuf_s out = { 0 };

	ab_http_chunked_init (&c);
	assert_int_equal (ab_preview_dechunk (&c, in, sizeof in - 1, &out, 100, &e), 12);
	assert_true (c.done);
	assert_int_equal (ab_iobuf_len (&out), 2);
	ab_iobuf_free (&out);
}

/* ---- the signalling store --------------------------------------------------------------- */

static int
handle (struct ab_signal_store_s *s, const char *doc, json_t **answer)
{
	json_t *d = json_loads (doc, JSON_DECODE_ANY, NULL);
	int status;

	assert_non_null (d);
	status = ab_signal_store_handle (s, d, strlen (doc), answer);
	json_decref (d);
	return status;
}

static json_int_t
publish (struct ab_signal_store_s *s, const char *session, const char *role, int n)
{
	char doc[256];
	json_t *a;
	json_int_t seq;

	snprintf (doc, sizeof doc,
	          "{\"sessionId\":\"%s\",\"role\":\"%s\",\"type\":\"candidate\",\"payload\":{\"n\":"
	          "%d}}",
	          session, role, n);
	assert_int_equal (handle (s, doc, &a), 200);
	seq = json_integer_value (json_object_get (a, "sequence"));
	assert_true (seq > 0);
	json_decref (a);
	return seq;
}

/* Poll and return the sequences and payload numbers seen. */
static size_t
poll_seqs (struct ab_signal_store_s *s, const char *session, const char *role, long after,
           json_int_t *seqs, size_t max)
{
	char doc[256];
	json_t *a;
	json_t *m;
	size_t i, n;

	snprintf (doc, sizeof doc,
	          "{\"sessionId\":\"%s\",\"role\":\"%s\",\"type\":\"poll\",\"sequence\":%ld}",
	          session, role, after);
	assert_int_equal (handle (s, doc, &a), 200);
	n = json_array_size (json_object_get (a, "messages"));
	json_array_foreach (json_object_get (a, "messages"), i, m)
	{
		if (i < max)
			seqs[i] = json_integer_value (json_object_get (m, "sequence"));
		assert_string_equal (json_string_value (json_object_get (m, "sessionId")), session);
		assert_string_not_equal (json_string_value (json_object_get (m, "role")), role);
		assert_non_null (json_object_get (m, "payload"));
	}
	json_decref (a);
	return n;
}

static void
test_signal_ordering_and_roles (void **state)
{
	struct ab_signal_limits_s lim;
	struct ab_signal_store_s *s;
	json_int_t seqs[16];
	json_t *a;

	ab_signal_limits_default (&lim);
	s = ab_signal_store_new (&lim);
	assert_int_equal (publish (s, "s1", "viewer", 1), 1);
	assert_int_equal (publish (s, "s1", "host", 2), 2);
	assert_int_equal (publish (s, "s1", "host", 3), 3);
	assert_int_equal (publish (s, "s2", "host", 4), 1); /* per-session counter */
	/* The viewer sees the host's messages, not its own, oldest first. */
	assert_int_equal (poll_seqs (s, "s1", "viewer", 0, seqs, 16), 2);
	assert_int_equal (seqs[0], 2);
	assert_int_equal (seqs[1], 3);
	assert_int_equal (poll_seqs (s, "s1", "viewer", 2, seqs, 16), 1);
	assert_int_equal (seqs[0], 3);
	assert_int_equal (poll_seqs (s, "s1", "viewer", 3, seqs, 16), 0);
	assert_int_equal (poll_seqs (s, "s1", "host", 0, seqs, 16), 1);
	assert_int_equal (seqs[0], 1);
	/* role defaults to viewer, on both sides. */
	assert_int_equal (handle (s, "{\"sessionId\":\"s1\",\"type\":\"poll\"}", &a), 200);
	assert_int_equal (json_array_size (json_object_get (a, "messages")), 2);
	json_decref (a);
	assert_int_equal (
	        handle (s, "{\"sessionId\":\"s3\",\"type\":\"offer\",\"payload\":\"sdp\"}", &a),
	        200);
	json_decref (a);
	assert_int_equal (
	        handle (s, "{\"sessionId\":\"s3\",\"role\":\"host\",\"type\":\"poll\"}", &a), 200);
	{
		char *text = json_dumps (json_object_get (a, "messages"), JSON_COMPACT);
		assert_string_equal (
		        text, "[{\"sessionId\":\"s3\",\"role\":\"viewer\",\"type\":\"offer\","
		              "\"payload\":\"sdp\",\"sequence\":1}]");
		free (text);
	}
	json_decref (a);
	/* A poll of an unknown session answers empty and creates nothing. */
	assert_int_equal (ab_signal_store_sessions (s), 3);
	assert_int_equal (poll_seqs (s, "nobody", "viewer", 0, seqs, 16), 0);
	assert_int_equal (ab_signal_store_sessions (s), 3);
	ab_signal_store_free (s);
}

static void
test_signal_window_256 (void **state)
{
	struct ab_signal_limits_s lim;
	struct ab_signal_store_s *s;
	json_int_t seqs[300];

	ab_signal_limits_default (&lim);
	s = ab_signal_store_new (&lim);
	for (int i = 1; i <= 300; i++)
		assert_int_equal (publish (s, "w", "host", i), i);
	/* Only the last 256 (45..300) are kept. */
	assert_int_equal (poll_seqs (s, "w", "viewer", 0, seqs, 300), 256);
	assert_int_equal (seqs[0], 45);
	assert_int_equal (seqs[255], 300);
	assert_int_equal (poll_seqs (s, "w", "viewer", 299, seqs, 300), 1);
	assert_int_equal (seqs[0], 300);
	ab_signal_store_free (s);
}

static void
test_signal_invalid (void **state)
{
	static const char *const invalid[] = {
		"{}",
		"{\"type\":\"offer\"}",
		"{\"sessionId\":\"s\"}",
		"{\"sessionId\":\"\",\"type\":\"offer\"}",
		"{\"sessionId\":\"s\",\"type\":\"\"}",
		"{\"sessionId\":5,\"type\":\"offer\"}",
		"{\"sessionId\":\"s\",\"type\":[]}",
		"{\"sessionId\":\"s\",\"type\":\"offer\",\"role\":7}",
		"{\"sessionId\":\"s\",\"type\":\"poll\",\"sequence\":\"3\"}",
		"{\"sessionId\":\"s\",\"type\":\"poll\",\"sequence\":-1}",
		"[]",
		"\"text\"",
		"42",
	};
	struct ab_signal_limits_s lim;
	struct ab_signal_store_s *s;

	ab_signal_limits_default (&lim);
	s = ab_signal_store_new (&lim);
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		json_t *a;
		char *text;
		printf ("  %s\n", invalid[i]);
		assert_int_equal (handle (s, invalid[i], &a), 400);
		text = json_dumps (a, JSON_COMPACT);
		assert_string_equal (text, "{\"error\":\"invalid signal document\"}");
		free (text);
		json_decref (a);
	}
	assert_int_equal (ab_signal_store_sessions (s), 0);
	ab_signal_store_free (s);
}

static void
test_signal_bounds (void **state)
{
	struct ab_signal_limits_s lim = { .max_messages = 8,
		                          .max_session_bytes = 1000,
		                          .max_sessions = 3,
		                          .max_total_bytes = 2500 };
	struct ab_signal_store_s *s = ab_signal_store_new (&lim);
	json_int_t seqs[16];
	char id[16];

	/* Per-session bytes: each document costs ~90 bytes, so at most 11 fit
	 * in 1000, but the 8-message window binds first. */
	for (int i = 1; i <= 20; i++)
		publish (s, "a", "host", i);
	assert_int_equal (poll_seqs (s, "a", "viewer", 0, seqs, 16), 8);
	assert_int_equal (seqs[0], 13);
	assert_true (ab_signal_store_bytes (s) <= 1000);
	/* Sessions: the fourth forgets the least recently used ("b"; "a" was
	 * just polled). */
	publish (s, "b", "host", 1);
	publish (s, "c", "host", 1);
	poll_seqs (s, "a", "viewer", 0, seqs, 16);
	publish (s, "d", "host", 1);
	assert_int_equal (ab_signal_store_sessions (s), 3);
	assert_int_equal (poll_seqs (s, "b", "viewer", 0, seqs, 16), 0);
	assert_int_equal (poll_seqs (s, "a", "viewer", 0, seqs, 16), 8);
	/* A forgotten session starts again at 1. */
	assert_int_equal (publish (s, "b", "host", 1), 1);
	/* Total bytes stay bounded however many sessions write. */
	for (int i = 0; i < 50; i++) {
		snprintf (id, sizeof id, "s%d", i);
		for (int k = 0; k < 8; k++)
			publish (s, id, "host", k);
		assert_true (ab_signal_store_bytes (s) <= lim.max_total_bytes);
		assert_true (ab_signal_store_sessions (s) <= lim.max_sessions);
	}
	ab_signal_store_free (s);
}

/* ---- cdp-automation --------------------------------------------------------------------- */

static void
test_cdp (void **state)
{
	static const struct {
		const char *in;
		const char *op;
	} cases[] = {
		{ "{\"operation\":\"screenshot\"}", "screenshot" },
		{ "{\"operation\":5}", "unknown" },
		{ "{}", "unknown" },
		{ "not json", "unknown" },
		{ NULL, "unknown" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *a =
		        ab_preview_cdp_answer (cases[i].in, cases[i].in ? strlen (cases[i].in) : 0,
		                               "/nonexistent-profiles");
		char *text = json_dumps (a, JSON_COMPACT);
		char want[512];

		snprintf (want, sizeof want,
		          "{\"ok\":false,\"operation\":\"%s\",\"error\":{\"code\":\"automation_"
		          "unsupported\","
		          "\"message\":\"this sandbox image is headless; browser automation is "
		          "unavailable\"}}",
		          cases[i].op);
		assert_string_equal (text, want);
		free (text);
		json_decref (a);
	}
}

/* A session's profile whose DevTools port is closed: the browser is
 * found, so the answers are the operation's own errors. */
static void
test_cdp_session (void **state)
{
	static const struct {
		const char *in;
		const char *code;
	} cases[] = {
		{ "{\"operation\":\"fly\"}", "unknown_operation" },
		{ "{\"operation\":\"screenshot\",\"timeoutMs\":1}", "browser_error" },
		{ "{}", "invalid_input" },
		{ "{\"operation\":\"click\",\"input\":{\"session\":\"../../x\"}}",
		  "automation_unsupported" },
	};
	char dir[] = "/tmp/test-cdp-XXXXXX";
	char path[256];
	FILE *f;

	(void)state;
	assert_non_null (mkdtemp (dir));
	snprintf (path, sizeof path, "%s/agentbox-browser-0123456789abcdef", dir);
	assert_int_equal (mkdir (path, 0700), 0);
	strcat (path, "/DevToolsActivePort");
	assert_non_null (f = fopen (path, "w"));
	fputs ("1\n/devtools/browser/x\n", f);
	fclose (f);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *a = ab_preview_cdp_answer (cases[i].in, strlen (cases[i].in), dir);
		const char *code =
		        json_string_value (json_object_get (json_object_get (a, "error"), "code"));
		assert_false (json_is_true (json_object_get (a, "ok")));
		assert_non_null (code);
		assert_string_equal (code, cases[i].code);
		json_decref (a);
	}
	unlink (path);
	*strrchr (path, '/') = '\0';
	rmdir (path);
	rmdir (dir);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_targets),
		cmocka_unit_test (test_target_length_and_host_field),
		cmocka_unit_test (test_paths),
		cmocka_unit_test (test_request_headers),
		cmocka_unit_test (test_request_head_format),
		cmocka_unit_test (test_response_headers_json),
		cmocka_unit_test (test_response_header_limits),
		cmocka_unit_test (test_dechunk),
		cmocka_unit_test (test_dechunk_stops_at_message_end),
		cmocka_unit_test (test_signal_ordering_and_roles),
		cmocka_unit_test (test_signal_window_256),
		cmocka_unit_test (test_signal_invalid),
		cmocka_unit_test (test_signal_bounds),
		cmocka_unit_test (test_cdp),
		cmocka_unit_test (test_cdp_session),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
