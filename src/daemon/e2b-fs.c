/* envd's filesystem.Filesystem service over the agent's file service
 * (paths confined exactly as for the REST API: beneath the sandbox's file
 * roots, `..` and symlinks out refused).  EntryInfo in protobuf-es JSON:
 * enum names, int64 as a string, RFC 3339 times. */
#include "daemon/e2b-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define MAX_DEPTH   16
#define MAX_ENTRIES 100000

static const char *
type_name (ab_agent_file_type t)
{
	switch (t) {
	case AB_AGENT_FT_FILE: return "FILE_TYPE_FILE";
	case AB_AGENT_FT_DIR: return "FILE_TYPE_DIRECTORY";
	case AB_AGENT_FT_SYMLINK: return "FILE_TYPE_SYMLINK";
	default: return "FILE_TYPE_UNSPECIFIED";
	}
}

/* "drwxr-xr-x", as Go's FileMode.String() that envd sends. */
static void
permissions (ab_agent_file_type t, uint32_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = t == AB_AGENT_FT_DIR ? 'd' : t == AB_AGENT_FT_SYMLINK ? 'L' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (1U << (8 - i))) ? rwx[i] : '-';
	out[10] = '\0';
}

static const char *
base_name (const char *path)
{
	const char *s = strrchr (path, '/');
	return s && s[1] ? s + 1 : s ? "/" : path;
}

json_t *
ab_e2b_entry (const char *path, const struct ab_agent_stat_s *st, const char *target,
              char *const *xattrs, struct ab_e2b_names_s *names)
{
	char perm[11], mtime[AB_UTC_MS_LEN], size[24];
	json_t *e;

	permissions (st->type, st->mode, perm);
	ab_utc_ms_format (st->mtime_ms, mtime);
	snprintf (size, sizeof size, "%llu", (unsigned long long)st->size);
	e = json_pack ("{s:s, s:s, s:s, s:s, s:i, s:s, s:s}", "name", base_name (path), "path",
	               path, "type", type_name (st->type), "size", size, "mode", (int)st->mode,
	               "permissions", perm, "modifiedTime", mtime);
	if (st->has_ids) {
		json_object_set_new (e, "owner", ab_e2b_id_name (names, false, st->uid));
		json_object_set_new (e, "group", ab_e2b_id_name (names, true, st->gid));
	}
	if (target)
		json_object_set_new (e, "symlinkTarget", json_string (target));
	if (xattrs && xattrs[0]) {
		json_t *md = json_object ();
		for (char *const *x = xattrs; *x; x++) {
			const char *eq = strchr (*x, '=');
			cleanup_free char *k = eq ? xstrndup (*x, (size_t)(eq - *x)) : NULL;
			if (k)
				json_object_set_new (md, k, json_string (eq + 1));
		}
		json_object_set_new (e, "metadata", md);
	}
	return e;
}

static char *
path_arg (struct ab_e2b_call_s *call, const char *key)
{
	const char *p = json_string_value (json_object_get (call->msg, key));
	return p ? ab_e2b_path (call, p) : NULL;
}

static char *
join (const char *dir, const char *name)
{
	return xasprintf ("%s%s%s", dir, dir[strlen (dir) - 1] == '/' ? "" : "/", name);
}

static int
list_into (ab_agent_conn_t *c, const char *dir, unsigned depth, json_t *out,
           struct ab_e2b_names_s *names, ab_error_t *err)
{
	struct ab_agent_dirent_s *v = NULL;
	size_t n = 0;
	int r = 0;

	if (ab_agent_file_list (c, dir, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && r == 0; i++) {
		cleanup_free char *p = join (dir, v[i].name);
		if (json_array_size (out) >= MAX_ENTRIES) {
			r = ab_error (err, 0, AB_E_LIMIT, "more than %d entries", MAX_ENTRIES);
			break;
		}
		json_array_append_new (out,
		                       ab_e2b_entry (p, &v[i].st, v[i].target, v[i].xattrs, names));
		if (depth > 1 && v[i].st.type == AB_AGENT_FT_DIR)
			r = list_into (c, p, depth - 1, out, names, err);
	}
	ab_agent_dirents_free (v, n);
	return r;
}

static int
entry_of (ab_agent_conn_t *c, const char *path, json_t **out, ab_error_t *err)
{
	struct ab_e2b_names_s names = { .c = c };
	struct ab_agent_stat_s st;
	char *target;
	cleanup_strv char **xattrs = NULL;

	if (ab_agent_file_stat_target (c, path, &st, &target, &xattrs, err) < 0)
		return -1;
	*out = json_pack ("{s:o}", "entry", ab_e2b_entry (path, &st, target, xattrs, &names));
	free (target);
	ab_e2b_names_free (&names);
	return 0;
}

static int
fs_stat (struct ab_e2b_call_s *call, ab_agent_conn_t *c, json_t **out, ab_error_t *err)
{
	cleanup_free char *p = path_arg (call, "path");

	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "'path' is required");
	return entry_of (c, p, out, err);
}

