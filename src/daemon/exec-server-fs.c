/* fs/ methods: the sandbox's files through the agent's confined file service
 * (every path is a sandbox path; the agent refuses `..`, symlinks out and
 * magic links, also when swapped in mid-call).  Answers in the reference
 * server's shapes and error codes. */
#include "daemon/exec-server.h"

#include <errno.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

struct buf_s {
	uint8_t *p;
	size_t len, off, cap;
};

static int
sink_data (void *ctx, const void *data, size_t len, ab_error_t *err)
{
	struct buf_s *b = ctx;

	if (b->len + len > AB_XS_MAX_FILE)
		return ab_error (err, E2BIG, AB_E_LIMIT, "the file is larger than %u MiB",
		                 AB_XS_MAX_FILE >> 20);
	if (b->len + len + 1 > b->cap) {
		/* geometric: the agent sends many small chunks */
		b->cap = (b->len + len + 1) * 2;
		b->p = xrealloc (b->p, b->cap);
	}
	memcpy (b->p + b->len, data, len);
	b->len += len;
	return 0;
}

static int
sink_begin (void *ctx, const struct ab_agent_stat_s *st, ab_error_t *err)
{
	(void)ctx;
	if (st && st->type == AB_AGENT_FT_DIR)
		return ab_error (err, EISDIR, AB_E_CONFLICT, "the path is a directory, not a file");
	return 0;
}

static ssize_t
source_data (void *ctx, void *out, size_t cap, ab_error_t *err)
{
	struct buf_s *b = ctx;
	size_t n = b->len - b->off < cap ? b->len - b->off : cap;

	(void)err;
	memcpy (out, b->p + b->off, n);
	b->off += n;
	return (ssize_t)n;
}

/* The request's path parameter as a sandbox path; NULL with out filled. */
static char *
param_path (struct ab_xs_conn_s *x, json_t *params, const char *name, bool *host_form,
            struct ab_xs_reply_s *out)
{
	bool dummy;

	if (!json_is_object (params))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "missing field `%s`", name), NULL;
	return ab_xs_uri_path (x->b, json_object_get (params, name), name,
	                       host_form ? host_form : &dummy, out);
}

static ab_agent_conn_t *
agent (struct ab_xs_conn_s *x, struct ab_xs_reply_s *out)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_xs_agent (x, &err);

	if (!c)
		ab_xs_fail_agent (x, out, &err);
	return c;
}

static int
read_all (struct ab_xs_conn_s *x, const char *path, struct buf_s *b, struct ab_xs_reply_s *out)
{
	struct ab_agent_file_sink_s sink = { .begin = sink_begin, .data = sink_data, .ctx = b };
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = agent (x, out);

	if (!c)
		return -1;
	if (ab_agent_file_read (c, path, &sink, &err) < 0) {
		struct ab_agent_stat_s st;
		ab_error_t e2 = AB_ERROR_INIT;
		/* A directory: the reference's "not a file" (-32600). */
		if ((err.kind == AB_E_CONFLICT && err.errnum == EISDIR)
		    || (err.kind != AB_E_NOT_FOUND && err.kind != AB_E_SYSTEM
		        && ab_agent_file_stat (c, path, &st, &e2) == 0
		        && st.type == AB_AGENT_FT_DIR))
			return ab_xs_fail (out, AB_XS_INVALID_REQUEST, "path `%s` is not a file",
			                   path),
			       -1;
		return ab_xs_fail_agent (x, out, &err), -1;
	}
	return 0;
}

static int
write_all (struct ab_xs_conn_s *x, const char *path, struct buf_s *b, struct ab_xs_reply_s *out)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = agent (x, out);
	uint64_t written;

	if (!c)
		return -1;
	b->off = 0;
	if (ab_agent_file_write (c, path, 0, source_data, b, &written, &err) < 0)
		return ab_xs_fail_agent (x, out, &err), -1;
	return 0;
}

