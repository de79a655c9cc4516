/* The MCP file tools on the agent's file service: read_file, write_file,
 * list_dir, stat, remove, move.  Confinement is the agent's (openat2
 * RESOLVE_BENEATH inside the sandbox: `..`, symlinks out and magic links
 * are refused, also when swapped in during the call); a refusal comes
 * back as a tool error with the agent's message.  The daemon never
 * resolves a sandbox path on the host. */
#include "daemon/mcp-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "net/websocket.h"

#define READ_DEFAULT (1U << 20)

/* A connection to the call's sandbox, or NULL with err. */
static ab_agent_conn_t *
conn (struct ab_mcp_call_s *call, ab_error_t *err)
{
	return ab_box_connect (call->d, call->b, err);
}

/* Wrap an agent error with the tool's name and path, keeping its kind. */
static json_t *
fail (ab_error_t *err, const char *tool, const char *path)
{
	ab_error_wrap (err, "%s %s", tool, path);
	return NULL;
}

static int
unpack (const json_t *a, ab_error_t *err, const char *tool, const char *fmt, ...)
{
	json_error_t je;
	va_list ap;
	int rc;

	va_start (ap, fmt);
	rc = json_vunpack_ex ((json_t *)a, &je, JSON_STRICT, fmt, ap);
	va_end (ap);
	if (rc < 0)
		return ab_error (err, 0, AB_E_INVALID, "%s: %s", tool, je.text);
	return 0;
}

/* --- read_file ---------------------------------------------------------- */

struct read_s {
	uint64_t skip, limit, size;
	char *buf;
	size_t len;
	bool more;
};

static int
rd_begin (void *ctx, const struct ab_agent_stat_s *st, ab_error_t *err)
{
	struct read_s *r = ctx;

	if (st && st->type == AB_AGENT_FT_DIR)
		return ab_error (err, EISDIR, AB_E_INVALID, "is a directory (use list_dir)");
	if (st)
		r->size = st->size;
	return 0;
}

static int
rd_data (void *ctx, const void *buf, size_t len, ab_error_t *err)
{
	struct read_s *r = ctx;
	const char *p = buf;

	if (r->skip) {
		size_t k = len < r->skip ? len : (size_t)r->skip;
		r->skip -= k;
		p += k;
		len -= k;
	}
	if (r->len + len > r->limit) {
		len = (size_t)(r->limit - r->len);
		r->more = true;
	}
	r->buf = xrealloc (r->buf, r->len + len + 1);
	memcpy (r->buf + r->len, p, len);
	r->len += len;
	/* Enough: stop the transfer (the connection is closed after). */
	return r->more ? ab_error (err, 0, AB_E_LIMIT, "enough") : 0;
}

/* Text may end inside a character when the read was cut: drop that tail. */
static size_t
valid_prefix (const char *buf, size_t len, bool cut)
{
	for (size_t back = 0; back <= (cut ? 3U : 0U) && back <= len; back++)
		if (ab_ws_utf8_valid ((const uint8_t *)buf, len - back))
			return len - back;
	return (size_t)-1;
}

