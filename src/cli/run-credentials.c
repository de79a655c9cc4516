#include "cli/run-credentials.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "session/cred-setup.h"

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
	c = ab_cred_config_from_entries (token, one, err);
	json_decref (one);
	if (!c) {
		json_decref (entry);
		return ab_error_wrap (err, "--credential %s", arg);
	}
	ab_cred_config_unref (c);
	json_array_append_new (ups, entry);
	return 0;
}

int
ab_run_credentials_entries (char **credentials, json_t **out, ab_error_t *err)
{
	char token[AB_CRED_TOKEN_HEX];
	json_t *ups;
	int r = 0;

	*out = NULL;
	if (ab_cred_token_new (token, err) < 0)
		return -1;
	ups = json_array ();
	for (char **a = credentials; r == 0 && a && *a; a++)
		r = add_entry (token, *a, ups, err);
	explicit_bzero (token, sizeof token);
	if (r < 0) {
		json_decref (ups);
		return -1;
	}
	*out = ups;
	return 0;
}

int
ab_run_credentials_prepare (struct ab_spec_s *spec, struct ab_cred_config_s **out, ab_error_t *err)
{
	char token[AB_CRED_TOKEN_HEX];
	json_t *ups;
	int r = 0;

	*out = NULL;
	if (!spec->credentials)
		return 0;
	if (ab_run_credentials_entries (spec->credentials, &ups, err) < 0
	    || ab_cred_token_new (token, err) < 0)
		return -1;
	if (!(*out = ab_cred_config_from_entries (token, ups, err)))
		r = ab_error_wrap (err, "--credential");
	json_decref (ups);
	if (r == 0)
		ab_cred_spec_env (spec, *out, token);
	explicit_bzero (token, sizeof token);
	return r;
}
