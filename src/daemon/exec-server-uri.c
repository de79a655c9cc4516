/* What an exec-server request says, checked against the sandbox: file://
 * URIs as sandbox paths (the host's workspace directory mapped onto
 * /workspace), Codex's `sandbox` permission profile, and the process
 * environment from `env` and `envPolicy`.  Pure code on the box's spec. */
#include "daemon/exec-server.h"

#include <fnmatch.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/pct.h"
#include "base/xalloc.h"

/* The workspace's host directory, without trailing slashes ("" = none). */
static size_t
host_ws (const struct ab_box_s *b, const char **ws)
{
	size_t n;

	*ws = b->spec.workspace;
	if (!*ws || (*ws)[0] != '/')
		return 0;
	n = strlen (*ws);
	while (n > 1 && (*ws)[n - 1] == '/')
		n--;
	return n > 1 ? n : 0;
}

/* No "." or ".." segment, no empty path: the agent refuses `..` too, but a
 * URI that means two different files to two readers is refused here, with
 * the parameter's name. */
static bool
clean_segments (const char *p)
{
	while (*p) {
		size_t n;
		while (*p == '/')
			p++;
		n = strcspn (p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return true;
}

char *
ab_xs_uri_path (const struct ab_box_s *b, const json_t *v, const char *field, bool *host_form,
                struct ab_xs_reply_s *out)
{
	const char *s = json_string_value (v), *colon, *ws;
	cleanup_free char *path = NULL;
	size_t wsn;

	*host_form = false;
	if (!json_is_string (v))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "missing field `%s`", field), NULL;
	colon = strchr (s, ':');
	if (!colon || colon == s || strcspn (s, "/?#") < (size_t)(colon - s))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "invalid URI: relative URL without a base (%s must be a file:// "
		                   "URI)",
		                   field),
		       NULL;
	if ((size_t)(colon - s) != 4 || strncasecmp (s, "file", 4) != 0)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "unsupported path URI scheme `%.*s`",
		                   (int)(colon - s > 32 ? 32 : colon - s), s),
		       NULL;
	s = colon + 1;
	if (strncmp (s, "//", 2) != 0)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "%s: a file URI is file:///PATH", field),
		       NULL;
	s += 2;
	if (strncasecmp (s, "localhost/", 10) == 0)
		s += 9;
	if (*s != '/')
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "%s: a file URI names no host here (file:///PATH)", field),
		       NULL;
	if (strpbrk (s, "?#"))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "%s: a file URI has no query or fragment",
		                   field),
		       NULL;
	if (!(path = ab_pct_decode (s, strlen (s), false)))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "%s: a malformed %%-escape or a NUL",
		                   field),
		       NULL;
	if (!clean_segments (path))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "%s: a path with '.' or '..' segments is refused", field),
		       NULL;
	wsn = host_ws (b, &ws);
	if (wsn && strncmp (path, ws, wsn) == 0 && (path[wsn] == '\0' || path[wsn] == '/')) {
		*host_form = true;
		return xasprintf ("%s%s", AB_WORKSPACE_DIR, path + wsn);
	}
	return steal_pointer (&path);
}

/* RFC 3986 3.3: a path keeps unreserved, sub-delims, ':', '@' and '/'. */
static bool
keep (unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	       || strchr ("-._~!$&'()*+,;=:@/", c) != NULL;
}

char *
ab_xs_path_uri (const struct ab_box_s *b, const char *path, bool host_form)
{
	size_t wl = strlen (AB_WORKSPACE_DIR), wsn;
	const char *ws;
	cleanup_free char *full = NULL;
	char *out, *o;

	wsn = host_ws (b, &ws);
	if (host_form && wsn && strncmp (path, AB_WORKSPACE_DIR, wl) == 0
	    && (path[wl] == '\0' || path[wl] == '/'))
		full = xasprintf ("%.*s%s", (int)wsn, ws, path + wl);
	else
		full = xstrdup (path);
	out = o = xmalloc (7 + strlen (full) * 3 + 1);
	o = stpcpy (o, "file://");
	for (const unsigned char *p = (const unsigned char *)full; *p; p++) {
		if (keep (*p))
			*o++ = (char)*p;
		else
			o += sprintf (o, "%%%02X", *p);
	}
	*o = 0;
	return out;
}

/* --- the sandbox permission profile ------------------------------------ */

/* The file-system entries an agentbox sandbox grants, all of them: the
 * root read-only, the workspace (Codex's project roots), /tmp and $TMPDIR
 * writable.  A profile must ask for exactly these. */