static int
fs_list (struct ab_e2b_call_s *call, ab_agent_conn_t *c, json_t **out, ab_error_t *err)
{
	cleanup_free char *p = path_arg (call, "path");
	json_t *d = json_object_get (call->msg, "depth");
	json_int_t depth = d ? json_integer_value (d) : 1;
	json_t *arr;
	struct ab_agent_stat_s st;
	struct ab_e2b_names_s names = { .c = c };
	int r;

	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "'path' is required");
	if (depth < 1 || depth > MAX_DEPTH)
		return ab_error (err, 0, AB_E_INVALID, "'depth' must be 1..%d", MAX_DEPTH);
	if (ab_agent_file_stat (c, p, &st, err) < 0)
		return -1;
	if (st.type != AB_AGENT_FT_DIR)
		return ab_error (err, 0, AB_E_INVALID, "%s is not a directory", p);
	arr = json_array ();
	r = list_into (c, p, (unsigned)depth, arr, &names, err);
	ab_e2b_names_free (&names);
	if (r < 0) {
		json_decref (arr);
		return -1;
	}
	*out = json_pack ("{s:o}", "entries", arr);
	return 0;
}

static int
fs_mkdir (struct ab_e2b_call_s *call, ab_agent_conn_t *c, json_t **out, ab_error_t *err)
{
	cleanup_free char *p = path_arg (call, "path");
	struct ab_agent_stat_s st;
	ab_error_t probe = AB_ERROR_INIT;

	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "'path' is required");
	if (ab_agent_file_stat (c, p, &st, &probe) == 0)
		return ab_error (err, EEXIST, AB_E_CONFLICT, "%s already exists", p);
	if (ab_agent_file_mkdir (c, p, 0755, err) < 0)
		return -1;
	return entry_of (c, p, out, err);
}

static int
fs_move (struct ab_e2b_call_s *call, ab_agent_conn_t *c, json_t **out, ab_error_t *err)
{
	cleanup_free char *from = path_arg (call, "source");
	cleanup_free char *to = path_arg (call, "destination");

	if (!from || !to)
		return ab_error (err, 0, AB_E_INVALID, "'source' and 'destination' are required");
	if (ab_agent_file_rename (c, from, to, err) < 0)
		return -1;
	return entry_of (c, to, out, err);
}

static int
fs_remove (struct ab_e2b_call_s *call, ab_agent_conn_t *c, json_t **out, ab_error_t *err)
{
	cleanup_free char *p = path_arg (call, "path");

	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "'path' is required");
	if (ab_agent_file_remove (c, p, true, err) < 0)
		return -1;
	*out = json_object ();
	return 0;
}

typedef int (*fs_op) (struct ab_e2b_call_s *call, ab_agent_conn_t *c, json_t **out,
                      ab_error_t *err);

void
ab_e2b_filesystem (struct ab_e2b_call_s *call)
{
	static const struct {
		const char *name;
		fs_op op;
	} ops[] = {
		{ "Stat", fs_stat }, { "ListDir", fs_list },  { "MakeDir", fs_mkdir },
		{ "Move", fs_move }, { "Remove", fs_remove },
	};
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = NULL;
	json_t *out = NULL;
	fs_op op = NULL;

	bool watch = strcmp (call->method, "WatchDir") == 0;
	bool watcher = strcmp (call->method, "CreateWatcher") == 0
	               || strcmp (call->method, "GetWatcherEvents") == 0
	               || strcmp (call->method, "RemoveWatcher") == 0;

	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		if (strcmp (call->method, ops[i].name) == 0)
			op = ops[i].op;
	if (watch || watcher) {
		if (ab_e2b_call_read (call, &err) < 0)
			ab_e2b_fail_err (call, &err);
		else if (watch)
			ab_e2b_watch_dir (call);
		else
			ab_e2b_watchers (call);
		json_decref (call->msg);
		return;
	}
	if (!op) {
		ab_e2b_fail (call, "unimplemented", "filesystem.Filesystem/%s is not implemented",
		             call->method);
		return;
	}
	if (ab_e2b_call_read (call, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		return;
	}
	c = ab_box_connect (call->r->d, call->b, &err);
	if (c)
		ab_agent_set_timeout (c, AB_AGENT_CALL_TIMEOUT_MS);
	if (!c || op (call, c, &out, &err) < 0) {
		if (err.kind == AB_E_CONFLICT && err.errnum == EEXIST)
			ab_e2b_fail (call, "already_exists", "%s", err.msg);
		else
			ab_e2b_fail_err (call, &err);
	} else
		ab_e2b_unary (call, out);
	ab_agent_close (c);
	json_decref (call->msg);
}
