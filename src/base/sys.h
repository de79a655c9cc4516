/* Thin wrappers over system calls that glibc 2.36 lacks or whose headers
 * clash (<sys/mount.h> vs <linux/mount.h>).  No policy here. */
#ifndef AB_BASE_SYS_H
#define AB_BASE_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/compat.h"

int ab_sys_openat2 (int dirfd, const char *path, uint64_t flags, uint64_t resolve);
int ab_sys_open_tree (int dirfd, const char *path, unsigned int flags);
int ab_sys_move_mount (int from_dirfd, const char *from_path, int to_dirfd, const char *to_path,
                       unsigned int flags);
int ab_sys_mount_setattr (int dirfd, const char *path, unsigned int flags,
                          struct ab_mount_attr_s *attr);
int ab_sys_fsopen (const char *fsname, unsigned int flags);
int ab_sys_fsconfig (int fd, unsigned int cmd, const char *key, const void *value, int aux);
int ab_sys_fsmount (int fd, unsigned int flags, unsigned int attr_flags);
int ab_sys_pivot_root (const char *new_root, const char *put_old);
int ab_sys_close_range (unsigned int first, unsigned int last, unsigned int flags);
int ab_sys_pidfd_open (pid_t pid, unsigned int flags);
int ab_sys_landlock_create_ruleset (const struct ab_landlock_ruleset_attr_s *attr, size_t size,
                                    uint32_t flags);
int ab_sys_landlock_add_rule (int ruleset_fd, int rule_type, const void *rule_attr, uint32_t flags);
int ab_sys_landlock_restrict_self (int ruleset_fd, uint32_t flags);
/* clone(2) without a new stack: returns twice like fork(2). */
pid_t ab_sys_clone_fork (unsigned long flags);
/* The same through clone3(2) with CLONE_INTO_CGROUP (Linux 5.7): the child
 * starts in the cgroup2 directory cgroup_fd, without the attach (and its
 * RCU grace period) a move after the fork costs.  -1 with errno ENOSYS,
 * E2BIG or EINVAL where the kernel has no such clone3. */
pid_t ab_sys_clone_into_cgroup (unsigned long flags, int cgroup_fd);

/* Field 22 of /proc/PID/stat (start time in clock ticks since boot): with
 * the pid, names one process for its whole life; 0 when it is gone. */
uint64_t ab_proc_start_time (pid_t pid);
/* /proc/PID/stat read into buf (len bytes at most); returns the text after
 * "PID (comm) ", which starts with the state letter, or NULL when the
 * process is gone or the line is malformed (comm may hold spaces and ')'). */
const char *ab_proc_stat_fields (pid_t pid, char *buf, size_t len);

/* The monotonic clock (CLOCK_MONOTONIC, in three units) for durations,
 * deadlines and timeouts: it never jumps when the wall clock is set.  The
 * wall clock, only for stamps that are shown or stored, is base/clock.h's
 * ab_unix_ms. */
uint64_t ab_mono_ns (void);
uint64_t ab_mono_us (void);
uint64_t ab_mono_ms (void);

/* Block SIGTERM, SIGINT and SIGHUP and return a non-blocking signalfd for
 * them: how a monitor or keeper hears "tear the sandbox down". */
int ab_termination_signalfd (void);

#endif