static void
fs_read_file (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *path = param_path (x, params, "path", NULL, out);
	struct buf_s b = { 0 };

	if (path && read_all (x, path, &b, out) == 0) {
		out->result = json_object ();
		out->b64_key = "dataBase64";
		out->b64 = ab_base64_encode (b.p ? b.p : (uint8_t *)"", b.len);
	}
	free (b.p);
}

static void
fs_write_file (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *path = param_path (x, params, "path", NULL, out);
	json_t *data = json_object_get (params, "dataBase64");
	struct buf_s b = { 0 };

	if (!path)
		return;
	if (!json_is_string (data))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "missing field `dataBase64`");
	if (ab_xs_check_profile (x->b, json_object_get (params, "sandbox"), out) < 0)
		return;
	if (ab_base64_decode (json_string_value (data), json_string_length (data), &b.p, &b.len)
	    < 0)
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "fs/writeFile requires valid base64 dataBase64");
	if (write_all (x, path, &b, out) == 0)
		out->result = json_object ();
	free (b.p);
}

/* The parent directory of path, which must exist for a non-recursive
 * create. */
static int
parent_exists (struct ab_xs_conn_s *x, ab_agent_conn_t *c, const char *path,
               struct ab_xs_reply_s *out)
{
	cleanup_free char *parent = xstrdup (path);
	char *slash = strrchr (parent, '/');
	struct ab_agent_stat_s st;
	ab_error_t err = AB_ERROR_INIT;

	if (!slash || slash == parent)
		return 0;
	*slash = 0;
	if (ab_agent_file_stat (c, parent, &st, &err) < 0)
		return ab_xs_fail_agent (x, out, &err), -1;
	return 0;
}

static void
fs_create_directory (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *path = param_path (x, params, "path", NULL, out);
	json_t *rec = json_object_get (params, "recursive");
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;

	if (!path || !(c = agent (x, out)))
		return;
	if (json_is_false (rec) && parent_exists (x, c, path, out) < 0)
		return;
	if (ab_agent_file_mkdir (c, path, 0, &err) < 0)
		return ab_xs_fail_agent (x, out, &err);
	out->result = json_object ();
}

/* Symlinks followed for isFile/isDirectory, as the reference does (an
 * AGENTS.md that links to another file is a file).  The agent's stat does
 * not follow, its open does (inside the sandbox only): a read that stops
 * at its first callback gives the target's stat, a listing that works a
 * directory.  At most this many per request. */
#define MAX_LINK_PROBES 64

static int
probe_begin (void *ctx, const struct ab_agent_stat_s *st, ab_error_t *err)
{
	struct ab_agent_stat_s *out = ctx;

	if (st)
		*out = *st;
	else
		out->type = AB_AGENT_FT_FILE;
	return ab_error (err, 0, AB_E_INTERNAL, "probe done");
}

static int
probe_data (void *ctx, const void *buf, size_t len, ab_error_t *err)
{
	(void)ctx, (void)buf, (void)len;
	return ab_error (err, 0, AB_E_INTERNAL, "probe done");
}

static ab_agent_file_type
link_target (struct ab_xs_conn_s *x, const char *path, uint64_t *size)
{
	struct ab_agent_stat_s st = { .type = AB_AGENT_FT_OTHER };
	struct ab_agent_file_sink_s sink = { .begin = probe_begin, .data = probe_data, .ctx = &st };
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_dirent_s *v = NULL;
	ab_agent_conn_t *c = ab_xs_agent (x, &err);
	size_t n = 0;

	if (!c)
		return AB_AGENT_FT_OTHER;
	if (ab_agent_file_read (c, path, &sink, &err) < 0 && st.type == AB_AGENT_FT_OTHER) {
		if (err.kind == AB_E_SYSTEM || err.kind == AB_E_INTERNAL) {
			ab_agent_close (x->agent);
			x->agent = NULL;
		}
		ab_error_clear (&err);
		if (!(c = ab_xs_agent (x, &err)))
			return AB_AGENT_FT_OTHER;
		if (ab_agent_file_list (c, path, &v, &n, &err) == 0) {
			ab_agent_dirents_free (v, n);
			return AB_AGENT_FT_DIR;
		}
		return AB_AGENT_FT_OTHER;
	}
	/* the read was stopped by us: the connection must go (agent-client.h) */
	ab_agent_close (x->agent);
	x->agent = NULL;
	if (st.type == AB_AGENT_FT_FILE)
		*size = st.size;
	return st.type;
}

