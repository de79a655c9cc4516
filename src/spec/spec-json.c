/* Spec <-> JSON.  See spec-json.h. */
#include "spec/spec-json.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"

typedef int (*key_fn) (const json_t *v, const char *key, struct ab_spec_s *spec, ab_error_t *err);

struct key_s {
	const char *name;
	key_fn apply;
	bool internal;
};

static int
bad_type (const char *key, const char *want, ab_error_t *err)
{
	return ab_error (err, 0, AB_E_INVALID, "'%s' must be %s", key, want);
}

static int
get_string (const json_t *v, const char *key, bool nullable, char **slot, ab_error_t *err)
{
	if (nullable && json_is_null (v)) {
		free (*slot);
		*slot = NULL;
		return 0;
	}
	if (!json_is_string (v))
		return bad_type (key, nullable ? "a string or null" : "a string", err);
	if (strlen (json_string_value (v)) != json_string_length (v))
		return ab_error (err, 0, AB_E_INVALID, "'%s' must not contain NUL", key);
	free (*slot);
	*slot = xstrdup (json_string_value (v));
	return 0;
}

static int
get_strv (const json_t *v, const char *key, char ***slot, ab_error_t *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array (v))
		return bad_type (key, "an array of strings", err);
	json_array_foreach (
	        v, i, e) if (!json_is_string (e)
	                     || strlen (json_string_value (e))
	                                != json_string_length (
	                                        e)) return bad_type (key, "an array of strings",
	                                                             err);
	ab_cleanup_strvp (slot);
	*slot = xcalloc (json_array_size (v) + 1, sizeof (char *));
	json_array_foreach (v, i, e) (*slot)[i] = xstrdup (json_string_value (e));
	return 0;
}

int
ab_json_duration_ms (const json_t *v, const char *key, uint64_t *out, ab_error_t *err)
{
	if (json_is_string (v))
		return ab_parse_duration (json_string_value (v), out, err) < 0
		               ? ab_error_wrap (err, "'%s'", key)
		               : 0;
	if (json_is_number (v)) {
		double s = json_number_value (v);
		if (!(s >= 0 && s < 1e12))
			return ab_error (err, 0, AB_E_INVALID, "'%s' is out of range", key);
		*out = (uint64_t)(s * 1000 + 0.5);
		return 0;
	}
	return bad_type (key, "a duration (\"30s\") or a number of seconds", err);
}

static bool
unlimited (const json_t *v)
{
	return (json_is_number (v) && json_number_value (v) == 0)
	       || (json_is_string (v) && strcmp (json_string_value (v), "unlimited") == 0);
}

static int
get_size (const json_t *v, const char *key, uint64_t *out, ab_error_t *err)
{
	if (unlimited (v)) {
		*out = 0;
		return 0;
	}
	if (json_is_integer (v) && json_integer_value (v) > 0) {
		*out = (uint64_t)json_integer_value (v);
		return 0;
	}
	if (json_is_string (v))
		return ab_parse_size (json_string_value (v), out, err) < 0
		               ? ab_error_wrap (err, "'%s'", key)
		               : 0;
	return bad_type (key, "a size (\"512m\" or bytes)", err);
}

static int
get_uint (const json_t *v, const char *key, uint64_t min, uint64_t max, uint64_t *out,
          ab_error_t *err)
{
	if (!json_is_integer (v) || json_integer_value (v) < 0
	    || (uint64_t)json_integer_value (v) < min || (uint64_t)json_integer_value (v) > max)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'%s' must be an integer in [%" PRIu64 ", %" PRIu64 "]", key, min,
		                 max);
	*out = (uint64_t)json_integer_value (v);
	return 0;
}

static int
key_backend (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, false, &s->backend, err);
}

static int
key_rootfs (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	if (get_string (v, k, true, &s->rootfs, err) < 0)
		return -1;
	if (s->rootfs && strcmp (s->rootfs, "host") == 0) {
		free (s->rootfs);
		s->rootfs = NULL;
	}
	return 0;
}

static int
key_image (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, true, &s->image, err);
}

static int
key_image_digest (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, true, &s->image_digest, err);
}