json_t *
ab_mcp_tool_read_file (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *path = NULL, *enc = "text";
	json_int_t offset = 0, limit = READ_DEFAULT;
	struct read_s r = { 0 };
	struct ab_agent_file_sink_s sink = { .begin = rd_begin, .data = rd_data, .ctx = &r };
	cleanup_free char *content = NULL;
	size_t clen = 0;
	ab_agent_conn_t *c;
	size_t n;
	int rc;

	if (unpack (call->args, err, "read_file", "{s:s, s?s, s?I, s?I}", "path", &path, "encoding",
	            &enc, "offset", &offset, "limit", &limit)
	    < 0)
		return NULL;
	if (strcmp (enc, "text") != 0 && strcmp (enc, "base64") != 0)
		return ab_error (err, 0, AB_E_INVALID, "'encoding' must be text or base64"), NULL;
	if (offset < 0 || limit < 1 || limit > AB_MCP_READ_CAP)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'offset' must be >= 0 and 'limit' in [1, 4194304]"),
		       NULL;
	r.skip = (uint64_t)offset;
	r.limit = (uint64_t)limit;
	if (!(c = conn (call, err)))
		return NULL;
	rc = ab_agent_file_read (c, path, &sink, err);
	ab_agent_close (c);
	if (rc < 0 && !r.more) {
		free (r.buf);
		return fail (err, "read_file", path);
	}
	ab_error_clear (err);
	if (strcmp (enc, "base64") == 0) {
		content = ab_base64_encode (r.buf ? r.buf : "", r.len);
		clen = strlen (content);
	} else if ((n = valid_prefix (r.buf ? r.buf : "", r.len, r.more)) == (size_t)-1) {
		free (r.buf);
		return ab_error (err, 0, AB_E_INVALID,
		                 "read_file %s: not UTF-8 text (read it with encoding base64)",
		                 path),
		       NULL;
	} else {
		content = xmalloc (n + 1);
		memcpy (content, r.buf ? r.buf : "", n);
		content[n] = '\0';
		clen = n;
	}
	free (r.buf);
	json_t *o = json_pack ("{s:s, s:s, s:s%, s:I, s:I, s:I, s:b}", "path", path, "encoding",
	                       enc, "content", content, clen, "size", (json_int_t)r.size, "offset",
	                       offset, "length", (json_int_t)r.len, "truncated", r.more);
	return ab_mcp_result (o, content);
}

/* --- write_file --------------------------------------------------------- */

struct src_s {
	const uint8_t *p;
	size_t left;
};

static ssize_t
src_read (void *ctx, void *buf, size_t cap, ab_error_t *err)
{
	struct src_s *s = ctx;
	size_t n = s->left < cap ? s->left : cap;

	(void)err;
	memcpy (buf, s->p, n);
	s->p += n;
	s->left -= n;
	return (ssize_t)n;
}

/* mkdir -p of path's parent (a relative path's parent is under the workspace). */
static int
make_parent (ab_agent_conn_t *c, const char *path, ab_error_t *err)
{
	const char *slash = strrchr (path, '/');
	cleanup_free char *dir = NULL;

	if (!slash || slash == path)
		return 0;
	dir = xstrndup (path, (size_t)(slash - path));
	return ab_agent_file_mkdir (c, dir, 0, err);
}

json_t *
ab_mcp_tool_write_file (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *path = NULL, *content = NULL, *enc = "text", *mode_s = NULL;
	int dirs = 1;
	cleanup_free uint8_t *bytes = NULL;
	size_t len, clen;
	struct src_s src;
	uint64_t written = 0;
	ab_agent_conn_t *c;
	uint32_t mode;
	int rc;

	if (unpack (call->args, err, "write_file", "{s:s, s:s%, s?s, s?s, s?b}", "path", &path,
	            "content", &content, &clen, "encoding", &enc, "mode", &mode_s, "create_dirs",
	            &dirs)
	            < 0
	    || ab_parse_mode (mode_s, &mode, err) < 0)
		return NULL;
	if (strcmp (enc, "base64") == 0) {
		if (ab_base64_decode (content, clen, &bytes, &len) < 0)
			return ab_error (err, 0, AB_E_INVALID, "'content' is not valid base64"),
			       NULL;
	} else if (strcmp (enc, "text") == 0) {
		bytes = xmalloc (clen + 1);
		memcpy (bytes, content, clen);
		len = clen;
	} else
		return ab_error (err, 0, AB_E_INVALID, "'encoding' must be text or base64"), NULL;
	src = (struct src_s){ .p = bytes, .left = len };
	if (!(c = conn (call, err)))
		return NULL;
	rc = dirs ? make_parent (c, path, err) : 0;
	if (rc == 0)
		rc = ab_agent_file_write (c, path, mode, src_read, &src, &written, err);
	ab_agent_close (c);
	if (rc < 0)
		return fail (err, "write_file", path);
	ab_metrics_add_bytes ("file_write_bytes", written);
	cleanup_free char *text =
	        xasprintf ("wrote %llu bytes to %s", (unsigned long long)written, path);
	return ab_mcp_result (json_pack ("{s:s, s:I}", "path", path, "size", (json_int_t)written),
	                      text);
}

