#include "base/sys.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

int
ab_sys_openat2 (int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct ab_open_how_s how = { .flags = flags, .mode = 0, .resolve = resolve };
	return (int)syscall (__NR_openat2, dirfd, path, &how, sizeof how);
}

int
ab_sys_open_tree (int dirfd, const char *path, unsigned int flags)
{
	return (int)syscall (__NR_open_tree, dirfd, path, flags);
}

int
ab_sys_move_mount (int from_dirfd, const char *from_path, int to_dirfd, const char *to_path,
                   unsigned int flags)
{
	return (int)syscall (__NR_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags);
}

int
ab_sys_mount_setattr (int dirfd, const char *path, unsigned int flags, struct ab_mount_attr_s *attr)
{
	return (int)syscall (__NR_mount_setattr, dirfd, path, flags, attr, sizeof *attr);
}

int
ab_sys_fsopen (const char *fsname, unsigned int flags)
{
	return (int)syscall (__NR_fsopen, fsname, flags);
}

int
ab_sys_fsconfig (int fd, unsigned int cmd, const char *key, const void *value, int aux)
{
	return (int)syscall (__NR_fsconfig, fd, cmd, key, value, aux);
}

int
ab_sys_fsmount (int fd, unsigned int flags, unsigned int attr_flags)
{
	return (int)syscall (__NR_fsmount, fd, flags, attr_flags);
}

int
ab_sys_pivot_root (const char *new_root, const char *put_old)
{
	return (int)syscall (__NR_pivot_root, new_root, put_old);
}

int
ab_sys_close_range (unsigned int first, unsigned int last, unsigned int flags)
{
	return (int)syscall (__NR_close_range, first, last, flags);
}

int
ab_sys_pidfd_open (pid_t pid, unsigned int flags)
{
	return (int)syscall (__NR_pidfd_open, pid, flags);
}

int
ab_sys_landlock_create_ruleset (const struct ab_landlock_ruleset_attr_s *attr, size_t size,
                                uint32_t flags)
{
	return (int)syscall (__NR_landlock_create_ruleset, attr, size, flags);
}

int
ab_sys_landlock_add_rule (int ruleset_fd, int rule_type, const void *rule_attr, uint32_t flags)
{
	return (int)syscall (__NR_landlock_add_rule, ruleset_fd, rule_type, rule_attr, flags);
}

int
ab_sys_landlock_restrict_self (int ruleset_fd, uint32_t flags)
{
	return (int)syscall (__NR_landlock_restrict_self, ruleset_fd, flags);
}

pid_t
ab_sys_clone_fork (unsigned long flags)
{
	return (pid_t)syscall (__NR_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
}

/* struct clone_args of <linux/sched.h> up to `cgroup` (CLONE_ARGS_SIZE_VER2);
 * that header clashes with glibc's <sched.h>. */
struct ab_clone_args_s {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};
#define AB_CLONE_INTO_CGROUP 0x200000000ULL

pid_t
ab_sys_clone_into_cgroup (unsigned long flags, int cgroup_fd)
{
	struct ab_clone_args_s args = {
		.flags = flags | AB_CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)cgroup_fd,
	};
	return (pid_t)syscall (__NR_clone3, &args, sizeof args);
}

int
ab_termination_signalfd (void)
{
	sigset_t set;

	sigemptyset (&set);
	sigaddset (&set, SIGTERM);
	sigaddset (&set, SIGINT);
	sigaddset (&set, SIGHUP);
	sigprocmask (SIG_BLOCK, &set, NULL);
	return signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

uint64_t
ab_mono_ns (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

uint64_t
ab_mono_us (void)
{
	return ab_mono_ns () / 1000;
}

uint64_t
ab_mono_ms (void)
{
	return ab_mono_ns () / 1000000;
}

const char *
ab_proc_stat_fields (pid_t pid, char *buf, size_t len)
{
	char path[64];
	cleanup_close int fd = -1;
	ssize_t n;
	char *p;

	snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open (path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read (fd, buf, len - 1)) <= 0)
		return NULL;
	buf[n] = '\0';
	/* Fields start after the last ')'. */
	p = strrchr (buf, ')');
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

uint64_t
ab_proc_start_time (pid_t pid)
{
	char buf[1024];
	const char *f = ab_proc_stat_fields (pid, buf, sizeof buf);
	unsigned long long st = 0;

	if (!f
	    || sscanf (f,
	               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
	               "%*d %llu",
	               &st)
	               != 1)
		return 0;
	return st;
}
