/* openat2(2) emulated by a component-by-component walk (see the header).
 * Each name is opened with O_PATH | O_NOFOLLOW from a directory fd we hold,
 * so the kernel never follows a symlink or a `..` on our behalf: the walk
 * decides every step, exactly as fs/namei.c does for RESOLVE_BENEATH
 * (`..` at the start is EXDEV, an absolute symlink is EXDEV), for
 * RESOLVE_IN_ROOT (`..` at the start stays there, an absolute path or
 * symlink starts over at the start), a magic link is
 * ELOOP under RESOLVE_NO_MAGICLINKS, any symlink is ELOOP under
 * RESOLVE_NO_SYMLINKS, at most MAXSYMLINKS = 40 links per lookup). */
#include "base/openat2-walk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/compat.h"
#include "base/xalloc.h"

#define WALK_MAX_LINKS 40 /* MAXSYMLINKS, include/linux/namei.h */
#define WALK_CONTINUE  (-2)
#define SCOPED         (RESOLVE_BENEATH | RESOLVE_IN_ROOT) /* LOOKUP_IS_SCOPED */

struct walk_s {
	int start;      /* the caller's dirfd, or our fd of "/" after a jump */
	bool own_start; /* start is ours to close */
	int *dirs;      /* directories entered below start (owned), innermost last */
	size_t depth, cap;
	int links;
	uint64_t flags, mode, resolve;
	char *rest; /* what is left of the path (owned) */
};

static int
fail (int errnum)
{
	errno = errnum;
	return -1;
}

static int
cur (const struct walk_s *w)
{
	return w->depth ? w->dirs[w->depth - 1] : w->start;
}

static void
push (struct walk_s *w, int fd)
{
	if (w->depth == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		w->dirs = xrealloc (w->dirs, w->cap * sizeof *w->dirs);
	}
	w->dirs[w->depth++] = fd;
}

static void
drop_dirs (struct walk_s *w)
{
	while (w->depth)
		close (w->dirs[--w->depth]);
}

/* An absolute path or symlink without RESOLVE_BENEATH: start over at "/". */
static int
jump_root (struct walk_s *w)
{
	int fd = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	drop_dirs (w);
	if (w->own_start)
		close (w->start);
	w->start = fd;
	w->own_start = true;
	return 0;
}

/* Magic links live only in procfs (/proc/PID/fd/N, exe, cwd, root, ns/NAME,
 * map_files): their bodies are absolute paths or "type:[id]" names.  The
 * plain procfs links (self, thread-self, mounts, net) are relative. */