static json_t *
metadata (const struct ab_agent_stat_s *st, ab_agent_file_type target)
{
	return json_pack ("{s:b, s:b, s:b, s:I, s:i, s:I}", "isDirectory",
	                  target == AB_AGENT_FT_DIR, "isFile", target == AB_AGENT_FT_FILE,
	                  "isSymlink", st->type == AB_AGENT_FT_SYMLINK, "size",
	                  (json_int_t)st->size, "createdAtMs", 0, "modifiedAtMs",
	                  (json_int_t)st->mtime_ms);
}

static void
fs_get_metadata (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *path = param_path (x, params, "path", NULL, out);
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_stat_s st;
	ab_agent_conn_t *c;

	if (!path || !(c = agent (x, out)))
		return;
	if (ab_agent_file_stat (c, path, &st, &err) < 0)
		return ab_xs_fail_agent (x, out, &err);
	out->result = metadata (
	        &st, st.type == AB_AGENT_FT_SYMLINK ? link_target (x, path, &st.size) : st.type);
}

static void
fs_read_directory (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *path = param_path (x, params, "path", NULL, out);
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_dirent_s *v = NULL;
	ab_agent_conn_t *c;
	json_t *entries;
	size_t n = 0;

	if (!path || !(c = agent (x, out)))
		return;
	if (ab_agent_file_list (c, path, &v, &n, &err) < 0)
		return ab_xs_fail_agent (x, out, &err);
	entries = json_array ();
	for (size_t i = 0, probes = 0; i < n; i++) {
		ab_agent_file_type t = v[i].st.type;
		if (t == AB_AGENT_FT_SYMLINK && probes++ < MAX_LINK_PROBES) {
			cleanup_free char *full = xasprintf ("%s/%s", path, v[i].name);
			uint64_t size;
			t = link_target (x, full, &size);
		}
		json_array_append_new (entries, json_pack ("{s:s, s:b, s:b}", "fileName", v[i].name,
		                                           "isDirectory", t == AB_AGENT_FT_DIR,
		                                           "isFile", t == AB_AGENT_FT_FILE));
	}
	ab_agent_dirents_free (v, n);
	out->result = json_pack ("{s:o}", "entries", entries);
}

static void
fs_remove (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *path = param_path (x, params, "path", NULL, out);
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;

	if (!path || !(c = agent (x, out)))
		return;
	/* Defaults as the reference: recursive, and a missing path is fine
	 * unless force is false. */
	if (ab_agent_file_remove (c, path, !json_is_false (json_object_get (params, "recursive")),
	                          &err)
	            < 0
	    && !(err.kind == AB_E_NOT_FOUND && !json_is_false (json_object_get (params, "force"))))
		return ab_xs_fail_agent (x, out, &err);
	out->result = json_object ();
}

static int copy_tree (struct ab_xs_conn_s *x, const char *from, const char *to, int depth,
                      struct ab_xs_reply_s *out);

static int
copy_one (struct ab_xs_conn_s *x, const char *from, const char *to, ab_agent_file_type type,
          int depth, struct ab_xs_reply_s *out)
{
	struct buf_s b = { 0 };
	int rc;

	if (type == AB_AGENT_FT_DIR)
		return copy_tree (x, from, to, depth + 1, out);
	if (type != AB_AGENT_FT_FILE)
		return ab_xs_fail (out, AB_XS_INTERNAL,
		                   "fs/copy: %s is a symlink or special file; agentbox copies "
		                   "regular files and directories only",
		                   from),
		       -1;
	rc = read_all (x, from, &b, out) == 0 && write_all (x, to, &b, out) == 0 ? 0 : -1;
	free (b.p);
	return rc;
}