/* "root": {"layers": [DIR...], "read_only": bool}, or null for none. */
static int
key_root (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	const char *name;
	json_t *val;

	if (json_is_null (v)) {
		ab_cleanup_strvp (&s->root.layers);
		s->root.read_only = false;
		return 0;
	}
	if (!json_is_object (v))
		return bad_type (k, "an object or null", err);
	json_object_foreach ((json_t *)v, name, val)
	{
		if (strcmp (name, "layers") == 0) {
			if (get_strv (val, "root.layers", &s->root.layers, err) < 0)
				return -1;
		} else if (strcmp (name, "read_only") == 0) {
			if (!json_is_boolean (val))
				return bad_type ("root.read_only", "a boolean", err);
			s->root.read_only = json_is_true (val);
		} else
			return ab_error (err, 0, AB_E_INVALID, "unknown key 'root.%s'", name);
	}
	return 0;
}

static int
key_workspace (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, true, &s->workspace, err);
}

static int
key_workdir (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, false, &s->workdir, err);
}

static int
key_hostname (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, false, &s->hostname, err);
}

static int
key_desktop (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	if (!json_is_boolean (v))
		return bad_type (k, "a boolean", err);
	s->desktop = json_is_true (v);
	return 0;
}

static int
key_microvm_accel (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	if (get_string (v, k, false, &s->microvm_accel, err) < 0)
		return -1;
	if (strcmp (s->microvm_accel, "auto") != 0 && strcmp (s->microvm_accel, "kvm") != 0
	    && strcmp (s->microvm_accel, "tcg") != 0)
		return ab_error (err, 0, AB_E_INVALID, "'%s' must be \"auto\", \"kvm\" or \"tcg\"",
		                 k);
	return 0;
}

static int
key_service_socket (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_string (v, k, true, &s->service_socket, err);
}

static int
key_argv (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	return get_strv (v, k, &s->argv, err);
}

static const struct {
	const char *name;
	ab_mount_kind kind;
} mount_kinds[] = { { "ro", AB_MOUNT_RO_BIND },
	            { "rw", AB_MOUNT_RW_BIND },
	            { "tmpfs", AB_MOUNT_TMPFS } };

static int
one_mount (const json_t *m, size_t i, struct ab_spec_s *s, ab_error_t *err)
{
	const char *type = NULL, *src = NULL, *dst = NULL;
	json_t *size = NULL;
	json_error_t je;
	uint64_t bytes = 0;

	if (json_unpack_ex ((json_t *)m, &je, JSON_STRICT, "{s:s, s?s, s:s, s?o}", "type", &type,
	                    "source", &src, "destination", &dst, "size", &size)
	    < 0)
		return ab_error (err, 0, AB_E_INVALID, "mounts[%zu]: %s", i, je.text);
	if (size && get_size (size, "mounts[].size", &bytes, err) < 0)
		return -1;
	for (size_t k = 0; k < sizeof mount_kinds / sizeof *mount_kinds; k++) {
		if (strcmp (type, mount_kinds[k].name) != 0)
			continue;
		if ((mount_kinds[k].kind == AB_MOUNT_TMPFS) != (src == NULL))
			return ab_error (err, 0, AB_E_INVALID, "mounts[%zu]: %s", i,
			                 src ? "a tmpfs has no source" : "a bind needs a source");
		if (src && src[0] != '/')
			return ab_error (err, 0, AB_E_INVALID,
			                 "mounts[%zu]: source must be an absolute host path", i);
		ab_spec_add_mount (s, mount_kinds[k].kind, src, dst, bytes);
		return 0;
	}
	return ab_error (err, 0, AB_E_INVALID, "mounts[%zu]: type must be ro, rw or tmpfs", i);
}

static int
key_mounts (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	size_t i;
	json_t *m;

	if (!json_is_array (v))
		return bad_type (k, "an array", err);
	json_array_foreach (v, i, m) if (one_mount (m, i, s, err) < 0) return -1;
	return 0;
}

