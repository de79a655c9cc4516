/* Streamed file transfers on a channel.  A read sends DATA as the client's
 * credit allows, reading the file only then, so a slow client costs one
 * chunk of memory.  A write goes into a temporary file beside the target
 * (created O_EXCL | O_NOFOLLOW in the parent directory's fd) and is renamed
 * over the target after EOF: readers see the old file or the new one,
 * never a part; a cancelled or failed write leaves the target untouched.
 * Credit goes back to the client as each chunk reaches the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent/service.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"

/* ---- read --------------------------------------------------------------------- */

struct reader_s {
	int fd;
};

static void
reader_pump (struct ab_channel_s *ch)
{
	static uint8_t buf[AB_PROTO_DATA_CHUNK];
	struct reader_s *r = ch->ctx;
	ab_error_t err = AB_ERROR_INIT;

	while (ab_channel_writable (ch)) {
		size_t want = ch->credit < sizeof buf ? (size_t)ch->credit : sizeof buf;
		ssize_t n = read (r->fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ab_error (&err, errno, AB_E_SYSTEM, "read");
			ab_channel_finish (ch, &err);
			return;
		}
		if (n == 0) {
			ab_channel_send_eof (ch);
			ab_channel_finish (ch, NULL);
			return;
		}
		ab_channel_send_data (ch, AB_MSG_DATA, buf, (size_t)n);
	}
}

static void
reader_destroy (struct ab_channel_s *ch)
{
	struct reader_s *r = ch->ctx;
	close (r->fd);
	free (r);
}

static const struct ab_channel_ops_s reader_ops = {
	.pump = reader_pump,
	.destroy = reader_destroy,
};

/* Looked at through O_PATH first: only a regular file is ever opened for
 * reading, so a FIFO, a terminal or any other device the sandbox's view
 * holds (/dev/ptmx makes a new pty on open) is refused without the side
 * effects of open(2).  The second lookup resolves the same safe way and
 * is checked again: a swap in between still yields a regular file. */
static int
open_for_read (const struct ab_msg_s *m, struct stat *st, ab_error_t *err)
{
	struct ab_fspath_s p;
	int fd = -1, probe;

	if (ab_fspath_parse (m->path, AB_FS_READ, &p, err) < 0)
		return -1;
	ab_fs_as_user (true);
	probe = ab_fs_open (&p, p.rel, O_PATH, m->path, err);
	if (probe >= 0 && fstat (probe, st) == 0 && S_ISREG (st->st_mode))
		fd = ab_fs_open (&p, p.rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, m->path, err);
	else if (probe >= 0)
		ab_error (err, 0, S_ISDIR (st->st_mode) ? AB_E_CONFLICT : AB_E_INVALID,
		          "%s is not a regular file", m->path);
	ab_fs_as_user (false);
	ab_fspath_free (&p);
	if (probe >= 0)
		close (probe);
	if (fd < 0)
		return -1;
	if (fstat (fd, st) < 0 || !S_ISREG (st->st_mode)) {
		close (fd);
		return ab_error (err, 0, S_ISDIR (st->st_mode) ? AB_E_CONFLICT : AB_E_INVALID,
		                 "%s is not a regular file", m->path);
	}
	ab_set_nonblock (fd, 0);
	return fd;
}

