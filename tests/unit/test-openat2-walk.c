/* Unit tests for base/openat2-walk: the user-space openat2 used where the
 * kernel has none (gVisor).  Differential: every (path, flags, resolve)
 * of the tables below is opened by the kernel's openat2 on this host and
 * by the walk, from the same directory of a tree with every kind of
 * symlink; both must fail with the same errno or open the same inode the
 * same way.  A few results are also pinned explicitly, so a kernel that
 * changed its mind would show up here too. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/compat.h"
#include "base/openat2-walk.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static char top[] = "/tmp/ab-walk-XXXXXX";
static int root_fd = -1;

/* The tree, beneath top/root (top/outside is what must never be reached). */
static const struct {
	const char *path;
	const char *link; /* NULL = directory (ends in /) or file */
} tree[] = {
	{ "outside/", NULL },
	{ "outside/x", NULL },
	{ "root/", NULL },
	{ "root/d/", NULL },
	{ "root/d/sub/", NULL },
	{ "root/d/f", NULL },
	{ "root/f", NULL },
	{ "root/l_d", "d" },
	{ "root/l_f", "d/f" },
	{ "root/l_up", ".." },
	{ "root/l_up2", "d/../.." },
	{ "root/l_abs", "/etc" },
	{ "root/l_loop", "l_loop" },
	{ "root/l_dangling", "nope" },
	{ "root/l_dslash", "d/" },
	{ "root/l_chain", "l_d/l_back" },
	{ "root/d/l_back", "../f" },
	{ "root/d/l_self", "." },
	{ "root/d/l_out", "../../outside/x" },
	{ "root/d/l_dd", "sub/../.." },
};

static const char *const paths[] = {
	"",           ".",
	"/",          "f",
	"d",          "d/",
	"f/",         "d/f",
	"d/../f",     "../x",
	"d/../../x",  "d/sub/../../f",
	"./d/./f",    "d//f",
	"d/f/..",     "d/f/.",
	"l_d",        "l_d/",
	"l_d/f",      "l_f",
	"l_f/",       "l_up",
	"l_up/x",     "l_up2",
	"l_abs",      "l_abs/hostname",
	"l_loop",     "l_dangling",
	"l_dslash",   "l_dslash/f",
	"l_chain",    "d/l_back",
	"d/l_self/f", "d/l_out",
	"d/l_dd",     "d/l_dd/f",
	"nope",       "nope/x",
	"f/x",        "d/sub/..",
	"..",         "d/..",
	"/etc",       "d/sub/",
	"l_d/..",     "l_d/../f",
};

static const int flag_sets[] = {
	O_RDONLY,
	O_PATH,
	O_PATH | O_NOFOLLOW,
	O_RDONLY | O_NOFOLLOW,
	O_RDONLY | O_DIRECTORY,
	O_PATH | O_DIRECTORY,
};

static const uint64_t resolve_sets[] = {
	RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, /* the agent's file service */
	RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	RESOLVE_BENEATH,
	RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, /* the agent's file roots */
	RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,     /* the agent's reads of the sandbox */
	RESOLVE_IN_ROOT,
};

static int
kernel_openat2 (int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct ab_open_how_s how = { .flags = flags, .mode = mode, .resolve = resolve };
	return (int)syscall (__NR_openat2, dirfd, path, &how, sizeof how);
}

