/* What `agentbox run --credential` and a daemon sandbox's credentials have
 * in common: a fresh per-sandbox thread token, the proxy configuration
 * built from the upstream entries (each a JSON object with its "name"),
 * and the variables the sandbox sees (base URLs on 127.0.0.1:8288 and the
 * token; docs/credential-proxy.md).  Errors never quote a value. */
#ifndef AB_SESSION_CRED_SETUP_H
#define AB_SESSION_CRED_SETUP_H

#include <jansson.h>

#include "base/error.h"
#include "net/credential-config.h"
#include "spec/spec.h"

#define AB_CRED_TOKEN_HEX (2 * 32 + 1)

int ab_cred_token_new (char hex[AB_CRED_TOKEN_HEX], ab_error_t *err);
/* {"threadToken": token, "upstreams": ups} parsed with the proxy's own
 * validation; the serialised document is wiped. */
struct ab_cred_config_s *ab_cred_config_from_entries (const char *token, json_t *ups,
                                                      ab_error_t *err);
/* The sandbox's variables for config, added to spec->env. */
void ab_cred_spec_env (struct ab_spec_s *spec, const struct ab_cred_config_s *c, const char *token);

#endif
