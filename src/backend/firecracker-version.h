/* Which Firecracker is installed, and is it new enough.
 *
 * `firecracker --version` prints "Firecracker vX.Y.Z" on its first line
 * (then an empty line and, on older releases, the supported snapshot
 * versions).  The first line is parsed strictly (docs/microvm-firecracker.md):
 * the exact program name, one space, "v", three decimal components without
 * sign or leading zero that fit in 32 bits, an optional semver prerelease
 * ("-rc1", "-12-gabcdef-dirty" from a `git describe` build), then the end of
 * the line.  Anything else is not a version we can vouch for.
 *
 * Order is semver 2.0.0 precedence (section 11): a prerelease is lower than
 * its release.  So the minimum 1.14.1 refuses 1.14.1-rc1 (and a dev build
 * "1.14.1-3-gdeadbee", which `git describe` names like a prerelease), and
 * accepts 1.15.0-rc1, which is ordered after 1.14.1. */
#ifndef AB_BACKEND_FIRECRACKER_VERSION_H
#define AB_BACKEND_FIRECRACKER_VERSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_FC_PRERELEASE_MAX 64

struct ab_fc_version_s {
	uint32_t major, minor, patch;
	/* Without the leading '-'; "" for a release. */
	char prerelease[AB_FC_PRERELEASE_MAX + 1];
};

/* The oldest Firecracker agentbox runs: 1.14.1 (a release, not a prerelease). */
extern const struct ab_fc_version_s ab_firecracker_version_min;

/* Parse the output of `firecracker --version` (NUL-terminated; only the
 * first line is read).  AB_E_INVALID naming what is wrong. */
int ab_firecracker_version_parse (const char *output, struct ab_fc_version_s *v, ab_error_t *err);

/* Semver precedence: <0, 0, >0. */
int ab_firecracker_version_cmp (const struct ab_fc_version_s *a, const struct ab_fc_version_s *b);

/* v >= ab_firecracker_version_min under semver precedence. */
bool ab_firecracker_version_ok (const struct ab_fc_version_s *v);

/* "1.14.1" or "1.14.1-rc1" into buf (always NUL-terminated). */
void ab_firecracker_version_format (const struct ab_fc_version_s *v, char *buf, size_t size);

/* Parse and require the minimum: AB_E_INVALID for output that is not a
 * version, AB_E_DENIED ("firecracker 1.14.1-rc1 is older than ...") for one
 * that is too old.  *v is filled whenever the output parsed. */
int ab_firecracker_version_check (const char *output, struct ab_fc_version_s *v, ab_error_t *err);

/* Run `binary --version` (bounded by timeout_ms) and check its output. */
int ab_firecracker_version_query (const char *binary, int timeout_ms, struct ab_fc_version_s *v,
                                  ab_error_t *err);

#endif