static void
make_tree (void)
{
	assert_non_null (mkdtemp (top));
	for (size_t i = 0; i < N (tree); i++) {
		char p[256];
		size_t len = strlen (tree[i].path);
		snprintf (p, sizeof p, "%s/%s", top, tree[i].path);
		if (tree[i].link)
			assert_int_equal (symlink (tree[i].link, p), 0);
		else if (tree[i].path[len - 1] == '/')
			assert_int_equal (mkdir (p, 0755), 0);
		else
			assert_int_equal (close (open (p, O_CREAT | O_WRONLY | O_EXCL, 0644)), 0);
	}
	char r[256];
	snprintf (r, sizeof r, "%s/root", top);
	root_fd = open (r, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true (root_fd >= 0);
}

struct outcome_s {
	int fd, errnum;
	struct stat st;
	int fl;
};

static struct outcome_s
outcome (int fd)
{
	struct outcome_s o = { .fd = fd, .errnum = fd < 0 ? errno : 0 };
	if (fd >= 0) {
		assert_int_equal (fstat (fd, &o.st), 0);
		/* Not O_NOFOLLOW: the walk opens every final name with it (a
		 * symlink swapped in after the check is refused), and it shows
		 * in F_GETFL though it means nothing once the file is open. */
		o.fl = fcntl (fd, F_GETFL) & (O_ACCMODE | O_PATH | O_DIRECTORY | O_APPEND);
		close (fd);
	}
	return o;
}

static void
compare (const char *path, int flags, uint64_t resolve, struct outcome_s k, struct outcome_s w)
{
	if (k.fd < 0 || w.fd < 0) {
		if (k.fd >= 0 || w.fd >= 0 || k.errnum != w.errnum)
			fail_msg ("'%s' flags %#o resolve %#llx: kernel %s, walk %s", path, flags,
			          (unsigned long long)resolve,
			          k.fd < 0 ? strerror (k.errnum) : "opened",
			          w.fd < 0 ? strerror (w.errnum) : "opened");
		return;
	}
	if (k.st.st_dev != w.st.st_dev || k.st.st_ino != w.st.st_ino || k.fl != w.fl)
		fail_msg ("'%s' flags %#o resolve %#llx: kernel and walk opened different files "
		          "(ino %llu/%llu, fl %#o/%#o)",
		          path, flags, (unsigned long long)resolve, (unsigned long long)k.st.st_ino,
		          (unsigned long long)w.st.st_ino, k.fl, w.fl);
}

static void
test_same_as_kernel (void **state)
{
	(void)state;
	size_t n = 0;
	for (size_t p = 0; p < N (paths); p++)
		for (size_t f = 0; f < N (flag_sets); f++)
			for (size_t r = 0; r < N (resolve_sets); r++) {
				uint64_t fl = (uint64_t)(flag_sets[f] | O_CLOEXEC);
				struct outcome_s k = outcome (
				        kernel_openat2 (root_fd, paths[p], fl, 0, resolve_sets[r]));
				struct outcome_s w = outcome (ab_openat2_walk (
				        root_fd, paths[p], fl, 0, resolve_sets[r]));
				compare (paths[p], flag_sets[f], resolve_sets[r], k, w);
				n++;
			}
	assert_true (n > 1000);
}

/* Creation: each case on a fresh name, kernel first, then the walk. */
static const struct {
	const char *path;
	int flags;
	const char *created; /* what appears beneath root, removed after each run */
} creates[] = {
	{ "newfile", O_CREAT | O_WRONLY, "newfile" },
	{ "d/newfile", O_CREAT | O_WRONLY, "d/newfile" },
	{ "l_dangling", O_CREAT | O_WRONLY, "nope" },        /* follows the link */
	{ "l_dangling", O_CREAT | O_EXCL | O_WRONLY, NULL }, /* EEXIST: never follows */
	{ "l_d/newfile", O_CREAT | O_WRONLY, "d/newfile" },
	{ "newdir/", O_CREAT | O_WRONLY, NULL },          /* EISDIR */
	{ "f", O_CREAT | O_EXCL | O_WRONLY, NULL },       /* EEXIST */
	{ "d", O_CREAT | O_WRONLY, NULL },                /* EISDIR */
	{ "../newfile", O_CREAT | O_WRONLY, NULL },       /* EXDEV */
	{ "l_up/newfile", O_CREAT | O_WRONLY, NULL },     /* EXDEV */
	{ "l_f", O_CREAT | O_WRONLY | O_NOFOLLOW, NULL }, /* ELOOP */
};

static void
test_create_same_as_kernel (void **state)
{
	(void)state;
	const uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	for (size_t i = 0; i < N (creates); i++) {
		uint64_t fl = (uint64_t)(creates[i].flags | O_CLOEXEC);
		struct outcome_s k, w;
		k = outcome (kernel_openat2 (root_fd, creates[i].path, fl, 0600, resolve));
		if (creates[i].created)
			assert_int_equal (unlinkat (root_fd, creates[i].created, 0), 0);
		w = outcome (ab_openat2_walk (root_fd, creates[i].path, fl, 0600, resolve));
		if (creates[i].created)
			assert_int_equal (unlinkat (root_fd, creates[i].created, 0), 0);
		/* Not the same inode (recreated): compare the outcome only. */
		if (k.fd >= 0 && w.fd >= 0) {
			assert_int_equal (k.st.st_mode, w.st.st_mode);
			continue;
		}
		compare (creates[i].path, creates[i].flags, resolve, k, w);
	}
}

/* The answers the agent relies on, independent of the kernel. */
static const struct {
	const char *path;
	uint64_t resolve;
	int errnum; /* 0 = opens */
} pinned[] = {
	{ "d/f", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, 0 },
	{ "l_chain", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, 0 },
	{ "../x", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, EXDEV },
	{ "l_up/x", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, EXDEV },
	{ "d/l_out", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, EXDEV },
	{ "l_abs", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, EXDEV },
	{ "/etc", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, EXDEV },
	{ "l_loop", RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, ELOOP },
	{ "l_f", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, ELOOP },
	{ "l_d/f", RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, ELOOP },
	/* In the root: `..` stops at it, absolute names start from it. */
	{ "../f", RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, 0 },
	{ "l_up/l_up/f", RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, 0 },
	{ "/d/f", RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, 0 },
	{ "d/l_out", RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, ENOENT },
	{ "l_abs", RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, ENOENT },
};

static void
test_pinned (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (pinned); i++) {
		int fd = ab_openat2_walk (root_fd, pinned[i].path, O_RDONLY | O_CLOEXEC, 0,
		                          pinned[i].resolve);
		if (pinned[i].errnum == 0) {
			if (fd < 0)
				fail_msg ("'%s': %s", pinned[i].path, strerror (errno));
			close (fd);
		} else if (fd >= 0 || errno != pinned[i].errnum) {
			fail_msg ("'%s': %s, want %s", pinned[i].path,
			          fd >= 0 ? "opened" : strerror (errno),
			          strerror (pinned[i].errnum));
		}
	}
}

