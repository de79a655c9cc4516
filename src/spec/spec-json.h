/* The sandbox spec as JSON: what `POST /v1/sandboxes` accepts, what the
 * daemon keeps in its state files and hands to `agentbox __create-sandbox`.
 *
 * Reading is strict (a typo must not silently become a default): unknown
 * keys, wrong types, malformed sizes and durations are AB_E_INVALID errors
 * that name the key.  Writing is canonical (bytes, milliseconds), and
 * reading what was written gives the same spec back. */
#ifndef AB_SPEC_SPEC_JSON_H
#define AB_SPEC_SPEC_JSON_H

#include <jansson.h>

#include "base/error.h"
#include "spec/spec.h"

enum {
	/* Accept the keys only agentbox itself writes (argv, service_socket,
	 * explicit_cgroup); an API client may not set them. */
	AB_SPEC_JSON_INTERNAL = 1u << 0,
};

/* Apply the keys of `j` (an object) on top of `spec` (already initialised,
 * e.g. by ab_spec_init).  Host paths are not checked here. */
int ab_spec_from_json (const json_t *j, unsigned flags, struct ab_spec_s *spec, ab_error_t *err);

/* A new object; with AB_SPEC_JSON_INTERNAL the internal keys too. */
json_t *ab_spec_to_json (const struct ab_spec_s *spec, unsigned flags);

/* "30s" or a number of seconds (fractions allowed) -> ms. */
int ab_json_duration_ms (const json_t *v, const char *key, uint64_t *out, ab_error_t *err);

#endif
