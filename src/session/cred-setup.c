#include "session/cred-setup.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "session/cred-relay.h"

/* A secret-holding malloc'ed string: wiped before it is freed. */
static void
free_secret (char *s)
{
	if (!s)
		return;
	explicit_bzero (s, strlen (s));
	free (s);
}

int
ab_cred_token_new (char hex[AB_CRED_TOKEN_HEX], ab_error_t *err)
{
	unsigned char raw[(AB_CRED_TOKEN_HEX - 1) / 2];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (hex + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero (raw, sizeof raw);
	return 0;
}

struct ab_cred_config_s *
ab_cred_config_from_entries (const char *token, json_t *ups, ab_error_t *err)
{
	json_t *doc = json_pack ("{s:s, s:O}", "threadToken", token, "upstreams", ups);
	char *text = doc ? json_dumps (doc, JSON_COMPACT) : NULL;
	struct ab_cred_config_s *c = text ? ab_cred_config_parse (text, strlen (text), err) : NULL;

	if (!text)
		ab_error (err, 0, AB_E_INVALID, "credential configuration");
	free_secret (text);
	json_decref (doc);
	return c;
}

static void
setenv_kv (struct ab_spec_s *spec, const char *key, const char *value)
{
	cleanup_free char *kv = xasprintf ("%s=%s", key, value);
	ab_spec_setenv (spec, kv);
}

/* AGENTBOX_<NAME>_BASE_URL for every upstream, and the variables the two
 * official SDKs read.  The proxy appends the rest of the request path to
 * baseUrl's path: the openai SDK asks for /chat/completions under a base
 * that ends in /v1, so /v1 goes into OPENAI_BASE_URL unless the entry's
 * baseUrl already has a path; the anthropic SDK asks for /v1/messages
 * under a bare host.  ANTHROPIC_AUTH_TOKEN makes it send Authorization:
 * Bearer, which the proxy checks. */
void
ab_cred_spec_env (struct ab_spec_s *spec, const struct ab_cred_config_s *c, const char *token)
{
	setenv_kv (spec, "AGENTBOX_CREDENTIAL_TOKEN", token);
	for (size_t i = 0; i < c->n_ups; i++) {
		const struct ab_cred_upstream_s *u = &c->ups[i];
		cleanup_free char *base =
		        xasprintf ("http://127.0.0.1:%d/%s", AB_CRED_PORT, u->name);
		cleanup_free char *var = xasprintf ("AGENTBOX_%s_BASE_URL", u->name);
		for (char *p = var; *p; p++)
			*p = isalnum ((unsigned char)*p) ? (char)toupper ((unsigned char)*p) : '_';
		setenv_kv (spec, var, base);
		if (strcmp (u->name, "openai") == 0) {
			cleanup_free char *v1 =
			        xasprintf ("%s%s", base, u->url.path[0] ? "" : "/v1");
			setenv_kv (spec, "OPENAI_BASE_URL", v1);
			setenv_kv (spec, "OPENAI_API_KEY", token);
		} else if (strcmp (u->name, "anthropic") == 0) {
			setenv_kv (spec, "ANTHROPIC_BASE_URL", base);
			setenv_kv (spec, "ANTHROPIC_AUTH_TOKEN", token);
		}
	}
}
