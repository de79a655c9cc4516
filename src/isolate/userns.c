#include "isolate/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "base/fd.h"
#include "base/sys.h"

void
ab_idmap_for_caller (struct ab_idmap_s *map, uid_t inside_uid, gid_t inside_gid)
{
	map->privileged = geteuid () == 0;
	map->base = AB_USERNS_HOST_BASE;
	map->host_uid = geteuid ();
	map->host_gid = getegid ();
	map->inside_uid = inside_uid;
	map->inside_gid = inside_gid;
}

uid_t
ab_idmap_host_uid (const struct ab_idmap_s *map, uid_t inside)
{
	return map->privileged ? map->base + inside : map->host_uid;
}

gid_t
ab_idmap_host_gid (const struct ab_idmap_s *map, gid_t inside)
{
	return map->privileged ? map->base + inside : map->host_gid;
}

static int
write_proc_file (int procdir, const char *name, const char *text, ab_error_t *err)
{
	cleanup_close int fd = openat (procdir, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", name);
	if (ab_write_all (fd, text, strlen (text)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s '%s'", name, text);
	return 0;
}

static int
open_proc_pid (pid_t pid, ab_error_t *err)
{
	char path[64];
	struct statfs sfs;
	cleanup_close int fd = -1;

	snprintf (path, sizeof path, "/proc/%d", (int)pid);
	fd = open (path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	if (fstatfs (fd, &sfs) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "statfs %s", path);
	if (sfs.f_type != PROC_SUPER_MAGIC)
		return ab_error (err, 0, AB_E_DENIED,
		                 "%s is not on procfs: refusing to write id maps", path);
	return steal_fd (&fd);
}

int
ab_userns_write_maps (pid_t pid, const struct ab_idmap_s *map, ab_error_t *err)
{
	cleanup_close int dir = open_proc_pid (pid, err);
	char uid_line[64], gid_line[64];

	if (dir < 0)
		return -1;
	if (map->privileged) {
		snprintf (uid_line, sizeof uid_line, "0 %u %u\n", map->base, AB_USERNS_RANGE);
		snprintf (gid_line, sizeof gid_line, "0 %u %u\n", map->base, AB_USERNS_RANGE);
	} else {
		snprintf (uid_line, sizeof uid_line, "%u %u 1\n", map->inside_uid, map->host_uid);
		snprintf (gid_line, sizeof gid_line, "%u %u 1\n", map->inside_gid, map->host_gid);
		/* An unprivileged writer must deny setgroups before gid_map
		 * (CVE-2014-8989): a dropped group could otherwise be shed. */
		if (write_proc_file (dir, "setgroups", "deny", err) < 0)
			return -1;
	}
	if (write_proc_file (dir, "uid_map", uid_line, err) < 0)
		return -1;
	return write_proc_file (dir, "gid_map", gid_line, err);
}

static int
write_idmap (pid_t pid, uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid,
             ab_error_t *err)
{
	cleanup_close int dir = open_proc_pid (pid, err);
	char line[64];

	if (dir < 0)
		return -1;
	snprintf (line, sizeof line, "%u %u 1\n", disk_uid, host_uid);
	if (write_proc_file (dir, "uid_map", line, err) < 0)
		return -1;
	snprintf (line, sizeof line, "%u %u 1\n", disk_gid, host_gid);
	if (write_proc_file (dir, "gid_map", line, err) < 0)
		return -1;
	return openat (dir, "ns/user", O_RDONLY | O_CLOEXEC);
}

int
ab_userns_idmap_fd (uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid, pid_t *helper,
                    ab_error_t *err)
{
	pid_t pid;
	int hold[2];
	int fd;

	/* A throwaway process owns the namespace just long enough to write its
	 * maps and open it; the mount keeps the namespace alive afterwards. */
	if (pipe2 (hold, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	pid = ab_sys_clone_fork (CLONE_NEWUSER);
	if (pid < 0) {
		close (hold[0]);
		close (hold[1]);
		return ab_error (err, errno, AB_E_SYSTEM,
		                 "clone user namespace for idmapped mount");
	}
	if (pid == 0) {
		char c;
		close (hold[1]);
		while (read (hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit (0);
	}
	close (hold[0]);
	fd = write_idmap (pid, disk_uid, disk_gid, host_uid, host_gid, err);
	close (hold[1]); /* the helper exits on EOF */
	*helper = pid;
	if (fd < 0 && err->kind == AB_E_NONE)
		ab_error (err, errno, AB_E_SYSTEM, "open user namespace of idmap helper");
	return fd;
}
