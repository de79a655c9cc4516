#include "cli/run-credentials.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/json-wipe.h"
#include "base/xalloc.h"
#include "session/cred-setup.h"

/* FILE as a JSON object.  jansson's error text may quote the input, which
 * holds secrets: only the line number is reported.  `arg` names the option
 * in messages.  stdio reads through a buffer of ours, wiped after: the
 * file's bytes stay nowhere (jansson's copies: base/json-wipe.h). */
static json_t *
load_entry (const char *arg, const char *path, ab_error_t *err)
{
	char iobuf[4096];
	json_error_t jerr;
	FILE *f = fopen (path, "re");
	json_t *j;

	if (!f) {
		ab_error (err, errno, AB_E_INVALID, "--credential %s", arg);
		return NULL;
	}
	setvbuf (f, iobuf, _IOFBF, sizeof iobuf);
	j = json_loadf (f, JSON_REJECT_DUPLICATES, &jerr);
	fclose (f);
	explicit_bzero (iobuf, sizeof iobuf);
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

/* Append `entry` (owned) named `name` after checking it on its own, so
 * the error names the option that brought it. */
static int
append_checked (const char *token, const char *arg, const char *name, json_t *entry, json_t *ups,
                ab_error_t *err)
{
	json_t *one;
	struct ab_cred_config_s *c;

	for (size_t i = 0; i < json_array_size (ups); i++)
		if (strcmp (json_string_value (json_object_get (json_array_get (ups, i), "name")),
		            name)
		    == 0) {
			json_decref (entry);
			return ab_error (err, 0, AB_E_INVALID, "%s: %s given twice", arg, name);
		}
	json_object_set_new (entry, "name", json_string (name));
	one = json_pack ("[O]", entry);
	c = ab_cred_config_from_entries (token, one, err);
	json_decref (one);
	if (!c) {
		json_decref (entry);
		return ab_error_wrap (err, "%s", arg);
	}
	ab_cred_config_unref (c);
	json_array_append_new (ups, entry);
	return 0;
}

/* One NAME=FILE. */
static int
add_entry (const char *token, const char *arg, json_t *ups, ab_error_t *err)
{
	const char *eq = strchr (arg, '=');
	cleanup_free char *name = eq ? xstrndup (arg, (size_t)(eq - arg)) : NULL;
	cleanup_free char *what = xasprintf ("--credential %s", arg);
	json_t *entry;

	if (!eq || eq == arg || !eq[1])
		return ab_error (err, 0, AB_E_INVALID, "--credential %s: expected NAME=FILE", arg);
	if (!(entry = load_entry (arg, eq + 1, err)))
		return -1;
	return append_checked (token, what, name, entry, ups, err);
}

/* `--credentials FILE` (stored as "@FILE"): the credential proxy's own
 * config document; every entry of its "upstreams" is taken under its
 * "name".  Its threadToken, if any, is ignored: each sandbox gets its own. */
static int
add_file (const char *token, const char *path, json_t *ups, ab_error_t *err)
{
	cleanup_free char *what = xasprintf ("--credentials %s", path);
	json_t *doc = load_entry (what, path, err), *list;
	size_t i;
	json_t *e;
	int r = 0;

	if (!doc)
		return -1;
	list = json_object_get (doc, "upstreams");
	if (!json_is_array (list)) {
		json_decref (doc);
		return ab_error (err, 0, AB_E_INVALID, "%s: expected an \"upstreams\" array", what);
	}
	json_array_foreach (list, i, e)
	{
		const char *name = json_string_value (json_object_get (e, "name"));
		json_t *copy;
		if (!json_is_object (e) || !name) {
			r = ab_error (err, 0, AB_E_INVALID, "%s: upstream %zu has no name", what,
			              i);
			break;
		}
		copy = json_deep_copy (e);
		json_object_del (copy, "name");
		if ((r = append_checked (token, what, name, copy, ups, err)) < 0)
			break;
	}
	json_decref (doc);
	return r;
}

int
ab_run_credentials_entries (char **credentials, json_t **out, ab_error_t *err)
{
	char token[AB_CRED_TOKEN_HEX];
	json_t *ups;
	int r = 0;

	*out = NULL;
	ab_json_wipe_on_free ();
	if (ab_cred_token_new (token, err) < 0)
		return -1;
	ups = json_array ();
	for (char **a = credentials; r == 0 && a && *a; a++)
		r = **a == '@' ? add_file (token, *a + 1, ups, err)
		               : add_entry (token, *a, ups, err);
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
