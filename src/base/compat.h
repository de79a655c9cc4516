/* Kernel interfaces newer than Debian 12's headers (linux-libc-dev 6.1),
 * defined here once and detected at run time (as minijail's landlock.h). */
#ifndef AB_BASE_COMPAT_H
#define AB_BASE_COMPAT_H

#include <linux/types.h>
#include <stdint.h>
#include <sys/syscall.h>

/* openat2(2), Linux 5.6 */
#ifndef RESOLVE_NO_XDEV
#define RESOLVE_NO_XDEV       0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS   0x04
#define RESOLVE_BENEATH       0x08
#define RESOLVE_IN_ROOT       0x10
#endif
struct ab_open_how_s {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

/* The new mount API, Linux 5.2 / 5.12 (mount_setattr). */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC 02000000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC  0x00000001
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_SET_FLAG
#define FSCONFIG_SET_FLAG   0
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSCONFIG_SET_FD
#define FSCONFIG_SET_FD 5
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV  0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
struct ab_mount_attr_s {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Landlock: headers stop at ABI 2; this kernel has ABI 7. */
#define AB_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define AB_LANDLOCK_RULE_PATH_BENEATH      1
#define AB_LL_FS_EXECUTE                   (1ULL << 0)
#define AB_LL_FS_WRITE_FILE                (1ULL << 1)
#define AB_LL_FS_READ_FILE                 (1ULL << 2)
#define AB_LL_FS_READ_DIR                  (1ULL << 3)
#define AB_LL_FS_REMOVE_DIR                (1ULL << 4)
#define AB_LL_FS_REMOVE_FILE               (1ULL << 5)
#define AB_LL_FS_MAKE_CHAR                 (1ULL << 6)
#define AB_LL_FS_MAKE_DIR                  (1ULL << 7)
#define AB_LL_FS_MAKE_REG                  (1ULL << 8)
#define AB_LL_FS_MAKE_SOCK                 (1ULL << 9)
#define AB_LL_FS_MAKE_FIFO                 (1ULL << 10)
#define AB_LL_FS_MAKE_BLOCK                (1ULL << 11)
#define AB_LL_FS_MAKE_SYM                  (1ULL << 12)
#define AB_LL_FS_REFER                     (1ULL << 13) /* ABI 2 */
#define AB_LL_FS_TRUNCATE                  (1ULL << 14) /* ABI 3 */
#define AB_LL_FS_IOCTL_DEV                 (1ULL << 15) /* ABI 5 */
#define AB_LL_SCOPE_ABSTRACT_UNIX_SOCKET   (1ULL << 0)  /* ABI 6 */
#define AB_LL_SCOPE_SIGNAL                 (1ULL << 1)  /* ABI 6 */

struct ab_landlock_ruleset_attr_s {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};
struct ab_landlock_path_beneath_s {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__ ((packed));

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule       445
#define __NR_landlock_restrict_self  446
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

#endif