static int
copy_tree (struct ab_xs_conn_s *x, const char *from, const char *to, int depth,
           struct ab_xs_reply_s *out)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_dirent_s *v = NULL;
	ab_agent_conn_t *c = agent (x, out);
	size_t n = 0;
	int rc = 0;

	if (depth > AB_XS_COPY_DEPTH)
		return ab_xs_fail (out, AB_XS_INTERNAL, "fs/copy: deeper than %d directories",
		                   AB_XS_COPY_DEPTH),
		       -1;
	if (!c || ab_agent_file_mkdir (c, to, 0, &err) < 0
	    || ab_agent_file_list (c, from, &v, &n, &err) < 0) {
		if (c)
			ab_xs_fail_agent (x, out, &err);
		return -1;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		cleanup_free char *f = xasprintf ("%s/%s", from, v[i].name);
		cleanup_free char *t = xasprintf ("%s/%s", to, v[i].name);
		rc = copy_one (x, f, t, v[i].st.type, depth, out);
	}
	ab_agent_dirents_free (v, n);
	return rc;
}

static void
fs_copy (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	cleanup_free char *from = param_path (x, params, "sourcePath", NULL, out);
	cleanup_free char *to = from ? param_path (x, params, "destinationPath", NULL, out) : NULL;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_stat_s st;
	ab_agent_conn_t *c;
	size_t fl;

	if (!to || !(c = agent (x, out)))
		return;
	if (ab_agent_file_stat (c, from, &st, &err) < 0)
		return ab_xs_fail_agent (x, out, &err);
	if (st.type == AB_AGENT_FT_DIR && !json_is_true (json_object_get (params, "recursive")))
		return ab_xs_fail (
		        out, AB_XS_INVALID_REQUEST,
		        "fs/copy requires recursive: true when sourcePath is a directory");
	fl = strlen (from);
	if (st.type == AB_AGENT_FT_DIR && strncmp (to, from, fl) == 0 && (to[fl] == '/' || !to[fl]))
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST,
		                   "fs/copy: cannot copy a directory into itself");
	if (copy_one (x, from, to, st.type, 0, out) == 0)
		out->result = json_object ();
}

/* realpath(1) inside the sandbox: the sandbox's own view of its links. */
static void
fs_canonicalize (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	bool host_form;
	cleanup_free char *path = param_path (x, params, "path", &host_form, out);
	cleanup_free char *res = NULL, *uri = NULL;
	ab_error_t err = AB_ERROR_INIT;
	int code;

	if (!path)
		return;
	char *const argv[] = { (char *)"realpath", (char *)"-e", (char *)"--", path, NULL };
	if (ab_xs_run_capture (x, argv, &res, &code, &err) < 0)
		return ab_xs_fail_agent (x, out, &err);
	res[strcspn (res, "\n")] = 0;
	if (code != 0 || res[0] != '/')
		return ab_xs_fail (out, AB_XS_NOT_FOUND, "No such file or directory (os error 2)");
	uri = ab_xs_path_uri (x->b, res, host_form);
	out->result = json_pack ("{s:s}", "path", uri);
}

static const struct {
	const char *method;
	void (*fn) (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out);
} methods[] = {
	{ "fs/readFile", fs_read_file },
	{ "fs/writeFile", fs_write_file },
	{ "fs/createDirectory", fs_create_directory },
	{ "fs/getMetadata", fs_get_metadata },
	{ "fs/readDirectory", fs_read_directory },
	{ "fs/remove", fs_remove },
	{ "fs/copy", fs_copy },
	{ "fs/canonicalize", fs_canonicalize },
};

bool
ab_xs_fs (struct ab_xs_conn_s *x, const char *method, json_t *params, struct ab_xs_reply_s *out)
{
	for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
		if (strcmp (method, methods[i].method) == 0) {
			methods[i].fn (x, params, out);
			return true;
		}
	return false;
}
