/* `agentbox run --credential NAME=FILE`: FILE on the host holds one
 * upstream entry of the credential proxy's configuration,
 *
 *     {"baseUrl": "https://api.openai.com/v1",
 *      "inject": [{"header": "authorization", "value": "Bearer sk-..."}],
 *      "stripRequestHeaders": [...]}
 *
 * Before anything starts, every file is read and the whole configuration
 * (a fresh per-sandbox thread token, the entries under their names) is
 * validated in memory; the sandbox gets only base URLs on 127.0.0.1:8288
 * and the token (docs/credential-proxy.md, "agentbox run"). */
#ifndef AB_CLI_RUN_CREDENTIALS_H
#define AB_CLI_RUN_CREDENTIALS_H

#include <jansson.h>

#include "base/error.h"
#include "net/credential-config.h"
#include "spec/spec.h"

/* The configuration for spec->credentials (NULL when there are none), and
 * the sandbox's variables added to spec->env.  Errors name the option and
 * the file, never a value from it. */
/* Read and check every NAME=FILE: *out is the array of entries (each with
 * its "name") for a daemon's create request, which never reads client
 * files itself. */
int ab_run_credentials_entries (char **credentials, json_t **out, ab_error_t *err);
int ab_run_credentials_prepare (struct ab_spec_s *spec, struct ab_cred_config_s **out,
                                ab_error_t *err);

#endif
