/* The confinement layers the agent applies in a command's child process,
 * after fork and before execve.  Order matters (minijail_enter): lock the
 * securebits and empty the bounding set while still privileged, switch ids,
 * clear the remaining capability sets, then no_new_privs, then
 * Landlock (needs no_new_privs when unprivileged), seccomp last so the
 * filter does not have to allow the setup syscalls. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/sys.h"
#include "seccomp-default.h"

int
ab_confine_ids (uid_t uid, gid_t gid)
{
	gid_t groups[1] = { gid };

	/* With setgroups "deny" (an unprivileged user namespace) the supplementary
	 * groups are already just the mapped gid; EPERM is expected there. */
	if (setgroups (1, groups) < 0 && errno != EPERM)
		return -1;
	if (setresgid (gid, gid, gid) < 0)
		return -1;
	return setresuid (uid, uid, uid);
}

int
ab_confine_drop_bounding_set (void)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl (PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past CAP_LAST_CAP */
			return -1;
		}
	}
	return 0;
}

/* Lock the securebits and empty the bounding and ambient sets so that no
 * later execve (of uid 0 or a file with capabilities) can regain any.
 * Needs CAP_SETPCAP: runs before the switch to the command's ids. */
static int
lock_capabilities (bool bounding_empty)
{
	const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP
	                           | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED
	                           | SECBIT_NO_CAP_AMBIENT_RAISE
	                           | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

	/* gVisor (runsc 2022-12) implements neither securebits nor ambient
	 * capabilities: both prctls fail with EINVAL there (a Linux kernel
	 * only says EINVAL for unknown bits, and these are all known).  The
	 * empty bounding and inheritable sets alone then keep an execve, even
	 * of uid 0, from regaining any capability: P'(permitted) =
	 * (P(inheritable) & F(inheritable)) | (F(permitted) & P(bounding)) = 0
	 * (capabilities(7)). */
	if (prctl (PR_SET_SECUREBITS, bits, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	if (!bounding_empty && ab_confine_drop_bounding_set () < 0)
		return -1;
	if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	return 0;
}

int
ab_confine_lock_capabilities (void)
{
	return lock_capabilities (false);
}

int
ab_confine_lock_capabilities_inherited (void)
{
	return lock_capabilities (true);
}

/* Empty the effective, permitted and inheritable sets (after the id switch). */
int
ab_confine_clear_capabilities (void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	return (int)syscall (SYS_capset, &hdr, data);
}

int
ab_landlock_abi (void)
{
	int abi = ab_sys_landlock_create_ruleset (NULL, 0, AB_LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : abi;
}

static uint64_t
handled_write_access (int abi)
{
	uint64_t a = AB_LL_FS_WRITE_FILE | AB_LL_FS_REMOVE_DIR | AB_LL_FS_REMOVE_FILE
	             | AB_LL_FS_MAKE_CHAR | AB_LL_FS_MAKE_DIR | AB_LL_FS_MAKE_REG
	             | AB_LL_FS_MAKE_SOCK | AB_LL_FS_MAKE_FIFO | AB_LL_FS_MAKE_BLOCK
	             | AB_LL_FS_MAKE_SYM;
	if (abi >= 2)
		a |= AB_LL_FS_REFER;
	if (abi >= 3)
		a |= AB_LL_FS_TRUNCATE;
	if (abi >= 5)
		a |= AB_LL_FS_IOCTL_DEV;
	return a;
}

static int
allow_beneath (int ruleset, const char *path, uint64_t access)
{
	struct ab_landlock_path_beneath_s rule;
	struct stat st;
	int fd = open (path, O_PATH | O_CLOEXEC);
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat (fd, &st) == 0 && !S_ISDIR (st.st_mode))
		access &= AB_LL_FS_WRITE_FILE | AB_LL_FS_TRUNCATE | AB_LL_FS_IOCTL_DEV;
	rule.allowed_access = access;
	rule.parent_fd = fd;
	r = ab_sys_landlock_add_rule (ruleset, AB_LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
	close (fd);
	return r;
}

/* Landlock as a second wall behind the read-only mounts: writes only
 * beneath the granted paths; /dev for device writes and terminal ioctls.
 * Reads and execution are left to the mount layout (what is not mounted
 * cannot be read).  From ABI 6 on, the command is also scoped: it cannot
 * signal the agent or reach abstract sockets created outside its domain. */
int
ab_confine_landlock (char *const *rw_paths, size_t n, int *abi_out)
{
	int abi = ab_landlock_abi ();
	struct ab_landlock_ruleset_attr_s attr = { 0 };
	size_t attr_size = offsetof (struct ab_landlock_ruleset_attr_s, handled_access_net);
	uint64_t dev_access = AB_LL_FS_WRITE_FILE | AB_LL_FS_TRUNCATE | AB_LL_FS_IOCTL_DEV;
	int ruleset, r = 0;

	*abi_out = abi;
	if (abi <= 0)
		return 0; /* not available: reported to the user by `agentbox doctor` */
	attr.handled_access_fs = handled_write_access (abi);
	if (abi >= 6) {
		attr.scoped = AB_LL_SCOPE_SIGNAL | AB_LL_SCOPE_ABSTRACT_UNIX_SOCKET;
		attr_size = sizeof attr;
	}
	ruleset = ab_sys_landlock_create_ruleset (&attr, attr_size, 0);
	if (ruleset < 0)
		return -1;
	for (size_t i = 0; i < n && r == 0; i++)
		r = allow_beneath (ruleset, rw_paths[i], attr.handled_access_fs);
	if (r == 0)
		r = allow_beneath (ruleset, "/dev", dev_access & attr.handled_access_fs);
	if (r == 0)
		r = ab_sys_landlock_restrict_self (ruleset, 0);
	close (ruleset);
	return r;
}

int
ab_confine_seccomp (void)
{
	struct sock_fprog prog = {
		.len = AB_SECCOMP_DEFAULT_LEN,
		.filter = (struct sock_filter *)ab_seccomp_default_filter,
	};
	return prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}
