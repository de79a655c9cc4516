/* The file service's directory watches (FILE_WATCH): inotify on one
 * directory, or on its whole tree when asked, reported as WATCH_EVENT
 * frames on the request's channel.  Names are relative to the watched
 * directory; a rename is RENAME under the old name and CREATE under the
 * new one (what envd's fsnotify reports), a directory renamed or created
 * inside a recursive watch is watched from then on and what it already
 * holds is reported as CREATE (a `mkdir -p a/b/c` is not half seen).
 *
 * Bounded three ways, each ending the channel with RESET AB_E_LIMIT and a
 * message that says which: directories per watch (WATCH_MAX_DIRS inotify
 * watches), depth below the watched directory (WATCH_MAX_DEPTH), and
 * events waiting for the host's credit (WATCH_MAX_QUEUE; a host that does
 * not read learns that events were lost instead of growing our memory).
 * A kernel queue overflow (IN_Q_OVERFLOW) ends it the same way, and the
 * watched directory going away ends it with AB_E_NOT_FOUND.
 *
 * Directories are opened by the confined lookups of fsroot.c (from the
 * sandbox's root, as a read) or beneath an already opened one without
 * following symlinks, as the sandbox user; inotify_add_watch(2) takes a
 * path only, so the watch is added on "." after fchdir to that fd (the
 * agent is single-threaded; its cwd is restored at once), which names the
 * opened inode whatever was swapped in meanwhile. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/service.h"
#include "base/xalloc.h"

#define WATCH_MAX_DIRS   4096
#define WATCH_MAX_DEPTH  16
#define WATCH_MAX_QUEUE  4096
#define WATCH_MAX_ACTIVE 64 /* watches in the whole sandbox */
#define WATCH_READ_BUF   (64U * 1024)

#define DIR_MASK                                                                                   \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO               \
	 | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

struct wdir_s {
	int wd;
	char *rel; /* below the watched directory; "" for itself */
	unsigned depth;
};

struct wevent_s {
	uint32_t event, ftype;
	char *name;
};

struct watcher_s {
	struct ab_channel_s *ch;
	struct ab_watch_s w; /* the inotify fd in the loop */
	struct ab_fspath_s root;
	char *shown; /* the path as the client gave it */
	bool recursive;
	struct wdir_s *dirs;
	size_t n_dirs;
	struct wevent_s *q; /* ring of WATCH_MAX_QUEUE */
	size_t q_head, q_len;
};

static size_t n_active;
static int saved_cwd = -1;

static void watcher_pump (struct ab_channel_s *ch);

/* ---- the directory table --------------------------------------------------- */

static struct wdir_s *
dir_by_wd (struct watcher_s *w, int wd)
{
	for (size_t i = 0; i < w->n_dirs; i++)
		if (w->dirs[i].wd == wd)
			return &w->dirs[i];
	return NULL;
}

static void
dir_forget (struct watcher_s *w, struct wdir_s *d)
{
	free (d->rel);
	*d = w->dirs[--w->n_dirs];
}

/* "" + name = name, rel + name = rel/name. */
static char *
rel_join (const char *rel, const char *name)
{
	return rel[0] ? xasprintf ("%s/%s", rel, name) : xstrdup (name);
}

/* Stop watching rel and everything below it (renamed or removed away). */
static void
forget_subtree (struct watcher_s *w, const char *rel)
{
	size_t n = strlen (rel);

	for (size_t i = 0; i < w->n_dirs;) {
		struct wdir_s *d = &w->dirs[i];
		if (strncmp (d->rel, rel, n) == 0 && (d->rel[n] == '\0' || d->rel[n] == '/')) {
			inotify_rm_watch (w->w.fd, d->wd);
			dir_forget (w, d);
		} else
			i++;
	}
}

