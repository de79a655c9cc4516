/* Strict base64 (src/base/base64.c), table-driven: the RFC 4648 vectors,
 * every padding form, every byte value, and the inputs a lax decoder
 * would accept but we refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/base64.h"

static const struct {
	const char *plain;
	const char *b64;
} b64_vectors[] = {
	/* RFC 4648 section 10. */
	{ "", "" },
	{ "f", "Zg==" },
	{ "fo", "Zm8=" },
	{ "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
	/* The last two characters of the alphabet, and the RFC 6455 4.1 key. */
	{ "\xfb\xff", "+/8=" },
	{ "\xff\xff\xfe", "///+" },
	{ "the sample nonce", "dGhlIHNhbXBsZSBub25jZQ==" },
};

static const char *const b64_refused[] = {
	/* padding: missing, short, in the middle, first, a whole quantum */
	"Zg",
	"Zg=",
	"Zg==Zg==",
	"=Zg=",
	"Zm9v====",
	"====",
	"Z===",
	/* non-zero pad bits */
	"Zh==",
	"Zm9=",
	/* data after padding */
	"Zg=a",
	/* length not a multiple of 4 */
	"Z",
	"Zm9",
	"Zm9vY",
	/* whitespace and newlines are not skipped */
	"Zm 9v",
	"Zm9v\n",
	/* outside the alphabet: the URL alphabet, punctuation, not ASCII */
	"Zm9-",
	"Zm9_",
	"Zm9*",
	"Zm9\x80",
};

static void
test_base64 (void **state)
{
	for (size_t i = 0; i < sizeof b64_vectors / sizeof b64_vectors[0]; i++) {
		const char *p = b64_vectors[i].plain;
		char *enc = ab_base64_encode (p, strlen (p));
		uint8_t *dec = NULL;
		size_t n = 0;

		assert_string_equal (enc, b64_vectors[i].b64);
		assert_int_equal (strlen (enc), ab_base64_len (strlen (p)));
		assert_int_equal (ab_base64_decode (enc, strlen (enc), &dec, &n), 0);
		assert_int_equal (n, strlen (p));
		assert_memory_equal (dec, p, n);
		assert_int_equal (dec[n], 0);
		free (enc);
		free (dec);
	}
	for (size_t i = 0; i < sizeof b64_refused / sizeof b64_refused[0]; i++) {
		uint8_t *dec = NULL;
		size_t n = 0;
		printf ("  refuses \"%s\"\n", b64_refused[i]);
		assert_int_equal (
		        ab_base64_decode (b64_refused[i], strlen (b64_refused[i]), &dec, &n), -1);
		assert_null (dec);
	}
}

/* A NUL inside the text is a character outside the alphabet, not an end. */
static void
test_base64_embedded_nul (void **state)
{
	uint8_t *dec = NULL;
	size_t n = 0;

	assert_int_equal (ab_base64_decode ("Zm9v\0AAA", 8, &dec, &n), -1);
	assert_null (dec);
	assert_int_equal (ab_base64_decode ("Zm9vYmFy", 4, &dec, &n), 0);
	assert_int_equal (n, 3);
	assert_memory_equal (dec, "foo", 3);
	free (dec);
}

static void
test_base64_binary (void **state)
{
	uint8_t all[256];
	char *enc;
	uint8_t *dec;
	size_t n;

	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	enc = ab_base64_encode (all, sizeof all);
	assert_int_equal (ab_base64_decode (enc, strlen (enc), &dec, &n), 0);
	assert_int_equal (n, 256);
	assert_memory_equal (dec, all, 256);
	free (enc);
	free (dec);
	/* Every length's padding form round-trips. */
	for (size_t len = 0; len <= 7; len++) {
		enc = ab_base64_encode (all + 250 - len, len);
		assert_int_equal (strlen (enc), ab_base64_len (len));
		assert_int_equal (ab_base64_decode (enc, strlen (enc), &dec, &n), 0);
		assert_int_equal (n, len);
		if (len)
			assert_memory_equal (dec, all + 250 - len, len);
		free (enc);
		free (dec);
	}
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_base64),
		cmocka_unit_test (test_base64_embedded_nul),
		cmocka_unit_test (test_base64_binary),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