static bool
valid_env_name (const char *s, size_t len)
{
	if (len == 0 || isdigit ((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(isalnum ((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* Set KEY=VALUE in a NULL-terminated vector, replacing an existing KEY. */
static void
env_set (char ***env, const char *kv)
{
	size_t klen = strcspn (kv, "=");
	for (char **p = *env; p && *p; p++)
		if (strncmp (*p, kv, klen) == 0 && (*p)[klen] == '=') {
			free (*p);
			*p = xstrdup (kv);
			return;
		}
	ab_strv_push (env, kv);
}

static int
key_env (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	const char *name;
	json_t *val;
	size_t i;

	if (json_is_object (v)) {
		json_object_foreach ((json_t *)v, name, val)
		{
			if (!valid_env_name (name, strlen (name)) || !json_is_string (val)
			    || strlen (json_string_value (val)) != json_string_length (val))
				return ab_error (err, 0, AB_E_INVALID,
				                 "env: '%s' needs a valid name and a string value",
				                 name);
			cleanup_free char *kv = xasprintf ("%s=%s", name, json_string_value (val));
			env_set (&s->env, kv);
		}
		return 0;
	}
	if (!json_is_array (v))
		return bad_type (k, "an object or an array of \"KEY=VALUE\"", err);
	json_array_foreach (v, i, val)
	{
		const char *kv = json_string_value (val);
		if (!kv || !strchr (kv, '=') || !valid_env_name (kv, strcspn (kv, "="))
		    || strlen (kv) != json_string_length (val))
			return ab_error (err, 0, AB_E_INVALID, "env[%zu] must be \"KEY=VALUE\"", i);
		env_set (&s->env, kv);
	}
	return 0;
}

static int
key_user (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	uint64_t uid, gid;

	if (json_is_integer (v)) {
		if (get_uint (v, k, 0, 65535, &uid, err) < 0)
			return -1;
		s->uid = (uid_t)uid;
		s->gid = (gid_t)uid;
		return 0;
	}
	if (!json_is_string (v))
		return bad_type (k, "\"UID[:GID]\" or a number", err);
	cleanup_free char *copy = xstrdup (json_string_value (v));
	char *colon = strchr (copy, ':');
	if (colon)
		*colon = '\0';
	if (ab_parse_uint (copy, 0, 65535, &uid, err) < 0
	    || ab_parse_uint (colon ? colon + 1 : copy, 0, 65535, &gid, err) < 0)
		return ab_error_wrap (err, "'user' (numeric UID[:GID], 0-65535)");
	s->uid = (uid_t)uid;
	s->gid = (gid_t)gid;
	return 0;
}

static int
key_network (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	const char *n = json_string_value (v);
	if (n && strcmp (n, "none") == 0)
		s->network = AB_NETWORK_NONE;
	else if (n && strcmp (n, "proxy") == 0)
		s->network = AB_NETWORK_PROXY;
	else
		return bad_type (k, "\"none\" or \"proxy\"", err);
	return 0;
}

static int
key_egress (const json_t *v, const char *k, struct ab_spec_s *s, ab_error_t *err)
{
	struct ab_egress_spec_s *e = &s->egress;
	const char *name;
	json_t *val;

	if (!json_is_object (v))
		return bad_type (k, "an object", err);
	json_object_foreach ((json_t *)v, name, val)
	{
		int r;
		if (strcmp (name, "allow_hosts") == 0)
			r = get_strv (val, "egress.allow_hosts", &e->allow_hosts, err);
		else if (strcmp (name, "deny_hosts") == 0)
			r = get_strv (val, "egress.deny_hosts", &e->deny_hosts, err);
		else if (strcmp (name, "allow_cidrs") == 0)
			r = get_strv (val, "egress.allow_cidrs", &e->allow_cidrs, err);
		else if (strcmp (name, "policy_file") == 0)
			r = get_string (val, "egress.policy_file", true, &e->policy_file, err);
		else if (strcmp (name, "audit_log") == 0)
			r = get_string (val, "egress.audit_log", true, &e->audit_log, err);
		else
			r = ab_error (err, 0, AB_E_INVALID, "unknown key 'egress.%s'", name);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int
limit_cpus (const json_t *v, struct ab_limits_s *l, ab_error_t *err)
{
	char buf[64];

	if (unlimited (v)) {
		l->cpu_millis = 0;
		return 0;
	}
	if (json_is_number (v))
		snprintf (buf, sizeof buf, "%.3f", json_number_value (v));
	else if (json_is_string (v))
		snprintf (buf, sizeof buf, "%s", json_string_value (v));
	else
		return bad_type ("limits.cpus", "a number of CPUs", err);
	return ab_parse_cpus (buf, &l->cpu_millis, err) < 0 ? ab_error_wrap (err, "'limits.cpus'")
	                                                    : 0;
}

static int
one_limit (const char *name, const json_t *v, unsigned flags, struct ab_limits_s *l,
           ab_error_t *err)
{
	if (strcmp (name, "memory") == 0)
		return l->explicit_cgroup = true,
		       get_size (v, "limits.memory", &l->memory_bytes, err);
	if (strcmp (name, "pids") == 0)
		return l->explicit_cgroup = true,
		       get_uint (v, "limits.pids", 0, 4194304, &l->pids, err);
	if (strcmp (name, "cpus") == 0)
		return l->explicit_cgroup = true, limit_cpus (v, l, err);
	if (strcmp (name, "timeout") == 0)
		return ab_json_duration_ms (v, "limits.timeout", &l->timeout_ms, err);
	if (strcmp (name, "kill_grace") == 0)
		return ab_json_duration_ms (v, "limits.kill_grace", &l->kill_grace_ms, err);
	if (strcmp (name, "nofile") == 0)
		return get_uint (v, "limits.nofile", 16, 1048576, &l->nofile, err);
	if (strcmp (name, "explicit_cgroup") == 0 && (flags & AB_SPEC_JSON_INTERNAL)
	    && json_is_boolean (v))
		return l->explicit_cgroup = json_is_true (v), 0;
	return ab_error (err, 0, AB_E_INVALID, "unknown key 'limits.%s'", name);
}

static int
apply_limits (const json_t *v, unsigned flags, struct ab_spec_s *s, ab_error_t *err)
{
	struct ab_limits_s l = s->limits;
	const char *name;
	json_t *val;
	bool explicit = l.explicit_cgroup;

	if (!json_is_object (v))
		return bad_type ("limits", "an object", err);
	json_object_foreach ((json_t *)v, name,
	                     val) if (one_limit (name, val, flags, &l, err) < 0) return -1;
	/* The internal explicit_cgroup key, when present, wins over inference. */
	if (!json_object_get (v, "explicit_cgroup"))
		l.explicit_cgroup = l.explicit_cgroup || explicit;
	s->limits = l;
	return 0;
}

static const struct key_s keys[] = {
	{ "backend", key_backend, false },
	{ "rootfs", key_rootfs, false },
	{ "image", key_image, false },
	{ "root", key_root, false },
	{ "image_digest", key_image_digest, true },
	{ "workspace", key_workspace, false },
	{ "mounts", key_mounts, false },
	{ "env", key_env, false },
	{ "workdir", key_workdir, false },
	{ "user", key_user, false },
	{ "hostname", key_hostname, false },
	{ "network", key_network, false },
	{ "egress", key_egress, false },
	{ "microvm_accel", key_microvm_accel, false },
	{ "desktop", key_desktop, false },
	{ "argv", key_argv, true },
	{ "service_socket", key_service_socket, true },
};

int
ab_spec_from_json (const json_t *j, unsigned flags, struct ab_spec_s *spec, ab_error_t *err)
{
	const char *name;
	json_t *v;

	if (!json_is_object (j))
		return ab_error (err, 0, AB_E_INVALID, "the sandbox spec must be a JSON object");
	json_object_foreach ((json_t *)j, name, v)
	{
		size_t i;
		if (strcmp (name, "limits") == 0) {
			if (apply_limits (v, flags, spec, err) < 0)
				return -1;
			continue;
		}
		for (i = 0; i < sizeof keys / sizeof *keys; i++)
			if (strcmp (keys[i].name, name) == 0
			    && (!keys[i].internal || (flags & AB_SPEC_JSON_INTERNAL)))
				break;
		if (i == sizeof keys / sizeof *keys)
			return ab_error (err, 0, AB_E_INVALID, "unknown key '%s'", name);
		if (keys[i].apply (v, name, spec, err) < 0)
			return -1;
	}
	return 0;
}

static json_t *
strv_json (char *const *v)
{
	json_t *a = json_array ();
	for (; v && *v; v++)
		json_array_append_new (a, json_string (*v));
	return a;
}

static json_t *
str_or_null (const char *s)
{
	return s ? json_string (s) : json_null ();
}

static json_t *
mounts_json (const struct ab_spec_s *s)
{
	json_t *a = json_array ();

	for (size_t i = 0; i < s->n_mounts; i++) {
		const struct ab_mount_s *m = &s->mounts[i];
		json_t *o = json_pack ("{s:s, s:s}", "type", mount_kinds[m->kind].name,
		                       "destination", m->destination);
		if (m->source)
			json_object_set_new (o, "source", json_string (m->source));
		if (m->size)
			json_object_set_new (o, "size", json_integer ((json_int_t)m->size));
		json_array_append_new (a, o);
	}
	return a;
}

static json_t *
env_json (char *const *env)
{
	json_t *o = json_object ();
	for (; env && *env; env++) {
		size_t klen = strcspn (*env, "=");
		cleanup_free char *k = xstrndup (*env, klen);
		json_object_set_new (o, k, json_string ((*env)[klen] ? *env + klen + 1 : ""));
	}
	return o;
}

static json_t *
limits_json (const struct ab_limits_s *l, unsigned flags)
{
	char timeout[32], grace[32];
	json_t *o;

	snprintf (timeout, sizeof timeout, "%" PRIu64 "ms", l->timeout_ms);
	snprintf (grace, sizeof grace, "%" PRIu64 "ms", l->kill_grace_ms);
	o = json_pack ("{s:I, s:I, s:o, s:s, s:s, s:I}", "memory", (json_int_t)l->memory_bytes,
	               "pids", (json_int_t)l->pids, "cpus",
	               l->cpu_millis ? json_real ((double)l->cpu_millis / 1000.0)
	                             : json_integer (0),
	               "timeout", timeout, "kill_grace", grace, "nofile", (json_int_t)l->nofile);
	if (flags & AB_SPEC_JSON_INTERNAL)
		json_object_set_new (o, "explicit_cgroup", json_boolean (l->explicit_cgroup));
	return o;
}

json_t *
ab_spec_to_json (const struct ab_spec_s *s, unsigned flags)
{
	char user[32];
	json_t *o;

	snprintf (user, sizeof user, "%u:%u", (unsigned)s->uid, (unsigned)s->gid);
	o = json_pack ("{s:s, s:o, s:o, s:o, s:o, s:s, s:s, s:s, s:s, s:o}", "backend", s->backend,
	               "rootfs", str_or_null (s->rootfs), "workspace", str_or_null (s->workspace),
	               "mounts", mounts_json (s), "env", env_json (s->env), "workdir", s->workdir,
	               "user", user, "hostname", s->hostname, "network",
	               s->network == AB_NETWORK_PROXY ? "proxy" : "none", "limits",
	               limits_json (&s->limits, flags));
	if (s->network == AB_NETWORK_PROXY)
		json_object_set_new (o, "egress",
		                     json_pack ("{s:o, s:o, s:o, s:o, s:o}", "allow_hosts",
		                                strv_json (s->egress.allow_hosts), "deny_hosts",
		                                strv_json (s->egress.deny_hosts), "allow_cidrs",
		                                strv_json (s->egress.allow_cidrs), "policy_file",
		                                str_or_null (s->egress.policy_file), "audit_log",
		                                str_or_null (s->egress.audit_log)));
	if (s->image)
		json_object_set_new (o, "image", json_string (s->image));
	if (s->root.layers)
		json_object_set_new (o, "root",
		                     json_pack ("{s:o, s:b}", "layers", strv_json (s->root.layers),
		                                "read_only", s->root.read_only));
	if (s->desktop)
		json_object_set_new (o, "desktop", json_true ());
	if (s->microvm_accel && strcmp (s->microvm_accel, "auto") != 0)
		json_object_set_new (o, "microvm_accel", json_string (s->microvm_accel));
	if (flags & AB_SPEC_JSON_INTERNAL) {
		json_object_set_new (o, "argv", strv_json (s->argv));
		json_object_set_new (o, "service_socket", str_or_null (s->service_socket));
		if (s->image_digest)
			json_object_set_new (o, "image_digest", json_string (s->image_digest));
	}
	return o;
}