static bool
is_magic (int dirfd, const char *target)
{
	struct statfs sfs;

	if (fstatfs (dirfd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
		return false;
	return target[0] == '/' || strchr (target, ':') != NULL;
}

static ssize_t
read_link (int linkfd, int dirfd, const char *name, char *buf, size_t size)
{
	ssize_t n = readlinkat (linkfd, "", buf, size);

	if (n < 0 && errno == ENOENT) /* a kernel without readlink of an O_PATH fd */
		n = readlinkat (dirfd, name, buf, size);
	return n;
}

/* Replace the link named `name` (already cut from w->rest) by its body. */
static int
splice_link (struct walk_s *w, int linkfd, const char *name, bool last, bool slash)
{
	char target[PATH_MAX];
	ssize_t n;
	char *rest;

	if (w->resolve & RESOLVE_NO_SYMLINKS)
		return fail (ELOOP);
	if (++w->links > WALK_MAX_LINKS)
		return fail (ELOOP);
	n = read_link (linkfd, cur (w), name, target, sizeof target);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof target)
		return fail (ENAMETOOLONG);
	target[n] = '\0';
	if (n == 0)
		return fail (ENOENT);
	if (is_magic (cur (w), target))
		return fail ((w->resolve & RESOLVE_NO_MAGICLINKS) || !(w->resolve & SCOPED)
		                     ? ELOOP
		                     : EXDEV);
	if (target[0] == '/') {
		if (w->resolve & RESOLVE_BENEATH)
			return fail (EXDEV);
		if (w->resolve & RESOLVE_IN_ROOT)
			drop_dirs (w); /* the start is "/" */
		else if (jump_root (w) < 0)
			return -1;
	}
	if (last)
		rest = xasprintf ("%s%s", target, slash ? "/" : "");
	else
		rest = xasprintf ("%s/%s", target, w->rest);
	free (w->rest);
	w->rest = rest;
	return WALK_CONTINUE;
}

/* The last component, known not to be a symlink to follow. */
static int
open_final (struct walk_s *w, const char *name, bool slash)
{
	struct stat st;
	int fd = openat (cur (w), name, (int)w->flags | O_NOFOLLOW | O_CLOEXEC, (mode_t)w->mode);

	if (fd < 0 || fstat (fd, &st) < 0)
		return fd;
	/* O_PATH | O_NOFOLLOW would hand back a symlink swapped in since we
	 * looked: refuse it as the kernel refuses links it may not follow.
	 * "name/" must be a directory (checked before too: this is the race). */
	if ((w->flags & O_PATH) && !(w->flags & O_NOFOLLOW) && S_ISLNK (st.st_mode)) {
		close (fd);
		return fail (ELOOP);
	}
	if (slash && !S_ISDIR (st.st_mode)) {
		close (fd);
		return fail (ENOTDIR);
	}
	return fd;
}

static int
step_dotdot (struct walk_s *w, bool last)
{
	if (w->depth > 0) {
		close (w->dirs[--w->depth]);
	} else if (w->resolve & RESOLVE_BENEATH) {
		return fail (EXDEV);
	} else if (w->resolve & RESOLVE_IN_ROOT) {
		; /* `..` of the root is the root, as after chroot(2) */
	} else {
		int fd = openat (cur (w), "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		push (w, fd);
	}
	return last ? open_final (w, ".", false) : WALK_CONTINUE;
}

static bool
follows_last (const struct walk_s *w, bool slash)
{
	if (slash)
		return true; /* "link/" always resolves the link */
	if ((w->flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return false;
	return !(w->flags & O_NOFOLLOW);
}

static int
step (struct walk_s *w, const char *name, bool last, bool slash)
{
	struct stat st;
	int fd, r;

	if (strcmp (name, ".") == 0)
		return last ? open_final (w, ".", false) : WALK_CONTINUE;
	if (strcmp (name, "..") == 0)
		return step_dotdot (w, last);
	if (last && slash && (w->flags & O_CREAT))
		return fail (EISDIR); /* fs/namei.c open_last_lookups */
	if (last && !follows_last (w, slash))
		return open_final (w, name, false);
	fd = openat (cur (w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return last && errno == ENOENT && (w->flags & O_CREAT) ? open_final (w, name, false)
		                                                       : -1;
	if (fstat (fd, &st) < 0) {
		close (fd);
		return -1;
	}
	if (S_ISLNK (st.st_mode)) {
		r = splice_link (w, fd, name, last, slash);
		close (fd);
		return r;
	}
	if (last) {
		close (fd);
		if (slash && !S_ISDIR (st.st_mode))
			return fail (ENOTDIR); /* before opening: it may be a FIFO */
		return open_final (w, name, slash);
	}
	if (!S_ISDIR (st.st_mode)) {
		close (fd);
		return fail (ENOTDIR);
	}
	push (w, fd);
	return WALK_CONTINUE;
}

/* Cut the next component off w->rest into name; *last when nothing but
 * slashes follows it, *slash when at least one does. */
static int
next_component (struct walk_s *w, char name[NAME_MAX + 1], bool *last, bool *slash)
{
	const char *p = w->rest, *end, *after;

	while (*p == '/')
		p++;
	end = strchrnul (p, '/');
	after = end;
	while (*after == '/')
		after++;
	if ((size_t)(end - p) > NAME_MAX)
		return fail (ENAMETOOLONG);
	memcpy (name, p, (size_t)(end - p));
	name[end - p] = '\0';
	*last = *after == '\0';
	*slash = *last && after != end;
	memmove (w->rest, after, strlen (after) + 1);
	return 0;
}

static int
walk (struct walk_s *w)
{
	char name[NAME_MAX + 1];
	bool last, slash;
	int r;

	for (;;) {
		if (next_component (w, name, &last, &slash) < 0)
			return -1;
		if (name[0] == '\0') /* "/" or only slashes left: the directory itself */
			return open_final (w, ".", false);
		r = step (w, name, last, slash);
		if (r != WALK_CONTINUE)
			return r;
	}
}

int
ab_openat2_walk (int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct walk_s w = { .start = dirfd, .flags = flags, .mode = mode, .resolve = resolve };
	int fd, saved;

	if (resolve & ~(uint64_t)AB_WALK_RESOLVE_SUPPORTED)
		return fail (ENOSYS);
	if (path[0] == '\0')
		return fail (ENOENT);
	if (strlen (path) >= PATH_MAX)
		return fail (ENAMETOOLONG);
	if (path[0] == '/' && (resolve & RESOLVE_BENEATH))
		return fail (EXDEV);
	w.rest = xstrdup (path);
	/* Under RESOLVE_IN_ROOT an absolute path starts at dirfd, as the kernel's. */
	fd = path[0] == '/' && !(resolve & RESOLVE_IN_ROOT) && jump_root (&w) < 0 ? -1 : walk (&w);
	saved = errno;
	drop_dirs (&w);
	free (w.dirs);
	free (w.rest);
	if (w.own_start)
		close (w.start);
	errno = saved;
	return fd;
}

int
ab_openat2_or_walk (int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	static int kernel_has_openat2 = -1;
	struct ab_open_how_s how = { .flags = flags, .mode = mode, .resolve = resolve };
	int fd;

	if (kernel_has_openat2 != 0) {
		fd = (int)syscall (__NR_openat2, dirfd, path, &how, sizeof how);
		if (fd >= 0 || errno != ENOSYS) {
			kernel_has_openat2 = 1;
			return fd;
		}
		kernel_has_openat2 = 0;
	}
	return ab_openat2_walk (dirfd, path, flags | O_CLOEXEC, mode, resolve);
}
