/* Egress policy files (JSON, docs/egress-policy.md).  The document is
 * applied to a copy of the policy and swapped in only when every key is
 * valid, so a bad file changes nothing. */
#include "policy/egress-policy-private.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define POLICY_VERSION 1

typedef int (*string_adder) (struct ab_egress_policy_s *p, const char *s, ab_error_t *err);

static int
key_error (ab_error_t *err, const char *origin, const char *key, const char *what)
{
	return ab_error (err, 0, AB_E_INVALID, "%s: key '%s': %s", origin, key, what);
}

static int
apply_strings (struct ab_egress_policy_s *p, json_t *value, string_adder add, const char *origin,
               const char *key, ab_error_t *err)
{
	size_t i;
	json_t *item;

	if (!json_is_array (value))
		return key_error (err, origin, key, "expected an array of strings");
	json_array_foreach (value, i, item)
	{
		ab_error_t e = AB_ERROR_INIT;
		if (!json_is_string (item))
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s: key '%s'[%zu]: expected a string", origin, key, i);
		if (add (p, json_string_value (item), &e) < 0)
			return ab_error (err, 0, AB_E_INVALID, "%s: key '%s'[%zu]: %s", origin, key,
			                 i, e.msg);
	}
	return 0;
}

static int
apply_deny_groups (struct ab_egress_policy_s *p, json_t *value, const char *origin, const char *key,
                   ab_error_t *err)
{
	unsigned groups = 0;
	size_t i;
	json_t *item;

	if (!json_is_array (value))
		return key_error (err, origin, key, "expected an array of group names");
	json_array_foreach (value, i, item)
	{
		unsigned g =
		        json_is_string (item) ? ab_addr_group_parse (json_string_value (item)) : 0;
		if (g == 0)
			return ab_error (
			        err, 0, AB_E_INVALID,
			        "%s: key '%s'[%zu]: expected one of \"loopback\", \"private\", "
			        "\"link-local\", \"metadata\", \"all\"",
			        origin, key, i);
		groups |= g;
	}
	ab_egress_policy_set_deny_groups (p, groups);
	return 0;
}

static int
apply_bool (bool *slot, json_t *value, const char *origin, const char *key, ab_error_t *err)
{
	if (!json_is_boolean (value))
		return key_error (err, origin, key, "expected true or false");
	*slot = json_is_true (value);
	return 0;
}

static int
apply_version (json_t *value, const char *origin, const char *key, ab_error_t *err)
{
	if (!json_is_integer (value) || json_integer_value (value) != POLICY_VERSION)
		return key_error (err, origin, key, "expected 1");
	return 0;
}

static int
apply_comment (json_t *value, const char *origin, const char *key, ab_error_t *err)
{
	if (!json_is_string (value))
		return key_error (err, origin, key, "expected a string");
	return 0;
}

static int
apply_key (struct ab_egress_policy_s *p, const char *key, json_t *value, const char *origin,
           ab_error_t *err)
{
	if (strcmp (key, "version") == 0)
		return apply_version (value, origin, key, err);
	if (strcmp (key, "comment") == 0)
		return apply_comment (value, origin, key, err);
	if (strcmp (key, "deny_groups") == 0)
		return apply_deny_groups (p, value, origin, key, err);
	if (strcmp (key, "resolve_names") == 0)
		return apply_bool (&p->resolve_names, value, origin, key, err);
	if (strcmp (key, "allow_hosts") == 0)
		return apply_strings (p, value, ab_egress_policy_add_allow_host, origin, key, err);
	if (strcmp (key, "deny_hosts") == 0)
		return apply_strings (p, value, ab_egress_policy_add_deny_host, origin, key, err);
	if (strcmp (key, "allow_cidrs") == 0)
		return apply_strings (p, value, ab_egress_policy_add_allow_cidr, origin, key, err);
	return ab_error (err, 0, AB_E_INVALID, "%s: unknown key '%s'", origin, key);
}

static int
apply_document (struct ab_egress_policy_s *p, json_t *root, const char *origin, ab_error_t *err)
{
	struct ab_egress_policy_s *copy;
	const char *key;
	json_t *value;

	if (!json_is_object (root))
		return ab_error (err, 0, AB_E_INVALID, "%s: expected a JSON object", origin);
	copy = ab_egress_policy_clone (p);
	json_object_foreach (root, key, value)
	{
		if (apply_key (copy, key, value, origin, err) < 0) {
			ab_egress_policy_free (copy);
			return -1;
		}
	}
	ab_egress_policy_replace (p, copy);
	return 0;
}

static void
json_decref_p (json_t **j)
{
	if (*j)
		json_decref (*j);
}

int
ab_egress_policy_load_string (struct ab_egress_policy_s *p, const char *json, const char *origin,
                              ab_error_t *err)
{
	__attribute__ ((cleanup (json_decref_p))) json_t *root = NULL;
	json_error_t jerr;

	root = json_loads (json, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return ab_error (err, 0, AB_E_INVALID, "%s: line %d column %d: %s", origin,
		                 jerr.line, jerr.column, jerr.text);
	return apply_document (p, root, origin, err);
}

int
ab_egress_policy_load_file (struct ab_egress_policy_s *p, const char *path, ab_error_t *err)
{
	__attribute__ ((cleanup (json_decref_p))) json_t *root = NULL;
	cleanup_free char *origin = xasprintf ("policy file %s", path);
	cleanup_file FILE *f = fopen (path, "re");
	json_error_t jerr;

	if (!f)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "policy file %s", path);
	root = json_loadf (f, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return ab_error (err, 0, AB_E_INVALID, "%s: line %d column %d: %s", origin,
		                 jerr.line, jerr.column, jerr.text);
	return apply_document (p, root, origin, err);
}
