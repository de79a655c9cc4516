#include "net/preview-cdp.h"

#include <string.h>

json_t *
ab_preview_cdp_answer (const char *doc, size_t len)
{
	json_t *in = doc ? json_loadb (doc, len, 0, NULL) : NULL;
	const json_t *op = json_object_get (in, "operation");
	json_t *out;

	if (!json_is_string (op) || strlen (json_string_value (op)) != json_string_length (op))
		op = NULL;
	out = json_pack ("{s:b, s:s, s:{s:s, s:s}}", "ok", 0, "operation",
	                 op ? json_string_value (op) : "unknown", "error", "code",
	                 "automation_unsupported", "message",
	                 "this sandbox image is headless; browser automation is unavailable");
	json_decref (in);
	return out;
}
