/* Unit tests for the daemon's HTTP body decoding (daemon/http-io.c), the
 * WebSocket accept key (RFC 6455 4.2.2's own example) and the digests
 * behind it and the bearer-token check (FIPS 180 test vectors), and the
 * HTTP reason phrases (net/http-status.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "daemon/daemon-internal.h"
#include "daemon/http-io.h"
#include "net/ws-io.h"
#include "net/http-status.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static const struct {
	const char *name;
	const char *request;
	const char *body; /* expected; NULL = the body is malformed */
} cases[] = {
	{ "length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "hello" },
	{ "empty", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "" },
	{ "chunked",
	  "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n "
	  "world\r\n0\r\n\r\n",
	  "hello world" },
	{ "chunk extension and trailer",
	  "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: "
	  "v\r\n\r\n",
	  "abc" },
	{ "hex sizes",
	  "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
	  "chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n",
	  "0123456789" },
	{ "no CRLF after data",
	  "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
	  NULL },
	{ "bad size",
	  "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
	  NULL },
	{ "truncated", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", NULL },
};

static void
test_bodies (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (cases); i++) {
		int sv[2];
		struct ab_http_io_s io;
		struct ab_http_error_s e;
		ab_error_t err = AB_ERROR_INIT;
		char *body = NULL;
		size_t len = 0;
		int r;

		assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal (
		        ab_http_write (sv[1], cases[i].request, strlen (cases[i].request)), 0);
		close (sv[1]);
		ab_http_io_init (&io, sv[0], 16384);
		assert_int_equal (ab_http_io_read_request (&io, &e), 1);
		r = ab_http_io_body_all (&io, 1 << 20, &body, &len, &err);
		if (cases[i].body) {
			if (r != 0)
				fail_msg ("%s: %s", cases[i].name, err.msg);
			assert_int_equal (len, strlen (cases[i].body));
			assert_memory_equal (body, cases[i].body, len);
			assert_true (io.body_done);
		} else if (r == 0)
			fail_msg ("%s: accepted", cases[i].name);
		free (body);
		ab_http_io_free (&io);
		close (sv[0]);
	}
}

static void
test_body_limit (void **state)
{
	static const char req[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
	int sv[2];
	struct ab_http_io_s io;
	struct ab_http_error_s e;
	ab_error_t err = AB_ERROR_INIT;
	char *body = NULL;
	size_t len;

	(void)state;
	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ab_http_write (sv[1], req, sizeof req - 1);
	ab_http_io_init (&io, sv[0], 16384);
	assert_int_equal (ab_http_io_read_request (&io, &e), 1);
	assert_int_equal (ab_http_io_body_all (&io, 10, &body, &len, &err) < 0, 1);
	assert_int_equal (err.kind, AB_E_LIMIT);
	ab_http_io_free (&io);
	close (sv[0]);
	close (sv[1]);
}

static void
hex (const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf (out + 2 * i, "%02x", d[i]);
}

static void
test_digests (void **state)
{
	uint8_t d[32];
	char h[65];
	(void)state;
	SHA1 ((const unsigned char *)"abc", 3, d);
	hex (d, 20, h);
	assert_string_equal (h, "a9993e364706816aba3e25717850c26c9cd0d89d");
	SHA256 ((const unsigned char *)"abc", 3, d);
	hex (d, 32, h);
	assert_string_equal (h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	SHA256 ((const unsigned char *)"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	        56, d);
	hex (d, 32, h);
	assert_string_equal (h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	SHA256 ((const unsigned char *)"", 0, d);
	hex (d, 32, h);
	assert_string_equal (h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void
test_ws_accept (void **state)
{
	char out[29];
	(void)state;
	ab_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
	assert_string_equal (out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

/* The one reason-phrase table: every status the daemon, the preview
 * bridge and the proxies answer with, and the fallback. */
static void
test_status_text (void **state)
{
	static const struct {
		int status;
		const char *text;
	} want[] = {
		{ 100, "Continue" },
		{ 101, "Switching Protocols" },
		{ 200, "OK" },
		{ 201, "Created" },
		{ 204, "No Content" },
		{ 400, "Bad Request" },
		{ 401, "Unauthorized" },
		{ 403, "Forbidden" },
		{ 404, "Not Found" },
		{ 405, "Method Not Allowed" },
		{ 408, "Request Timeout" },
		{ 409, "Conflict" },
		{ 413, "Content Too Large" },
		{ 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" },
		{ 501, "Not Implemented" },
		{ 502, "Bad Gateway" },
		{ 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
		{ 505, "HTTP Version Not Supported" },
		{ 299, "Error" },
		{ 0, "Error" },
	};
	(void)state;
	for (size_t i = 0; i < N (want); i++)
		assert_string_equal (ab_http_status_text (want[i].status), want[i].text);
}

/* ---- WebSocket messages over a blocking socket (daemon/websocket.c) ------ */

/* A frame as a client sends it (masked with a fixed key). */
static size_t
client_frame (uint8_t *out, bool fin, uint8_t op, const void *p, size_t n)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	size_t hl = ab_ws_encode_header (out, fin, op, n, key);

	memcpy (out + hl, p, n);
	ab_ws_mask (out + hl, n, key, 0);
	return hl + n;
}

/* A fragmented text message with a ping between its fragments: the ping
 * comes out first, the message whole in the next call, then EOF. */
static void
test_ws_recv_fragments (void **state)
{
	uint8_t wire[256];
	size_t n = 0;
	int sv[2];
	struct ab_http_io_s io;
	struct ab_ws_msg_s m;
	ab_error_t err = AB_ERROR_INIT;

	(void)state;
	n += client_frame (wire + n, false, AB_WS_OP_TEXT, "Hel", 3);
	n += client_frame (wire + n, true, AB_WS_OP_PING, "p", 1);
	n += client_frame (wire + n, true, AB_WS_OP_CONT, "lo", 2);
	n += client_frame (wire + n, true, AB_WS_OP_BINARY, "", 0);
	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal (ab_http_write (sv[1], wire, n), 0);
	close (sv[1]);
	ab_http_io_init (&io, sv[0], 16384);
	assert_int_equal (ab_ws_recv (&io, true, &m, &err), 1);
	assert_int_equal (m.opcode, AB_WS_OP_PING);
	assert_string_equal ((char *)m.data, "p");
	free (m.data);
	assert_int_equal (ab_ws_recv (&io, true, &m, &err), 1);
	assert_int_equal (m.opcode, AB_WS_OP_TEXT);
	assert_int_equal (m.len, 5);
	assert_string_equal ((char *)m.data, "Hello");
	free (m.data);
	assert_int_equal (ab_ws_recv (&io, true, &m, &err), 1);
	assert_int_equal (m.opcode, AB_WS_OP_BINARY);
	assert_int_equal (m.len, 0);
	assert_non_null (m.data);
	free (m.data);
	assert_int_equal (ab_ws_recv (&io, true, &m, &err), 0);
	ab_http_io_free (&io);
	close (sv[0]);
}

/* What the server refuses: an unmasked client frame, a frame over the
 * message limit (from its header alone), a frame cut short by EOF. */
static void
test_ws_recv_refused (void **state)
{
	static const uint8_t unmasked[] = { 0x81, 0x01, 'x' };
	static const uint8_t too_big[] = { 0x82, 0xff, 0, 0, 0, 0, 0, 0x20, 0, 0, 1, 2, 3, 4 };
	static const uint8_t short_frame[] = { 0x81, 0x85, 1, 2, 3, 4, 'a' };
	static const struct {
		const uint8_t *wire;
		size_t len;
		ab_error_kind kind;
	} refused[] = {
		{ unmasked, sizeof unmasked, AB_E_INVALID },
		{ too_big, sizeof too_big, AB_E_LIMIT }, /* close code 1009 */
		{ short_frame, sizeof short_frame, AB_E_SYSTEM },
	};

	(void)state;
	for (size_t i = 0; i < N (refused); i++) {
		int sv[2];
		struct ab_http_io_s io;
		struct ab_ws_msg_s m;
		ab_error_t err = AB_ERROR_INIT;

		assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal (ab_http_write (sv[1], refused[i].wire, refused[i].len), 0);
		close (sv[1]);
		ab_http_io_init (&io, sv[0], 16384);
		assert_int_equal (ab_ws_recv (&io, true, &m, &err), -1);
		assert_int_equal (err.kind, refused[i].kind);
		assert_null (m.data);
		ab_http_io_free (&io);
		close (sv[0]);
	}
}

/* What the client sends (masked) the server reads back byte for byte,
 * at every length form (7-bit, 16-bit, 64-bit). */
static void
test_ws_send_round_trip (void **state)
{
	static const size_t lens[] = { 0, 125, 126, 65535, 65536, 200000 };

	(void)state;
	for (size_t i = 0; i < N (lens); i++) {
		uint8_t *p = malloc (lens[i] + 1);
		int sv[2];
		struct ab_http_io_s io;
		struct ab_ws_msg_s m;
		ab_error_t err = AB_ERROR_INIT;

		for (size_t k = 0; k < lens[i]; k++)
			p[k] = (uint8_t)(k * 7);
		assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM, 0, sv), 0);
		/* the socket buffer holds less than the largest frame: a child
		 * sends while we read */
		pid_t pid = fork ();
		assert_true (pid >= 0);
		if (pid == 0) {
			close (sv[0]);
			_exit (ab_ws_send (sv[1], AB_WS_OP_BINARY, p, lens[i], true) == 0 ? 0 : 1);
		}
		close (sv[1]);
		ab_http_io_init (&io, sv[0], 16384);
		assert_int_equal (ab_ws_recv (&io, true, &m, &err), 1);
		assert_int_equal (m.opcode, AB_WS_OP_BINARY);
		assert_int_equal (m.len, lens[i]);
		if (lens[i])
			assert_memory_equal (m.data, p, lens[i]);
		free (m.data);
		ab_http_io_free (&io);
		close (sv[0]);
		int status;
		assert_int_equal (waitpid (pid, &status, 0), pid);
		assert_int_equal (status, 0);
		free (p);
	}
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_bodies),          cmocka_unit_test (test_body_limit),
		cmocka_unit_test (test_digests),         cmocka_unit_test (test_ws_accept),
		cmocka_unit_test (test_status_text),     cmocka_unit_test (test_ws_recv_fragments),
		cmocka_unit_test (test_ws_recv_refused), cmocka_unit_test (test_ws_send_round_trip),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
