/* Image references as docker and podman spell them (the distribution
 * project's reference grammar): [DOMAIN/]PATH[:TAG][@DIGEST].  A first
 * component with a '.' or ':' or "localhost" is a registry; otherwise the
 * registry is docker.io, and a one-component path gets "library/". */
#ifndef AB_IMAGE_REF_H
#define AB_IMAGE_REF_H

#include <stdbool.h>

#include "base/error.h"

struct ab_image_ref_s {
	char *registry;   /* "docker.io", "localhost", "127.0.0.1:5000" */
	char *repository; /* "library/python" */
	char *tag;        /* "3.12-slim"; "latest" when neither tag nor digest */
	char *digest;     /* "sha256:<64 hex>" or NULL */
};

int ab_image_ref_parse (const char *s, struct ab_image_ref_s *ref, ab_error_t *err);
void ab_image_ref_free (struct ab_image_ref_s *ref);
/* "docker.io/library/python:3.12-slim", "...@sha256:..." (the digest when
 * there is one: a name with both names the digest's content). */
char *ab_image_ref_name (const struct ab_image_ref_s *ref);
/* The host the v2 API is at: docker.io's is registry-1.docker.io. */
const char *ab_image_ref_api_host (const struct ab_image_ref_s *ref);
/* "sha256:" and 64 lower-case hex digits. */
bool ab_image_digest_valid (const char *s);

#endif