/* --- list_dir, stat, remove, move --------------------------------------- */

json_t *
ab_mcp_tool_list_dir (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *path = NULL;
	struct ab_agent_dirent_s *v = NULL;
	size_t n = 0;
	ab_agent_conn_t *c;
	json_t *arr;
	int rc;

	if (unpack (call->args, err, "list_dir", "{s?s}", "path", &path) < 0)
		return NULL;
	if (!path)
		path = call->b->spec.workdir ? call->b->spec.workdir : "/";
	if (!(c = conn (call, err)))
		return NULL;
	rc = ab_agent_file_list (c, path, &v, &n, err);
	ab_agent_close (c);
	if (rc < 0)
		return fail (err, "list_dir", path);
	arr = json_array ();
	cleanup_free char *text = xstrdup ("");
	for (size_t i = 0; i < n && i < AB_MCP_LIST_MAX; i++) {
		json_t *e = ab_file_stat_json (v[i].name, &v[i].st);
		bool dir = v[i].st.type == AB_AGENT_FT_DIR;
		char *t = xasprintf ("%s%s%s\n", text, v[i].name, dir ? "/" : "");
		free (text);
		text = t;
		json_array_append_new (arr, e);
	}
	json_t *o = json_pack ("{s:s, s:o, s:b}", "path", path, "entries", arr, "truncated",
	                       n > AB_MCP_LIST_MAX);
	ab_agent_dirents_free (v, n);
	return ab_mcp_result (o, text[0] ? text : "(empty)");
}

json_t *
ab_mcp_tool_stat (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *path = NULL;
	struct ab_agent_stat_s st;
	ab_agent_conn_t *c;
	int rc;

	if (unpack (call->args, err, "stat", "{s:s}", "path", &path) < 0)
		return NULL;
	if (!(c = conn (call, err)))
		return NULL;
	rc = ab_agent_file_stat (c, path, &st, err);
	ab_agent_close (c);
	if (rc < 0)
		return fail (err, "stat", path);
	json_t *o = ab_file_stat_json (path, &st);
	json_object_del (o, "name");
	json_object_set_new (o, "path", json_string (path));
	return ab_mcp_result_json (o);
}

json_t *
ab_mcp_tool_remove (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *path = NULL;
	int recursive = 0, rc;
	ab_agent_conn_t *c;

	if (unpack (call->args, err, "remove", "{s:s, s?b}", "path", &path, "recursive", &recursive)
	    < 0)
		return NULL;
	if (!(c = conn (call, err)))
		return NULL;
	rc = ab_agent_file_remove (c, path, recursive, err);
	ab_agent_close (c);
	if (rc < 0)
		return fail (err, "remove", path);
	return ab_mcp_result_json (json_pack ("{s:s, s:b}", "path", path, "removed", true));
}

json_t *
ab_mcp_tool_move (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *from = NULL, *to = NULL;
	ab_agent_conn_t *c;
	int rc;

	if (unpack (call->args, err, "move", "{s:s, s:s}", "from", &from, "to", &to) < 0)
		return NULL;
	if (!(c = conn (call, err)))
		return NULL;
	rc = ab_agent_file_rename (c, from, to, err);
	ab_agent_close (c);
	if (rc < 0)
		return fail (err, "move", from);
	return ab_mcp_result_json (json_pack ("{s:s, s:s}", "from", from, "to", to));
}
