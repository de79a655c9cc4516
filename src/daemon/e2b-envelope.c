/* Connect protocol v1 envelopes with the JSON codec (e2b-wire.h): every
 * length is checked against what was received and against the limit
 * before anything is allocated for it. */
#include "daemon/e2b-wire.h"

#include <errno.h>

int
ab_e2b_envelope_head (const uint8_t h[AB_E2B_ENVELOPE_HEAD], size_t max, size_t *len, bool *end,
                      ab_error_t *err)
{
	*len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
	*end = h[0] & AB_E2B_FLAG_END_STREAM;
	if (h[0] & AB_E2B_FLAG_COMPRESSED)
		return ab_error (err, 0, AB_E_INVALID, "compressed envelopes are not accepted");
	if (*len > max)
		return ab_error (err, E2BIG, AB_E_LIMIT, "an envelope over %zu bytes", max);
	return 0;
}

int
ab_e2b_envelope_json (const char *p, size_t len, json_t **msg, ab_error_t *err)
{
	json_error_t je;

	*msg = len ? json_loadb (p, len, JSON_REJECT_DUPLICATES, &je) : json_object ();
	if (!*msg || !json_is_object (*msg)) {
		json_decref (*msg);
		*msg = NULL;
		return ab_error (err, 0, AB_E_INVALID, "the message must be a JSON object");
	}
	return 0;
}

int
ab_e2b_envelope_unary (const uint8_t *body, size_t len, json_t **msg, ab_error_t *err)
{
	size_t jlen;
	bool end;

	*msg = NULL;
	if (len < AB_E2B_ENVELOPE_HEAD)
		return ab_error (err, 0, AB_E_INVALID, "a truncated envelope");
	if (ab_e2b_envelope_head (body, len - AB_E2B_ENVELOPE_HEAD, &jlen, &end, err) < 0) {
		if (err->kind == AB_E_LIMIT) {
			ab_error_clear (err);
			ab_error (err, 0, AB_E_INVALID,
			          "one envelope of flags 0 and its stated length expected");
		}
		return -1;
	}
	if (body[0] != 0 || jlen != len - AB_E2B_ENVELOPE_HEAD)
		return ab_error (err, 0, AB_E_INVALID,
		                 "one envelope of flags 0 and its stated length expected");
	return ab_e2b_envelope_json ((const char *)body + AB_E2B_ENVELOPE_HEAD, jlen, msg, err);
}