static const struct {
	const char *kind, *access;
} granted[] = {
	{ "root", "read" },
	{ "project_roots", "write" },
	{ "slash_tmp", "write" },
	{ "tmpdir", "write" },
};

static int
check_entry (const json_t *e, unsigned *seen, struct ab_xs_reply_s *out)
{
	json_t *path = json_object_get (e, "path");
	const char *type = json_string_value (json_object_get (path, "type"));
	json_t *val = json_object_get (path, "value");
	const char *kind = json_string_value (json_object_get (val, "kind"));
	const char *sub = json_string_value (json_object_get (val, "subpath"));
	const char *access = json_string_value (json_object_get (e, "access"));

	if (!type || !access)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "sandbox: a file_system entry needs path.type and access"),
		       -1;
	for (size_t i = 0; i < sizeof granted / sizeof *granted; i++)
		if (strcmp (type, "special") == 0 && kind && !sub
		    && strcmp (kind, granted[i].kind) == 0
		    && strcmp (access, granted[i].access) == 0) {
			*seen |= 1U << i;
			return 0;
		}
	return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
	                   "sandbox: the entry %s%s%s%s -> %s differs from what this agentbox "
	                   "sandbox grants (root read, workspace, /tmp and $TMPDIR write), and "
	                   "agentbox does not pretend to enforce it; run Codex with "
	                   "sandbox_mode=\"danger-full-access\" (the agentbox sandbox is the wall)",
	                   kind ? kind : type, sub ? "/" : "", sub ? sub : "",
	                   strcmp (type, "special") == 0 ? "" : " (a path entry)", access),
	       -1;
}

static int
check_network (const struct ab_box_s *b, const json_t *net, struct ab_xs_reply_s *out)
{
	const char *n = json_string_value (net);

	if (!net || json_is_null (net))
		return 0;
	if (n && strcmp (n, "restricted") == 0 && b->spec.network == AB_NETWORK_NONE)
		return 0;
	if (n && strcmp (n, "enabled") == 0 && b->spec.network == AB_NETWORK_PROXY)
		return 0;
	return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
	                   "sandbox: network \"%s\" is not what this sandbox has (network %s: "
	                   "\"%s\")",
	                   n ? n : "?", b->spec.network == AB_NETWORK_NONE ? "none" : "proxy",
	                   b->spec.network == AB_NETWORK_NONE ? "restricted" : "enabled"),
	       -1;
}

int
ab_xs_check_profile (const struct ab_box_s *b, const json_t *sandbox, struct ab_xs_reply_s *out)
{
	json_t *perm, *fs, *entries, *e;
	const char *ptype, *fstype;
	unsigned seen = 0;
	size_t i;

	if (!sandbox || json_is_null (sandbox))
		return 0;
	perm = json_object_get (sandbox, "permissions");
	if (!json_is_object (sandbox) || !json_is_object (perm))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "missing field `permissions`"), -1;
	ptype = json_string_value (json_object_get (perm, "type"));
	fs = json_object_get (perm, "file_system");
	fstype = json_string_value (json_object_get (fs, "type"));
	entries = json_object_get (fs, "entries");
	if (!ptype || strcmp (ptype, "managed") != 0 || !fstype
	    || strcmp (fstype, "restricted") != 0 || !json_is_array (entries))
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "sandbox: only a managed, restricted file-system profile can be "
		                   "checked against an agentbox sandbox (got %s/%s); send sandbox: "
		                   "null (danger-full-access) instead",
		                   ptype ? ptype : "?", fstype ? fstype : "?"),
		       -1;
	json_array_foreach (entries, i, e)
	{
		if (check_entry (e, &seen, out) < 0)
			return -1;
	}
	if (seen != (1U << (sizeof granted / sizeof *granted)) - 1)
		return ab_xs_fail (
		               out, AB_XS_INVALID_REQUEST,
		               "sandbox: the profile grants less than the sandbox does (it must "
		               "name root read, project_roots, slash_tmp and tmpdir write), and "
		               "agentbox cannot take rights away inside the sandbox"),
		       -1;
	return check_network (b, json_object_get (perm, "network"), out);
}

/* --- the environment ---------------------------------------------------- */