/* inotify on the directory fd refers to (see the top of the file). */
static int
add_watch_fd (struct watcher_s *w, int fd, const char *rel, unsigned depth, ab_error_t *err)
{
	struct wdir_s *d;
	int wd, e;

	if (depth > WATCH_MAX_DEPTH)
		return ab_error (err, 0, AB_E_LIMIT, "watch %s: %s is deeper than %d levels",
		                 w->shown, rel, WATCH_MAX_DEPTH);
	if (saved_cwd < 0 && (saved_cwd = open (".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the agent's cwd");
	if (fchdir (fd) < 0)
		return ab_fs_error (err, errno, "watch", rel[0] ? rel : w->shown);
	wd = inotify_add_watch (w->w.fd, ".", DIR_MASK);
	e = errno;
	if (fchdir (saved_cwd) < 0)
		abort (); /* the agent's own cwd cannot go: it is held open */
	if (wd < 0 && e == ENOSPC)
		return ab_error (err, e, AB_E_LIMIT,
		                 "watch: the kernel's inotify watch limit is reached");
	if (wd < 0)
		return ab_fs_error (err, e, "watch", rel[0] ? rel : w->shown);
	if ((d = dir_by_wd (w, wd))) { /* the same directory under a new name */
		free (d->rel);
		d->rel = xstrdup (rel);
		d->depth = depth;
		return 0;
	}
	if (w->n_dirs >= WATCH_MAX_DIRS) {
		inotify_rm_watch (w->w.fd, wd);
		return ab_error (err, 0, AB_E_LIMIT, "watch %s: more than %d directories", w->shown,
		                 WATCH_MAX_DIRS);
	}
	if ((w->n_dirs & (w->n_dirs - 1)) == 0)
		w->dirs = xrealloc (w->dirs, (w->n_dirs ? w->n_dirs * 2 : 1) * sizeof *w->dirs);
	w->dirs[w->n_dirs++] = (struct wdir_s){ wd, xstrdup (rel), depth };
	return 0;
}

static void queue_event (struct watcher_s *w, uint32_t event, const char *name, bool is_dir);

/* Watch the directory fd (an O_RDONLY directory, taken) and, when
 * recursive, every directory below it; `report` queues a CREATE for each
 * entry found (a directory that just appeared). */
static int
add_tree (struct watcher_s *w, int fd, const char *rel, unsigned depth, bool report,
          ab_error_t *err)
{
	DIR *dir;
	struct dirent *de;
	int r;

	if ((r = add_watch_fd (w, fd, rel, depth, err)) < 0 || (!w->recursive && !report)) {
		close (fd);
		return r;
	}
	if (!(dir = fdopendir (fd))) {
		close (fd);
		return ab_fs_error (err, errno, "watch", rel);
	}
	while (r == 0 && (de = readdir (dir))) {
		char *sub;
		bool is_dir = de->d_type == DT_DIR;
		int cfd;

		if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
			continue;
		sub = rel_join (rel, de->d_name);
		if (report)
			queue_event (w, AB_WIRE_WATCH_CREATE, sub, is_dir);
		if (w->recursive && (is_dir || de->d_type == DT_UNKNOWN)) {
			cfd = openat (dirfd (dir), de->d_name,
			              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			/* Gone, or not a directory after all: nothing to watch. */
			if (cfd >= 0)
				r = add_tree (w, cfd, sub, depth + 1, report, err);
		}
		free (sub);
	}
	closedir (dir);
	return r;
}

/* A directory that appeared at rel (created or renamed in). */
static int
add_new_dir (struct watcher_s *w, const char *rel, unsigned depth, ab_error_t *err)
{
	char *full = xasprintf ("%s/%s", w->root.rel, rel);
	int fd, r = 0;

	ab_fs_as_user (true);
	fd = ab_fs_open (&w->root, full, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, full, err);
	if (fd >= 0)
		r = add_tree (w, fd, rel, depth, true, err);
	else if (err->kind == AB_E_NOT_FOUND || err->errnum == ENOTDIR || err->errnum == ELOOP) {
		ab_error_clear (err); /* gone again, or swapped for a non-directory */
	} else
		r = -1;
	ab_fs_as_user (false);
	free (full);
	return r;
}

/* ---- events ---------------------------------------------------------------- */

static void
finish (struct watcher_s *w, ab_error_kind kind, const char *msg)
{
	ab_error_t err = AB_ERROR_INIT;

	ab_error (&err, 0, kind, "%s", msg);
	ab_channel_finish (w->ch, &err);
}

static void
queue_event (struct watcher_s *w, uint32_t event, const char *name, bool is_dir)
{
	struct wevent_s *e;

	if (w->q_len == WATCH_MAX_QUEUE) {
		w->q_len++; /* overflowed: reported once the batch is read */
		return;
	}
	if (w->q_len > WATCH_MAX_QUEUE || strlen (name) > AB_MSG_MAX_PATH)
		return;
	e = &w->q[(w->q_head + w->q_len++) % WATCH_MAX_QUEUE];
	e->event = event;
	e->ftype = is_dir ? AB_WIRE_FT_DIR : AB_WIRE_FT_FILE;
	e->name = xstrdup (name);
}

/* False when the watch ended (w is gone). */
static bool
on_dir_event (struct watcher_s *w, struct wdir_s *d, const struct inotify_event *ev)
{
	ab_error_t err = AB_ERROR_INIT;
	bool is_dir = ev->mask & IN_ISDIR;
	char *name = rel_join (d->rel, ev->name);
	unsigned depth = d->depth + 1; /* d may move when the table changes */

	if (ev->mask & IN_CREATE)
		queue_event (w, AB_WIRE_WATCH_CREATE, name, is_dir);
	else if (ev->mask & IN_MOVED_TO)
		queue_event (w, AB_WIRE_WATCH_CREATE, name, is_dir);
	else if (ev->mask & IN_MOVED_FROM)
		queue_event (w, AB_WIRE_WATCH_RENAME, name, is_dir);
	else if (ev->mask & IN_DELETE)
		queue_event (w, AB_WIRE_WATCH_REMOVE, name, is_dir);
	else if (ev->mask & IN_MODIFY)
		queue_event (w, AB_WIRE_WATCH_WRITE, name, is_dir);
	else if (ev->mask & IN_ATTRIB)
		queue_event (w, AB_WIRE_WATCH_CHMOD, name, is_dir);
	if (is_dir && w->recursive && (ev->mask & (IN_MOVED_FROM | IN_DELETE)))
		forget_subtree (w, name);
	if (is_dir && w->recursive && (ev->mask & (IN_CREATE | IN_MOVED_TO))
	    && add_new_dir (w, name, depth, &err) < 0) {
		free (name);
		ab_channel_finish (w->ch, &err);
		return false;
	}
	free (name);
	return true;
}

/* One inotify record; false when the watch ended. */
static bool
on_event (struct watcher_s *w, const struct inotify_event *ev)
{
	struct wdir_s *d;

	if (ev->mask & IN_Q_OVERFLOW) {
		finish (w, AB_E_LIMIT,
		        "watch: the kernel's event queue overflowed; events were lost");
		return false;
	}
	if (!(d = dir_by_wd (w, ev->wd)))
		return true; /* a watch already forgotten */
	if (ev->mask & IN_IGNORED) {
		if (d->rel[0] == '\0') {
			finish (w, AB_E_NOT_FOUND, "watch: the watched directory is gone");
			return false;
		}
		dir_forget (w, d);
		return true;
	}
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
		if (d->rel[0] == '\0') {
			finish (w, AB_E_NOT_FOUND,
			        ev->mask & IN_MOVE_SELF
			                ? "watch: the watched directory was renamed"
			                : "watch: the watched directory was removed");
			return false;
		}
		return true; /* its parent reports it */
	}
	if (ev->len == 0)
		return true;
	return on_dir_event (w, d, ev);
}

static void
on_inotify (struct ab_watch_s *lw, uint32_t events)
{
	static char buf[WATCH_READ_BUF]
	        __attribute__ ((aligned (__alignof__(struct inotify_event))));
	struct watcher_s *w = lw->ctx;
	ssize_t n;

	while ((n = read (lw->fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (!on_event (w, ev))
				return; /* finished: w is gone */
			p += sizeof *ev + ev->len;
		}
		if (w->q_len > WATCH_MAX_QUEUE) {
			ab_error_t err = AB_ERROR_INIT;
			ab_error (
			        &err, 0, AB_E_LIMIT,
			        "watch: more than %d events wait for the client; events were lost",
			        WATCH_MAX_QUEUE);
			ab_channel_finish (w->ch, &err);
			return;
		}
	}
	watcher_pump (w->ch);
}

/* ---- the channel ----------------------------------------------------------- */

static void
watcher_pump (struct ab_channel_s *ch)
{
	struct watcher_s *w = ch->ctx;

	while (w->q_len > 0 && w->q_len <= WATCH_MAX_QUEUE && ab_channel_writable (ch)) {
		struct wevent_s *e = &w->q[w->q_head];
		struct ab_tlv_writer_s tw = { 0 };
		struct ab_msg_s m;

		ab_msg_init (&m, AB_MSG_WATCH_EVENT);
		ab_msg_set (&m, event, AB_TAG_EVENT, e->event);
		ab_msg_set (&m, ftype, AB_TAG_FTYPE, e->ftype);
		m.name = e->name;
		ab_msg_encode (&tw, &m);
		if (tw.len > ch->credit) {
			ab_tlv_writer_free (&tw);
			return; /* WINDOW brings more */
		}
		ab_session_send (ch->s, AB_MSG_WATCH_EVENT, ch->id, tw.buf, tw.len);
		ch->credit -= tw.len;
		ab_tlv_writer_free (&tw);
		free (e->name);
		w->q_head = (w->q_head + 1) % WATCH_MAX_QUEUE;
		w->q_len--;
	}
}

static void
watcher_free (struct watcher_s *w)
{
	size_t n = w->q_len > WATCH_MAX_QUEUE ? WATCH_MAX_QUEUE : w->q_len;

	for (size_t i = 0; i < n; i++)
		free (w->q[(w->q_head + i) % WATCH_MAX_QUEUE].name);
	for (size_t i = 0; i < w->n_dirs; i++)
		free (w->dirs[i].rel);
	if (w->w.fd >= 0) {
		ab_loop_del (&w->w);
		close (w->w.fd);
	}
	ab_fspath_free (&w->root);
	free (w->shown);
	free (w->dirs);
	free (w->q);
	ab_loop_defer_free (w); /* an event of this batch may still name w->w */
}

static void
watcher_destroy (struct ab_channel_s *ch)
{
	watcher_free (ch->ctx);
	n_active--;
}

static const struct ab_channel_ops_s watcher_ops = {
	.pump = watcher_pump,
	.destroy = watcher_destroy,
};

/* The inotify fd and the watches of the tree, before the channel exists. */
static int
watcher_setup (struct watcher_s *w, const struct ab_msg_s *m, ab_error_t *err)
{
	int fd, r = -1;

	if ((fd = inotify_init1 (IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return ab_error (err, errno, errno == EMFILE ? AB_E_LIMIT : AB_E_SYSTEM,
		                 "inotify_init1");
	w->w.fd = fd;
	if (ab_fspath_parse (m->path, AB_FS_READ, &w->root, err) < 0)
		return -1;
	ab_fs_as_user (true);
	fd = ab_fs_open (&w->root, w->root.rel, O_RDONLY | O_DIRECTORY, m->path, err);
	if (fd >= 0)
		r = add_tree (w, fd, "", 0, false, err);
	ab_fs_as_user (false);
	return r;
}

void
ab_req_file_watch (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	struct watcher_s *w = xcalloc (1, sizeof *w);
	int fd;

	w->w.fd = -1;
	w->recursive = m->recursive;
	w->shown = xstrdup (m->path);
	w->q = xcalloc (WATCH_MAX_QUEUE, sizeof *w->q);
	if (n_active >= WATCH_MAX_ACTIVE)
		ab_error (&err, 0, AB_E_LIMIT, "at most %d directory watches in a sandbox",
		          WATCH_MAX_ACTIVE);
	else if (ab_session_channel (s, m->channel))
		ab_error (&err, 0, AB_E_CONFLICT, "channel %u is in use", m->channel);
	else if (watcher_setup (w, m, &err) == 0
	         && (w->ch = ab_channel_open (s, m->channel, &watcher_ops, w, &err))) {
		/* Registered only now: the loop's watch must not outlive w. */
		fd = w->w.fd;
		w->w.fd = -1;
		if (ab_loop_add (&w->w, fd, EPOLLIN, on_inotify, w) == 0) {
			n_active++;
			ab_session_ok (s, m->req_id, NULL);
			return;
		}
		w->w.fd = fd; /* closed by watcher_destroy */
		ab_error (&err, errno, AB_E_SYSTEM, "watch: epoll");
		ab_session_fail (s, m->req_id, &err);
		n_active++; /* watcher_destroy takes it back */
		ab_channel_finish (w->ch, NULL);
		return;
	}
	ab_session_fail (s, m->req_id, &err);
	watcher_free (w);
}
