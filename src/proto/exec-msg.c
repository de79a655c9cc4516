/* The EXEC message.  The host is trusted more than the
 * sandbox, but every length is still checked: a bug must not become a
 * memory error inside PID 1. */
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "proto/exec-msg.h"

#define MAX_STRV 65536

static int
push (char ***v, size_t *n, const struct ab_tlv_s *t, ab_error_t *err)
{
	char *s;
	if (*n >= MAX_STRV)
		return ab_error (err, 0, AB_E_LIMIT, "too many strings in EXEC");
	s = ab_tlv_strdup (t, err);
	if (!s)
		return -1;
	*v = xrealloc (*v, (*n + 2) * sizeof **v);
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

static int
take_u32 (const struct ab_tlv_s *t, uint32_t *out, ab_error_t *err)
{
	return ab_tlv_u32 (t, out, err);
}

static int
apply_record (struct ab_exec_msg_s *req, const struct ab_tlv_s *t, ab_error_t *err)
{
	uint32_t v32 = 0;

	switch (t->tag) {
	case AB_TAG_ARG: return push (&req->argv, &req->n_argv, t, err);
	case AB_TAG_ENV: return push (&req->env, &req->n_env, t, err);
	case AB_TAG_RW_PATH: return push (&req->rw_paths, &req->n_rw_paths, t, err);
	case AB_TAG_CWD:
		free (req->cwd);
		req->cwd = ab_tlv_strdup (t, err);
		return req->cwd ? 0 : -1;
	case AB_TAG_UID:
		if (take_u32 (t, &v32, err) < 0)
			return -1;
		req->uid = v32;
		return 0;
	case AB_TAG_GID:
		if (take_u32 (t, &v32, err) < 0)
			return -1;
		req->gid = v32;
		return 0;
	case AB_TAG_TTY:
		if (take_u32 (t, &v32, err) < 0)
			return -1;
		req->tty = v32 != 0;
		return 0;
	case AB_TAG_ROWS: return take_u32 (t, &req->rows, err);
	case AB_TAG_COLS: return take_u32 (t, &req->cols, err);
	case AB_TAG_TIMEOUT_MS: return ab_tlv_u64 (t, &req->timeout_ms, err);
	case AB_TAG_GRACE_MS: return ab_tlv_u64 (t, &req->grace_ms, err);
	case AB_TAG_NOFILE: return ab_tlv_u64 (t, &req->nofile, err);
	default: return ab_error (err, 0, AB_E_INVALID, "unknown EXEC field %u", t->tag);
	}
}

int
ab_exec_msg_decode (const uint8_t *payload, size_t len, struct ab_exec_msg_s *req, ab_error_t *err)
{
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	int k;

	memset (req, 0, sizeof *req);
	ab_tlv_reader_init (&r, payload, len);
	while ((k = ab_tlv_next (&r, &t, err)) > 0)
		if (apply_record (req, &t, err) < 0)
			return -1;
	if (k < 0)
		return -1;
	if (req->n_argv == 0)
		return ab_error (err, 0, AB_E_INVALID, "EXEC without a command");
	if (!req->env) {
		req->env = xcalloc (1, sizeof (char *));
	}
	if (!req->cwd)
		req->cwd = xstrdup ("/");
	return 0;
}

static void
free_strv (char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free (v[i]);
	free (v);
}

void
ab_exec_msg_free (struct ab_exec_msg_s *req)
{
	free_strv (req->argv, req->n_argv);
	free_strv (req->env, req->n_env);
	free_strv (req->rw_paths, req->n_rw_paths);
	free (req->cwd);
	memset (req, 0, sizeof *req);
}

static void
put_strv (struct ab_tlv_writer_s *w, uint16_t tag, char *const *v)
{
	for (; v && *v; v++)
		ab_tlv_put_str (w, tag, *v);
}

void
ab_exec_msg_encode (struct ab_tlv_writer_s *w, const struct ab_exec_msg_s *m)
{
	put_strv (w, AB_TAG_ARG, m->argv);
	put_strv (w, AB_TAG_ENV, m->env);
	put_strv (w, AB_TAG_RW_PATH, m->rw_paths);
	if (m->cwd)
		ab_tlv_put_str (w, AB_TAG_CWD, m->cwd);
	ab_tlv_put_u32 (w, AB_TAG_UID, m->uid);
	ab_tlv_put_u32 (w, AB_TAG_GID, m->gid);
	ab_tlv_put_u32 (w, AB_TAG_TTY, m->tty);
	ab_tlv_put_u32 (w, AB_TAG_ROWS, m->rows);
	ab_tlv_put_u32 (w, AB_TAG_COLS, m->cols);
	ab_tlv_put_u64 (w, AB_TAG_TIMEOUT_MS, m->timeout_ms);
	ab_tlv_put_u64 (w, AB_TAG_GRACE_MS, m->grace_ms);
	ab_tlv_put_u64 (w, AB_TAG_NOFILE, m->nofile);
}