static bool
valid_key (const char *k)
{
	if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || *k == '_'))
		return false;
	for (k++; *k; k++)
		if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z')
		      || (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

static void
env_del (char ***env, const char *key, size_t klen)
{
	size_t o = 0;

	for (size_t i = 0; *env && (*env)[i]; i++) {
		if (strncmp ((*env)[i], key, klen) == 0 && (*env)[i][klen] == '=')
			free ((*env)[i]);
		else
			(*env)[o++] = (*env)[i];
	}
	if (*env)
		(*env)[o] = NULL;
}

/* KEY -> value pairs of an object onto env (replacing). */
static int
env_set_all (char ***env, const json_t *obj, const char *what, struct ab_xs_reply_s *out)
{
	const char *k;
	json_t *v;

	if (!obj || json_is_null (obj))
		return 0;
	if (!json_is_object (obj))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "%s must be an object of strings", what),
		       -1;
	json_object_foreach ((json_t *)obj, k, v)
	{
		if (!valid_key (k))
			return ab_xs_fail (out, AB_XS_BAD_PARAMS,
			                   "%s: the variable name '%.64s' is not "
			                   "^[A-Za-z_][A-Za-z0-9_]*$",
			                   what, k),
			       -1;
		if (!json_is_string (v) || strlen (json_string_value (v)) != json_string_length (v))
			return ab_xs_fail (out, AB_XS_BAD_PARAMS,
			                   "%s.%s must be a string without NUL", what, k),
			       -1;
		env_del (env, k, strlen (k));
		cleanup_free char *kv = xasprintf ("%s=%s", k, json_string_value (v));
		ab_strv_push (env, kv);
	}
	return 0;
}

static bool
matches_any (const char *kv, const json_t *globs)
{
	cleanup_free char *key = xstrndup (kv, strcspn (kv, "="));
	size_t i;
	json_t *g;

	json_array_foreach (globs, i, g)
	{
		if (json_is_string (g) && fnmatch (json_string_value (g), key, FNM_CASEFOLD) == 0)
			return true;
	}
	return false;
}

/* Keep (keep = true) or drop the variables whose names match globs. */
static void
env_filter (char ***env, const json_t *globs, bool keep_matching)
{
	size_t o = 0;

	if (!*env)
		return;
	for (size_t i = 0; (*env)[i]; i++) {
		if (matches_any ((*env)[i], globs) == keep_matching)
			(*env)[o++] = (*env)[i];
		else
			free ((*env)[i]);
	}
	(*env)[o] = NULL;
}

static const char *const core_vars[] = { "HOME",     "LOGNAME", "PATH", "SHELL", "USER",
	                                 "USERNAME", "TMPDIR",  "TEMP", "TMP" };

/* envPolicy's base: the sandbox's default environment, all of it, its
 * core variables, or nothing. */
static int
env_base (const struct ab_box_s *b, const char *inherit, char ***env, struct ab_xs_reply_s *out)
{
	bool all = !inherit || strcmp (inherit, "all") == 0,
	     core = inherit && strcmp (inherit, "core") == 0;

	if (!all && !core && strcmp (inherit, "none") != 0)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "envPolicy.inherit must be \"all\", \"core\" or \"none\""),
		       -1;
	for (char **e = b->spec.env; (all || core) && e && *e; e++) {
		bool take = all;
		for (size_t i = 0; !take && i < sizeof core_vars / sizeof *core_vars; i++)
			take = strncmp (*e, core_vars[i], strlen (core_vars[i])) == 0
			       && (*e)[strlen (core_vars[i])] == '=';
		if (take)
			ab_strv_push (env, *e);
	}
	return 0;
}

char **
ab_xs_build_env (const struct ab_box_s *b, const json_t *env, const json_t *policy,
                 struct ab_xs_reply_s *out)
{
	cleanup_strv char **e = NULL;

	if (policy && !json_is_null (policy)) {
		json_t *excl = json_object_get (policy, "exclude");
		json_t *only = json_object_get (policy, "includeOnly");
		json_t *defaults = json_pack ("[sss]", "*KEY*", "*SECRET*", "*TOKEN*");
		if (!json_is_object (policy)
		    || env_base (b, json_string_value (json_object_get (policy, "inherit")), &e,
		                 out)
		               < 0) {
			json_decref (defaults);
			if (!out->code)
				ab_xs_fail (out, AB_XS_BAD_PARAMS, "envPolicy must be an object");
			return NULL;
		}
		/* Codex's shell_environment_policy order: default excludes,
		 * exclude, set, include_only. */
		if (!json_is_true (json_object_get (policy, "ignoreDefaultExcludes")))
			env_filter (&e, defaults, false);
		json_decref (defaults);
		if (json_is_array (excl))
			env_filter (&e, excl, false);
		if (env_set_all (&e, json_object_get (policy, "set"), "envPolicy.set", out) < 0)
			return NULL;
		if (json_is_array (only) && json_array_size (only) > 0)
			env_filter (&e, only, true);
	}
	if (env_set_all (&e, env, "env", out) < 0)
		return NULL;
	if (!e)
		e = xcalloc (1, sizeof *e);
	return steal_pointer (&e);
}
