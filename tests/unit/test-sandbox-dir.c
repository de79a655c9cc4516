/* Unit tests for the private directory shared by the gVisor and Docker
 * backends (backend/sandbox-dir.c) and the mask covers made in it
 * (backend/host-mask.c), in a temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/host-mask.h"
#include "backend/sandbox-dir.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static char tmp[64];

static int
make_tmp (void **state)
{
	(void)state;
	snprintf (tmp, sizeof tmp, "/tmp/ab-sandbox-dir.XXXXXX");
	return mkdtemp (tmp) ? 0 : -1;
}

static int
remove_tmp (void **state)
{
	cleanup_free char *cmd = xasprintf ("rm -rf -- '%s'", tmp);
	(void)state;
	return system (cmd) == 0 ? 0 : -1;
}

/* Not root: chown to anyone but ourselves fails, so own it. */
static uid_t
some_owner (void)
{
	return geteuid () == 0 ? 65534 : geteuid ();
}

static void
assert_entry (int dfd, const char *name, mode_t type, mode_t mode, uid_t owner)
{
	struct stat st;

	assert_int_equal (fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal (st.st_mode & S_IFMT, type);
	assert_int_equal (st.st_mode & 07777, mode);
	assert_int_equal (st.st_uid, owner);
	assert_int_equal (st.st_gid, owner);
}

static void
test_dir_create (void **state)
{
	cleanup_free char *dir = xasprintf ("%s/box.d", tmp);
	cleanup_close int fd = -1;
	ab_error_t err = AB_ERROR_INIT;
	struct stat st;
	mode_t old = umask (0);

	(void)state;
	fd = ab_sandbox_dir_create (dir, &err);
	umask (old);
	assert_true (fd >= 0);
	assert_int_equal (stat (dir, &st), 0);
	assert_int_equal (st.st_mode & 07777, 0700);
	/* Whatever is already there is not ours. */
	assert_true (ab_sandbox_dir_create (dir, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
}

/* The exact mode and owner asked for, whatever the umask. */
static void
test_dir_entry_modes (void **state)
{
	static const struct {
		const char *name;
		bool dir;
		mode_t mode, umask;
	} cases[] = {
		{ "door", true, 0711, 0077 }, { "door0700", true, 0700, 0022 },
		{ "file0", false, 0, 0 },     { "file644", false, 0644, 0777 },
		{ "dir0", true, 0, 0 },
	};
	cleanup_close int dfd = open (tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_true (dfd >= 0);
	for (size_t i = 0; i < N (cases); i++) {
		ab_error_t err = AB_ERROR_INIT;
		mode_t old = umask (cases[i].umask);
		int r = ab_sandbox_dir_entry (dfd, cases[i].name, cases[i].dir, cases[i].mode,
		                              some_owner (), &err);
		umask (old);
		if (r < 0)
			fail_msg ("%s: %s", cases[i].name, err.msg);
		assert_entry (dfd, cases[i].name, cases[i].dir ? S_IFDIR : S_IFREG, cases[i].mode,
		              some_owner ());
	}
}

/* Never replaces or follows what is there. */
static void
test_dir_entry_existing (void **state)
{
	cleanup_close int dfd = open (tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_free char *target = xasprintf ("%s/target", tmp);
	cleanup_free char *link = xasprintf ("%s/planted", tmp);
	ab_error_t err = AB_ERROR_INIT;
	struct stat st;

	(void)state;
	assert_int_equal (close (open (target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
	assert_int_equal (symlink (target, link), 0);
	assert_true (ab_sandbox_dir_entry (dfd, "planted", false, 0, some_owner (), &err) < 0);
	assert_true (ab_sandbox_dir_entry (dfd, "planted", true, 0, some_owner (), &err) < 0);
	assert_true (ab_sandbox_dir_entry (dfd, "target", false, 0, some_owner (), &err) < 0);
	assert_int_equal (stat (target, &st), 0);
	assert_int_equal (st.st_mode & 07777, 0644);
	assert_int_equal (st.st_uid, geteuid ());
}

static void
test_mask_covers (void **state)
{
	cleanup_free char *dir = xasprintf ("%s/covers", tmp);
	cleanup_close int dfd = -1;
	ab_error_t err = AB_ERROR_INIT;

	(void)state;
	assert_int_equal (mkdir (dir, 0700), 0);
	dfd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true (dfd >= 0);
	assert_int_equal (ab_host_mask_covers (dfd, "mask-file", "mask-dir", some_owner (), &err),
	                  0);
	assert_entry (dfd, "mask-file", S_IFREG, 0, some_owner ());
	assert_entry (dfd, "mask-dir", S_IFDIR, 0, some_owner ());
	/* Twice: refused (nothing is reused). */
	assert_true (ab_host_mask_covers (dfd, "mask-file", "mask-dir", some_owner (), &err) < 0);
}

static void
make_socket (const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true (fd >= 0);
	snprintf (sun.sun_path, sizeof sun.sun_path, "%s", path);
	assert_int_equal (bind (fd, (struct sockaddr *)&sun, sizeof sun), 0);
	close (fd);
}

/* Only a stale socket or symlink makes room for the service link. */
static void
test_link_claim (void **state)
{
	cleanup_free char *sock = xasprintf ("%s/stale.sock", tmp);
	cleanup_free char *link = xasprintf ("%s/old-link.sock", tmp);
	cleanup_free char *file = xasprintf ("%s/file.sock", tmp);
	cleanup_free char *dir = xasprintf ("%s/dir.sock", tmp);
	cleanup_free char *none = xasprintf ("%s/none.sock", tmp);
	ab_error_t err = AB_ERROR_INIT;
	struct stat st;

	(void)state;
	make_socket (sock);
	assert_int_equal (symlink ("elsewhere/agent.sock", link), 0);
	assert_int_equal (close (open (file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	assert_int_equal (mkdir (dir, 0700), 0);

	assert_int_equal (ab_service_link_claim (none, &err), 0);
	assert_int_equal (ab_service_link_claim (sock, &err), 0);
	assert_true (lstat (sock, &st) < 0 && errno == ENOENT);
	assert_int_equal (ab_service_link_claim (link, &err), 0);
	assert_true (lstat (link, &st) < 0 && errno == ENOENT);
	assert_true (ab_service_link_claim (file, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_int_equal (lstat (file, &st), 0);
	assert_true (ab_service_link_claim (dir, &err) < 0);
	assert_int_equal (lstat (dir, &st), 0);
}

/* Only our own link is removed. */
static void
test_link_remove (void **state)
{
	cleanup_free char *ours = xasprintf ("%s/ours.sock", tmp);
	cleanup_free char *theirs = xasprintf ("%s/theirs.sock", tmp);
	cleanup_free char *file = xasprintf ("%s/plain.sock", tmp);
	struct stat st;

	(void)state;
	assert_int_equal (symlink ("ours.sock.d/door/agent.sock", ours), 0);
	assert_int_equal (symlink ("other.d/door/agent.sock", theirs), 0);
	assert_int_equal (close (open (file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	ab_service_link_remove (ours, "ours.sock.d/door/agent.sock");
	ab_service_link_remove (theirs, "ours.sock.d/door/agent.sock");
	ab_service_link_remove (file, "ours.sock.d/door/agent.sock");
	assert_true (lstat (ours, &st) < 0 && errno == ENOENT);
	assert_int_equal (lstat (theirs, &st), 0);
	assert_int_equal (lstat (file, &st), 0);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_dir_create),         cmocka_unit_test (test_dir_entry_modes),
		cmocka_unit_test (test_dir_entry_existing), cmocka_unit_test (test_mask_covers),
		cmocka_unit_test (test_link_claim),         cmocka_unit_test (test_link_remove),
	};
	return cmocka_run_group_tests (tests, make_tmp, remove_tmp);
}