void
ab_req_file_read (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	struct reader_s *r;
	struct ab_channel_s *ch;
	struct ab_msg_s ok;
	struct stat st;
	int fd;

	if (ab_session_channel (s, m->channel)) {
		ab_error (&err, 0, AB_E_CONFLICT, "channel %u is in use", m->channel);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	if ((fd = open_for_read (m, &st, &err)) < 0) {
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	r = xcalloc (1, sizeof *r);
	r->fd = fd;
	ch = ab_channel_open (s, m->channel, &reader_ops, r, &err);
	if (!ch) {
		close (fd);
		free (r);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	ab_msg_init (&ok, AB_MSG_OK);
	ab_stat_to_msg (&st, &ok);
	ab_session_ok (s, m->req_id, &ok);
	reader_pump (ch);
}

/* ---- write -------------------------------------------------------------------- */

struct writer_s {
	struct ab_session_s *s;
	uint32_t req_id;
	int dir; /* parent directory (O_PATH) */
	int fd;  /* the temporary file */
	char tmp[64];
	char *base;
	char *shown;
	mode_t mode;
	uint64_t size;
	char **xattrs; /* KEY=VALUE: set as user.e2b.KEY before the rename */
	bool done;     /* answered */
};

#define WRITE_MAX_XATTRS 64

/* The metadata (envd's X-Metadata-*) on the temporary file, so that the
 * file appears with it or not at all. */
static int
set_xattrs (struct writer_s *w, ab_error_t *err)
{
	int r = 0;

	ab_fs_as_user (true);
	for (char **x = w->xattrs; r == 0 && x && *x; x++) {
		const char *eq = strchr (*x, '=');
		char name[256];
		if (!eq || eq == *x || (size_t)(eq - *x) > sizeof name - 10) {
			r = ab_error (err, 0, AB_E_INVALID, "write %s: bad metadata '%s'", w->shown,
			              *x);
			break;
		}
		snprintf (name, sizeof name, "user.e2b.%.*s", (int)(eq - *x), *x);
		if (fsetxattr (w->fd, name, eq + 1, strlen (eq + 1), 0) < 0)
			r = errno == ENOTSUP
			            ? ab_error (err, errno, AB_E_INVALID,
			                        "write %s: its file system keeps no metadata "
			                        "(user xattrs)",
			                        w->shown)
			            : ab_fs_error (err, errno, "set metadata of", w->shown);
	}
	ab_fs_as_user (false);
	return r;
}

static void
writer_fail (struct ab_channel_s *ch, const ab_error_t *e)
{
	struct writer_s *w = ch->ctx;

	if (!w->done)
		ab_session_fail (w->s, w->req_id, e);
	w->done = true;
	ab_channel_finish (ch, NULL);
}

static void
writer_data (struct ab_channel_s *ch, const uint8_t *p, size_t n)
{
	struct writer_s *w = ch->ctx;
	ab_error_t err = AB_ERROR_INIT;

	if (ab_write_all (w->fd, p, n) < 0) {
		ab_fs_error (&err, errno, "write", w->shown);
		writer_fail (ch, &err);
		return;
	}
	w->size += n;
	ab_channel_grant (ch, n);
}

static void
writer_eof (struct ab_channel_s *ch)
{
	struct writer_s *w = ch->ctx;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s ok;
	int r;

	if (set_xattrs (w, &err) < 0) {
		writer_fail (ch, &err);
		return;
	}
	r = fchmod (w->fd, w->mode);
	if (close (w->fd) < 0 && r == 0)
		r = -1; /* a delayed write error (NFS, quota) shows here */
	w->fd = -1;
	if (r == 0) {
		ab_fs_as_user (true);
		r = renameat (w->dir, w->tmp, w->dir, w->base);
		ab_fs_as_user (false);
	}
	if (r < 0) {
		ab_fs_error (&err, errno, "write", w->shown);
		writer_fail (ch, &err);
		return;
	}
	w->tmp[0] = '\0'; /* renamed: nothing to clean up */
	ab_msg_init (&ok, AB_MSG_OK);
	ab_msg_set (&ok, size, AB_TAG_SIZE, w->size);
	ab_session_ok (w->s, w->req_id, &ok);
	w->done = true;
	ab_channel_finish (ch, NULL);
}

static void
writer_destroy (struct ab_channel_s *ch)
{
	struct writer_s *w = ch->ctx;
	ab_error_t err = AB_ERROR_INIT;

	if (!w->done) {
		ab_error (&err, 0, AB_E_INVALID, "write %s: cancelled by the client", w->shown);
		ab_session_fail (w->s, w->req_id, &err);
	}
	if (w->fd >= 0)
		close (w->fd);
	if (w->tmp[0])
		unlinkat (w->dir, w->tmp, 0);
	close (w->dir);
	free (w->base);
	free (w->shown);
	ab_cleanup_strvp (&w->xattrs);
	free (w);
}

static const struct ab_channel_ops_s writer_ops = {
	.data = writer_data,
	.eof = writer_eof,
	.destroy = writer_destroy,
};

static int
create_temp (struct writer_s *w, ab_error_t *err)
{
	uint64_t rnd = 0;

	for (int tries = 0; tries < 16; tries++) {
		if (getrandom (&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
			rnd = (uint64_t)ab_mono_ms () * 2654435761U + (uint64_t)tries;
		snprintf (w->tmp, sizeof w->tmp, ".agentbox-upload-%016llx",
		          (unsigned long long)rnd);
		w->fd = openat (w->dir, w->tmp,
		                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (w->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	w->tmp[0] = '\0';
	return ab_fs_error (err, errno, "write", w->shown);
}

/* Parent fd and a temporary file in it, as the sandbox user. */
static int
prepare_write (const struct ab_msg_s *m, struct writer_s *w, ab_error_t *err)
{
	struct ab_fspath_s p;
	struct stat st;
	int r = -1;

	if (ab_fspath_parse (m->path, AB_FS_WRITE, &p, err) < 0)
		return -1;
	ab_fs_as_user (true);
	if (!p.base)
		ab_error (err, 0, AB_E_CONFLICT, "%s is a file root (a directory)", m->path);
	else if ((w->dir = ab_fs_open_parent (&p, m->path, err)) < 0)
		;
	else if (fstatat (w->dir, p.base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR (st.st_mode))
		ab_error (err, 0, AB_E_CONFLICT, "%s is a directory", m->path);
	else
		r = create_temp (w, err);
	ab_fs_as_user (false);
	if (r == 0)
		w->base = xstrdup (p.base);
	ab_fspath_free (&p);
	return r;
}

void
ab_req_file_write (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct writer_s *w = xcalloc (1, sizeof *w);
	ab_error_t err = AB_ERROR_INIT;
	size_t n_xattrs;

	w->s = s;
	w->req_id = m->req_id;
	w->dir = w->fd = -1;
	w->shown = xstrdup (m->path);
	w->mode = ab_msg_has (m, AB_TAG_MODE) && m->mode ? m->mode : 0644;
	n_xattrs = m->n_xattrs;
	w->xattrs = m->xattrs;
	m->xattrs = NULL;
	m->n_xattrs = 0;
	if (ab_session_channel (s, m->channel))
		ab_error (&err, 0, AB_E_CONFLICT, "channel %u is in use", m->channel);
	else if (n_xattrs > WRITE_MAX_XATTRS)
		ab_error (&err, 0, AB_E_LIMIT, "more than %d metadata entries", WRITE_MAX_XATTRS);
	else if (prepare_write (m, w, &err) == 0
	         && ab_channel_open (s, m->channel, &writer_ops, w, &err))
		return; /* answered after EOF */
	ab_session_fail (s, m->req_id, &err);
	if (w->fd >= 0)
		close (w->fd);
	if (w->tmp[0])
		unlinkat (w->dir, w->tmp, 0);
	if (w->dir >= 0)
		close (w->dir);
	free (w->base);
	free (w->shown);
	ab_cleanup_strvp (&w->xattrs);
	free (w);
}
