/* Pausing a sandbox through its cgroup's freezer: v2 cgroup.freeze (on a
 * hybrid host the unified child group has it), else v1 freezer.state.
 * The group is found by name, "agentbox-<id>" below this process's own
 * cgroup, as ab_cgroup_create made it: the daemon that pauses and the
 * monitor that created the group sit in the same cgroup. */
#include "isolate/cgroup-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

/* Freezing waits for every task to stop; a task in an uninterruptible
 * sleep (disk I/O) holds it back, so the wait is bounded. */
#define FREEZE_TIMEOUT_NS UINT64_C (2000000000)
#define FREEZE_SPINS      200

static int
open_group (const struct ab_cg_layout_s *l, int hier, const char *id, struct ab_cg_dir_s *d)
{
	d->hier = hier;
	d->path = xasprintf ("%s/" AB_CG_PREFIX "%s", l->hier[hier].dir, id);
	d->fd = open (d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return d->fd;
}

/* v2: the kernel announces every change of cgroup.events to poll()
 * (POLLPRI; each read re-arms it), so the wait for "frozen 1" sleeps
 * instead of spinning: on a busy host a spin takes the CPU from the very
 * tasks that must reach their freezing point.  0 frozen, 1 timed out, -1
 * the file cannot be watched (the caller polls it the old way). */
static int
wait_frozen_v2 (const struct ab_cg_dir_s *d, const struct ab_cg_freezer_s *fz, uint64_t deadline_ns)
{
	cleanup_close int fd = openat (d->fd, fz->state_file, O_RDONLY | O_CLOEXEC);
	char buf[512];

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = pread (fd, buf, sizeof buf - 1, 0);
		struct pollfd p = { .fd = fd, .events = POLLPRI };
		uint64_t now = ab_mono_ns ();

		if (n < 0)
			return -1;
		buf[n] = '\0';
		if (fz->frozen (buf))
			return 0;
		if (now >= deadline_ns)
			return 1;
		if (poll (&p, 1, (int)((deadline_ns - now) / 1000000) + 1) < 0 && errno != EINTR)
			return -1;
	}
}

static int
set_frozen (const struct ab_cg_dir_s *d, const struct ab_cg_freezer_s *fz, bool freeze,
            ab_error_t *err)
{
	uint64_t deadline = ab_mono_ns () + FREEZE_TIMEOUT_NS;
	unsigned step = 0;
	char buf[512];

	if (ab_cg_write (d, fz->file, freeze ? fz->freeze : fz->thaw, false, err) < 0)
		return ab_error_code (err);
	if (!freeze)
		return 0;
	int w = fz == &ab_cg_v2_freezer ? wait_frozen_v2 (d, fz, deadline) : -1;
	if (w == 0)
		return 0;
	/* A running task freezes within microseconds: re-read at once a few
	 * times before sleeping (the backoff's first sleep would dominate). */
	for (unsigned spin = 0; w < 0; spin++) {
		if (ab_cg_read (d->fd, fz->state_file, buf, sizeof buf) >= 0 && fz->frozen (buf))
			return 0;
		if (spin >= FREEZE_SPINS && !ab_cg_backoff (&step, deadline))
			break;
	}
	ab_cg_write (d, fz->file, fz->thaw, false, &(ab_error_t)AB_ERROR_INIT);
	return ab_error (err, ETIMEDOUT, AB_E_SYSTEM,
	                 "%s: not every task froze within %d ms (one in uninterruptible sleep?)",
	                 d->path, (int)(FREEZE_TIMEOUT_NS / 1000000));
}

static void
close_group (struct ab_cg_dir_s *d)
{
	if (d->fd >= 0)
		close (d->fd);
	free (d->path);
	d->fd = -1;
	d->path = NULL;
}

int
ab_cgroup_freeze_id (const char *id, bool freeze, ab_error_t *err)
{
	const struct ab_cg_layout_s *l = ab_cg_layout_get (err);
	struct ab_cg_dir_s d = { .fd = -1 };
	int r;

	if (!l)
		return -1;
	if (l->v2 >= 0 && open_group (l, l->v2, id, &d) >= 0
	    && ab_cg_has_file (&d, "cgroup.freeze")) {
		r = set_frozen (&d, &ab_cg_v2_freezer, freeze, err);
		close_group (&d);
		return r;
	}
	close_group (&d);
	if (l->v1[AB_CG_FREEZER] >= 0 && open_group (l, l->v1[AB_CG_FREEZER], id, &d) >= 0) {
		r = set_frozen (&d, &ab_cg_v1_freezer, freeze, err);
		close_group (&d);
		return r;
	}
	close_group (&d);
	return ab_error (err, ENOENT, AB_E_NOT_FOUND,
	                 "sandbox %s has no cgroup with a freezer (v2 cgroup.freeze or v1 "
	                 "freezer.state) below %s",
	                 id, l->n_hier ? l->hier[0].dir : "our cgroup");
}

int
ab_cgroup_freeze_path (const char *dir, bool freeze, ab_error_t *err)
{
	struct ab_cg_dir_s d = { .hier = -1, .path = (char *)dir };
	const struct ab_cg_freezer_s *fz = NULL;
	int r;

	if ((d.fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return ab_error (err, errno, AB_E_NOT_FOUND, "open %s", dir);
	if (ab_cg_has_file (&d, "cgroup.freeze"))
		fz = &ab_cg_v2_freezer;
	else if (ab_cg_has_file (&d, "freezer.state"))
		fz = &ab_cg_v1_freezer;
	r = fz ? set_frozen (&d, fz, freeze, err)
	       : ab_error (err, ENOENT, AB_E_NOT_FOUND, "%s has no freezer", dir);
	close (d.fd);
	return r;
}
