/* Host uid ranges per sandbox, allocated with a lock file per range.
 *
 * Range N is taken by whoever holds flock(LOCK_EX) on <dir>/N: the
 * sandbox's monitor, from before its init gets its id maps until it exits.
 * The kernel drops a lock with the last fd of its open file, so a monitor
 * that dies, however it dies, frees its range, and nothing stale is left
 * to clean up: a daemon that restarts re-adopts its sandboxes, whose
 * monitors still hold their locks, and allocates around them.  The lock
 * files themselves stay (one per range ever used, empty) for the next
 * sandbox.  The directory is root's, mode 0700, opened without following
 * links: only root allocates ranges (an unprivileged caller maps its own
 * ids only and needs none).
 *
 * The search starts at a random range, so that two callers do not race
 * for the same first free one, and takes the first it can lock. */
#include "isolate/uid-range.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "isolate/userns.h"

#define DEFAULT_DIR "/run/agentbox/uid-ranges"

const char *
ab_uid_range_dir (void)
{
	const char *d = getenv ("AGENTBOX_UID_RANGE_DIR");
	return d && *d ? d : DEFAULT_DIR;
}

/* mkdir -p for the one or two levels the directory needs, mode 0700. */
static int
open_dir (const char *dir, ab_error_t *err)
{
	char parent[4096];
	char *slash;
	struct stat st;
	cleanup_close int fd = -1;

	snprintf (parent, sizeof parent, "%s", dir);
	if ((slash = strrchr (parent, '/')) && slash != parent) {
		*slash = '\0';
		if (mkdir (parent, 0755) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", parent);
	}
	if (mkdir (dir, 0700) < 0 && errno != EEXIST)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", dir);
	fd = open (dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", dir);
	/* Another user's directory would let it take or hold every range. */
	if (fstat (fd, &st) < 0 || st.st_uid != geteuid () || (st.st_mode & 0022))
		return ab_error (err, 0, AB_E_DENIED,
		                 "%s is not ours alone (owner %u, mode %o): no uid range from it",
		                 dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return steal_fd (&fd);
}

int
ab_uid_range_acquire (uid_t *base, ab_error_t *err)
{
	cleanup_close int dir = open_dir (ab_uid_range_dir (), err);
	unsigned start = 0;

	if (dir < 0)
		return -1;
	if (getrandom (&start, sizeof start, GRND_NONBLOCK) != (ssize_t)sizeof start)
		start = (unsigned)getpid ();
	for (unsigned i = 0; i < AB_UID_RANGE_SLOTS; i++) {
		unsigned slot = (start + i) % AB_UID_RANGE_SLOTS;
		char name[16];
		int fd;

		snprintf (name, sizeof name, "%u", slot);
		fd = openat (dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "open %s/%s", ab_uid_range_dir (),
			                 name);
		if (flock (fd, LOCK_EX | LOCK_NB) == 0) {
			*base = AB_USERNS_HOST_BASE + slot * AB_USERNS_RANGE;
			return fd;
		}
		close (fd);
		if (errno != EWOULDBLOCK)
			return ab_error (err, errno, AB_E_SYSTEM, "lock %s/%s", ab_uid_range_dir (),
			                 name);
	}
	return ab_error (err, 0, AB_E_LIMIT, "every one of the %u host uid ranges is in use",
	                 AB_UID_RANGE_SLOTS);
}
