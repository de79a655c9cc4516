#include "cli/run-credentials.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "session/cred-relay.h"

#define TOKEN_BYTES 32

/* A secret-holding malloc'ed string: wiped before it is freed. */
static void
free_secret (char *s)
{
	if (!s)
		return;
	explicit_bzero (s, strlen (s));
	free (s);
}

static int
make_token (char hex[2 * TOKEN_BYTES + 1], ab_error_t *err)
{
	unsigned char raw[TOKEN_BYTES];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (hex + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero (raw, sizeof raw);
	return 0;
}

/* FILE as a JSON object.  jansson's error text may quote the input, which
 * holds secrets: only the line number is reported. */
static json_t *
load_entry (const char *arg, const char *path, ab_error_t *err)
{
	json_error_t jerr;
	FILE *f = fopen (path, "re");
	json_t *j;

	if (!f) {
		ab_error (err, errno, AB_E_INVALID, "--credential %s", arg);
		return NULL;
	}
	j = json_loadf (f, JSON_REJECT_DUPLICATES, &jerr);
	fclose (f);
	if (!j) {
		ab_error (err, 0, AB_E_INVALID, "--credential %s: not valid JSON (line %d)", arg,
		          jerr.line);
		return NULL;
	}
	if (!json_is_object (j)) {
		json_decref (j);
		ab_error (err, 0, AB_E_INVALID, "--credential %s: expected a JSON object", arg);
		return NULL;
	}
	return j;
}

/* Parse {"threadToken": token, "upstreams": ups} with the proxy's own
 * validation; the serialised document is wiped. */
static struct ab_cred_config_s *
parse_doc (const char *token, json_t *ups, ab_error_t *err)
{
	json_t *doc = json_pack ("{s:s, s:O}", "threadToken", token, "upstreams", ups);
	char *text = json_dumps (doc, JSON_COMPACT);
	struct ab_cred_config_s *c = text ? ab_cred_config_parse (text, strlen (text), err) : NULL;

	if (!text)
		ab_error (err, 0, AB_E_INTERNAL, "credential configuration");
	free_secret (text);
	json_decref (doc);
	return c;
}

/* One NAME=FILE, checked on its own so the error names it. */
static int
add_entry (const char *token, const char *arg, json_t *ups, ab_error_t *err)
{
	const char *eq = strchr (arg, '=');
	cleanup_free char *name = eq ? xstrndup (arg, (size_t)(eq - arg)) : NULL;
	json_t *one, *entry;
	struct ab_cred_config_s *c;

	if (!eq || eq == arg || !eq[1])
		return ab_error (err, 0, AB_E_INVALID, "--credential %s: expected NAME=FILE", arg);
	for (size_t i = 0; i < json_array_size (ups); i++)
		if (strcmp (json_string_value (json_object_get (json_array_get (ups, i), "name")),
		            name)
		    == 0)
			return ab_error (err, 0, AB_E_INVALID, "--credential %s: %s given twice",
			                 arg, name);
	if (!(entry = load_entry (arg, eq + 1, err)))
		return -1;
	json_object_set_new (entry, "name", json_string (name));
	one = json_pack ("[O]", entry);
	c = parse_doc (token, one, err);
	json_decref (one);
	if (!c) {
		json_decref (entry);
		return ab_error_wrap (err, "--credential %s", arg);
	}
	ab_cred_config_unref (c);
	json_array_append_new (ups, entry);
	return 0;
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
static void
add_env (struct ab_spec_s *spec, const struct ab_cred_config_s *c, const char *token)
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

int
ab_run_credentials_prepare (struct ab_spec_s *spec, struct ab_cred_config_s **out, ab_error_t *err)
{
	char token[2 * TOKEN_BYTES + 1];
	json_t *ups;
	int r = 0;

	*out = NULL;
	if (!spec->credentials)
		return 0;
	if (make_token (token, err) < 0)
		return -1;
	ups = json_array ();
	for (char **a = spec->credentials; r == 0 && *a; a++)
		r = add_entry (token, *a, ups, err);
	if (r == 0 && !(*out = parse_doc (token, ups, err)))
		r = ab_error_wrap (err, "--credential");
	json_decref (ups);
	if (r == 0)
		add_env (spec, *out, token);
	explicit_bzero (token, sizeof token);
	return r;
}
