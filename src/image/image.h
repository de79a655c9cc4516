/* The image store (docs/images.md): pull from a registry, import local
 * archives, list, remove, prune, and turn a spec's image into the layered
 * root a backend mounts.  Every function takes the state directory
 * (ab_default_state_dir, base/fsutil.h, when the user named none); the
 * store is STATE/images, shared by the CLI and the daemon. */
#ifndef AB_IMAGE_IMAGE_H
#define AB_IMAGE_IMAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

typedef enum {
	AB_PULL_MISSING = 0, /* pull when the store has no such image (the default) */
	AB_PULL_ALWAYS,
	AB_PULL_NEVER,
} ab_pull_policy;

int ab_pull_policy_parse (const char *s, ab_pull_policy *out, ab_error_t *err);

struct ab_image_pull_opts_s {
	const char *platform; /* "linux/amd64" when NULL */
	const char *ca_file;  /* extra CA for registry TLS; NULL = $SSL_CERT_FILE */
	char **insecure;      /* HOST:PORT served over plain HTTP (NULL-terminated), plus
	                       * $AGENTBOX_INSECURE_REGISTRIES (comma-separated) */
	bool quiet;           /* no progress bar (there is none unless stderr is a tty) */
};

/* Pull REF; *digest_out (may be NULL) the image's manifest digest. */
int ab_image_pull (const char *state_dir, const char *ref, const struct ab_image_pull_opts_s *o,
                   char **digest_out, ab_error_t *err);
/* Import an OCI layout (dir or tar), a docker/podman save archive, or a
 * plain root (dir or tar) as one layer; name: the reference to give it
 * (NULL: the archive's own names, else localhost/import:<short digest>). */
int ab_image_import (const char *state_dir, const char *src, const char *name, char **digest_out,
                     ab_error_t *err);
/* [{"names": [...], "digest", "size", "layers", "stored", "in_use"}]. */
json_t *ab_image_list (const char *state_dir, ab_error_t *err);
/* The record (layers, config, names, layer dirs). */
json_t *ab_image_inspect (const char *state_dir, const char *name, ab_error_t *err);
/* Remove a name (and the image once no name is left); refused while a
 * live lease holds the image (AB_E_CONFLICT). */
int ab_image_remove (const char *state_dir, const char *name, ab_error_t *err);
/* Remove images without names and leases, then blobs and layers no
 * image uses, and leftovers of interrupted pulls. */
int ab_image_prune (const char *state_dir, uint64_t *freed_bytes, ab_error_t *err);

/* What the user gave, which the image's config must not override. */
struct ab_image_given_s {
	bool workdir; /* -w / "workdir" */
	bool user;    /* -u / "uid" */
	bool command; /* a command (else Entrypoint + Cmd) */
};

/* When spec->image is set: find it (pulling per `pull`), fill
 * spec->root.layers (lowest first), spec->image_digest, and the image's
 * defaults podman's way: Env (a variable the user set wins; agentbox's
 * own defaults PATH, HOME=/tmp, LANG give way), WorkingDir (when the
 * user gave none; else "/"), User (numeric or names from the image's
 * /etc/passwd and /etc/group), Entrypoint + Cmd.  o may be NULL. */
int ab_image_prepare_spec (const char *state_dir, struct ab_spec_s *spec, ab_pull_policy pull,
                           const struct ab_image_given_s *given,
                           const struct ab_image_pull_opts_s *o, ab_error_t *err);

/* A sandbox's hold on an image: leases/HOLDER naming the digest.  The
 * lease is live while alive_dir exists (a daemon sandbox's directory) or
 * the taking process lives (alive_dir NULL: `agentbox run`); a stale one
 * is ignored and removed by prune. */
int ab_image_lease_take (const char *state_dir, const char *holder, const char *digest,
                         const char *alive_dir, ab_error_t *err);
void ab_image_lease_release (const char *state_dir, const char *holder);

#endif