/* Magic links: /proc/self/fd/N and exe are refused, procfs's plain links
 * (self) are followed, as the kernel does. */
static void
test_magic_links (void **state)
{
	(void)state;
	const uint64_t resolves[] = { RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		                      RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, RESOLVE_IN_ROOT };
	const char *const cases[] = { "self/fd/0", "self/exe", "self/cwd", "self/status",
		                      "self/root" };
	int proc = open ("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);

	assert_true (proc >= 0);
	for (size_t r = 0; r < N (resolves); r++)
		for (size_t i = 0; i < N (cases); i++) {
			struct outcome_s k = outcome (kernel_openat2 (
			        proc, cases[i], O_PATH | O_CLOEXEC, 0, resolves[r]));
			struct outcome_s w = outcome (ab_openat2_walk (
			        proc, cases[i], O_PATH | O_CLOEXEC, 0, resolves[r]));
			compare (cases[i], O_PATH, resolves[r], k, w);
		}
	close (proc);
}

static void
test_unsupported_resolve (void **state)
{
	(void)state;
	errno = 0;
	assert_int_equal (ab_openat2_walk (root_fd, "f", O_RDONLY, 0, RESOLVE_NO_XDEV), -1);
	assert_int_equal (errno, ENOSYS);
}

static int
cleanup (void **state)
{
	(void)state;
	char cmd[64];
	if (root_fd >= 0)
		close (root_fd);
	snprintf (cmd, sizeof cmd, "rm -rf -- '%s'", top);
	return system (cmd) == 0 ? 0 : -1;
}

static int
setup (void **state)
{
	(void)state;
	make_tree ();
	return 0;
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_same_as_kernel),
		cmocka_unit_test (test_create_same_as_kernel),
		cmocka_unit_test (test_pinned),
		cmocka_unit_test (test_magic_links),
		cmocka_unit_test (test_unsupported_resolve),
	};
	return cmocka_run_group_tests (tests, setup, cleanup);
}
