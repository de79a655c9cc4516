/* /v1/sandboxes/{id}/files: raw bytes streamed both ways (a 1 GiB file
 * costs the daemon one buffer, not a copy), list, stat, mkdir, remove,
 * move.  Confinement (the workspace and the read-write mounts; no `..`,
 * no symlink out, also when swapped in during the call) is the agent's job,
 * done with openat2(RESOLVE_BENEATH) inside the sandbox: the daemon never
 * resolves a sandbox path on the host. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"

#define UPLOAD_CHUNK (256 * 1024)

static const char *const type_names[] = {
	[AB_AGENT_FT_OTHER] = "other",
	[AB_AGENT_FT_FILE] = "file",
	[AB_AGENT_FT_DIR] = "dir",
	[AB_AGENT_FT_SYMLINK] = "symlink",
};

json_t *
ab_file_stat_json (const char *name, const struct ab_agent_stat_s *st)
{
	char mode[8];

	snprintf (mode, sizeof mode, "%04o", st->mode & 07777);
	return json_pack ("{s:s, s:s, s:I, s:s, s:I}", "name", name, "type",
	                  type_names[st->type <= AB_AGENT_FT_SYMLINK ? st->type : 0], "size",
	                  (json_int_t)st->size, "mode", mode, "mtime_ms", (json_int_t)st->mtime_ms);
}

struct files_call_s {
	struct ab_box_s *b;
	ab_agent_conn_t *c;
	char *path;
};

/* The sandbox, its agent and ?path=, or a response sent (returns -1). */
static int
files_open (struct ab_req_s *r, struct files_call_s *f, const char *param)
{
	ab_error_t err = AB_ERROR_INIT;

	memset (f, 0, sizeof *f);
	f->b = ab_api_box (r, true);
	if (!f->b)
		return -1;
	if (param) {
		f->path = ab_req_query (r, param, &err);
		if (!f->path || !f->path[0]) {
			if (err.kind == AB_E_NONE)
				ab_error (&err, 0, AB_E_INVALID, "missing query parameter '%s'",
				          param);
			ab_resp_error (r, &err);
			ab_box_unref (r->d, f->b);
			free (f->path);
			return -1;
		}
	}
	f->c = ab_box_connect (r->d, f->b, &err);
	if (!f->c) {
		ab_resp_error (r, &err);
		ab_box_unref (r->d, f->b);
		free (f->path);
		return -1;
	}
	return 0;
}

static void
files_close (struct ab_req_s *r, struct files_call_s *f, int rc, const ab_error_t *err)
{
	if (rc < 0 && !r->responded)
		ab_resp_error (r, err);
	else if (rc < 0 && r->streaming)
		r->close = true; /* no last chunk: the client sees a truncated body, not a short
		                    file */
	else if (!r->responded)
		ab_resp_empty (r, 204);
	ab_agent_close (f->c);
	ab_box_unref (r->d, f->b);
	free (f->path);
}

struct download_s {
	struct ab_req_s *r;
	uint64_t bytes;
};

static int
dl_begin (void *ctx, const struct ab_agent_stat_s *st, ab_error_t *err)
{
	struct download_s *d = ctx;
	(void)st;
	if (ab_resp_stream_begin (d->r, 200, "application/octet-stream") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "client went away");
	return 0;
}

static int
dl_data (void *ctx, const void *buf, size_t len, ab_error_t *err)
{
	struct download_s *d = ctx;
	if (!d->r->streaming && dl_begin (ctx, NULL, err) < 0)
		return -1;
	if (ab_resp_stream (d->r, buf, len) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "client went away");
	d->bytes += len;
	return 0;
}

static int
list_dir (struct ab_req_s *r, struct files_call_s *f, ab_error_t *err)
{
	struct ab_agent_dirent_s *v = NULL;
	size_t n = 0;
	json_t *arr;

	if (ab_agent_file_list (f->c, f->path, &v, &n, err) < 0)
		return -1;
	arr = json_array ();
	for (size_t i = 0; i < n; i++)
		json_array_append_new (arr, ab_file_stat_json (v[i].name, &v[i].st));
	ab_agent_dirents_free (v, n);
	return ab_resp_json (r, 200, json_pack ("{s:s, s:o}", "path", f->path, "entries", arr)), 0;
}

static int
stat_path (struct ab_req_s *r, struct files_call_s *f, ab_error_t *err)
{
	struct ab_agent_stat_s st;

	if (ab_agent_file_stat (f->c, f->path, &st, err) < 0)
		return -1;
	json_t *j = ab_file_stat_json (f->path, &st);
	json_object_set_new (j, "path", json_string (f->path));
	ab_resp_json (r, 200, j);
	return 0;
}

void
ab_api_files_get (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct files_call_s f;
	struct download_s dl = { .r = r };
	struct ab_agent_file_sink_s sink = { .begin = dl_begin, .data = dl_data, .ctx = &dl };
	int rc;

	if (files_open (r, &f, "path") < 0)
		return;
	if (ab_req_query_flag (r, "list"))
		rc = list_dir (r, &f, &err);
	else if (ab_req_query_flag (r, "stat"))
		rc = stat_path (r, &f, &err);
	else {
		rc = ab_agent_file_read (f.c, f.path, &sink, &err);
		if (rc == 0 && !r->streaming)
			rc = dl_begin (&dl, NULL, &err);
		if (rc == 0)
			rc = ab_resp_stream_end (r);
		ab_metrics_add_bytes ("file_read_bytes", dl.bytes);
	}
	files_close (r, &f, rc, &err);
}

void
ab_api_files_stat (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct files_call_s f;

	if (files_open (r, &f, "path") < 0)
		return;
	files_close (r, &f, stat_path (r, &f, &err), &err);
}

struct upload_s {
	struct ab_req_s *r;
	uint64_t max, total;
};

static ssize_t
ul_source (void *ctx, void *buf, size_t cap, ab_error_t *err)
{
	struct upload_s *u = ctx;
	ssize_t n = ab_http_io_body_read (u->r->io, buf, cap, err);

	if (n > 0 && u->max && (u->total += (uint64_t)n) > u->max)
		return ab_error (err, E2BIG, AB_E_LIMIT,
		                 "upload larger than %llu bytes (--max-upload)",
		                 (unsigned long long)u->max);
	return n;
}

void
ab_api_files_put (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct upload_s u = { .r = r, .max = r->d->cfg->max_upload };
	cleanup_free char *mode_s = NULL;
	struct files_call_s f;
	uint64_t written = 0;
	uint32_t mode;
	int rc;

	if (files_open (r, &f, "path") < 0)
		return;
	mode_s = ab_req_query (r, "mode", &err);
	rc = err.kind ? -1 : ab_parse_mode (mode_s, &mode, &err);
	if (rc == 0 && u.max && r->io->body == AB_HTTP_BODY_LENGTH
	    && r->io->head.content_length > u.max)
		rc = ab_error (&err, E2BIG, AB_E_LIMIT,
		               "upload larger than %llu bytes (--max-upload)",
		               (unsigned long long)u.max);
	if (rc == 0 && ab_req_continue (r) < 0)
		rc = ab_error (&err, errno, AB_E_SYSTEM, "write 100 Continue");
	if (rc == 0)
		rc = ab_agent_file_write (f.c, f.path, mode, ul_source, &u, &written, &err);
	ab_metrics_add_bytes ("file_write_bytes", u.total);
	if (rc == 0)
		ab_resp_json (
		        r, 201,
		        json_pack ("{s:s, s:I}", "path", f.path, "size", (json_int_t)written));
	files_close (r, &f, rc, &err);
}

void
ab_api_files_delete (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct files_call_s f;

	if (files_open (r, &f, "path") < 0)
		return;
	files_close (r, &f,
	             ab_agent_file_remove (f.c, f.path, ab_req_query_flag (r, "recursive"), &err),
	             &err);
}

void
ab_api_files_mkdir (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct files_call_s f;
	const char *path = NULL, *mode_s = NULL;
	json_t *req = NULL;
	json_error_t je;
	uint32_t mode = 0;
	int rc;

	if (files_open (r, &f, NULL) < 0)
		return;
	rc = ab_req_body_json (r, &req, &err);
	if (rc == 0
	    && json_unpack_ex (req, &je, JSON_STRICT, "{s:s, s?s}", "path", &path, "mode", &mode_s)
	               < 0)
		rc = ab_error (&err, 0, AB_E_INVALID, "mkdir request: %s", je.text);
	if (rc == 0)
		rc = ab_parse_mode (mode_s, &mode, &err);
	if (rc == 0)
		rc = ab_agent_file_mkdir (f.c, path, mode, &err);
	json_decref (req);
	files_close (r, &f, rc, &err);
}

void
ab_api_files_move (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct files_call_s f;
	const char *from = NULL, *to = NULL;
	json_t *req = NULL;
	json_error_t je;
	int rc;

	if (files_open (r, &f, NULL) < 0)
		return;
	rc = ab_req_body_json (r, &req, &err);
	if (rc == 0
	    && json_unpack_ex (req, &je, JSON_STRICT, "{s:s, s:s}", "from", &from, "to", &to) < 0)
		rc = ab_error (&err, 0, AB_E_INVALID, "move request: %s", je.text);
	if (rc == 0)
		rc = ab_agent_file_rename (f.c, from, to, &err);
	json_decref (req);
	files_close (r, &f, rc, &err);
}
