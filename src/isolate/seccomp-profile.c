/* The default seccomp profile, as tables (see seccomp-profile.h).
 *
 * The allowlist follows Docker's default profile (moby
 * profiles/seccomp/default.json) for a process without capabilities,
 * restricted to the x86-64 native ABI, plus the syscalls that appeared since
 * and that a libc, a language runtime or coreutils may use.  Where we differ
 * from Docker, the entry says why. */
#include "isolate/seccomp-profile.h"

#include <linux/netlink.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#if !defined(__x86_64__) || defined(__ILP32__)
#error "the seccomp profile is written for the x86-64 native ABI"
#endif

/* Syscalls newer than Debian 12's kernel headers (linux-libc-dev 6.1);
 * numbers from the kernel's arch/x86/entry/syscalls/syscall_64.tbl. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_map_shadow_stack
#define __NR_map_shadow_stack 453
#endif
#ifndef __NR_futex_wake
#define __NR_futex_wake 454
#endif
#ifndef __NR_futex_wait
#define __NR_futex_wait 455
#endif
#ifndef __NR_futex_requeue
#define __NR_futex_requeue 456
#endif
#ifndef __NR_mseal
#define __NR_mseal 462
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_getxattrat
#define __NR_getxattrat 464
#endif
#ifndef __NR_listxattrat
#define __NR_listxattrat 465
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef NETLINK_SOCK_DIAG
#define NETLINK_SOCK_DIAG 4
#endif

#define SC(name)                                                                                   \
	{                                                                                          \
#name, __NR_##name                                                                 \
	}

const struct ab_seccomp_syscall_s ab_seccomp_allowed[] = {
	/* files and directories */
	SC (read),
	SC (write),
	SC (readv),
	SC (writev),
	SC (pread64),
	SC (pwrite64),
	SC (preadv),
	SC (pwritev),
	SC (preadv2),
	SC (pwritev2),
	SC (open),
	SC (openat),
	SC (openat2),
	SC (creat),
	SC (close),
	SC (close_range),
	SC (lseek),
	SC (dup),
	SC (dup2),
	SC (dup3),
	SC (fcntl),
	SC (flock),
	SC (stat),
	SC (fstat),
	SC (lstat),
	SC (newfstatat),
	SC (statx),
	SC (statfs),
	SC (fstatfs),
	SC (access),
	SC (faccessat),
	SC (faccessat2),
	SC (getdents),
	SC (getdents64),
	SC (getcwd),
	SC (chdir),
	SC (fchdir),
	SC (mkdir),
	SC (mkdirat),
	SC (rmdir),
	SC (rename),
	SC (renameat),
	SC (renameat2),
	SC (link),
	SC (linkat),
	SC (unlink),
	SC (unlinkat),
	SC (symlink),
	SC (symlinkat),
	SC (readlink),
	SC (readlinkat),
	SC (chmod),
	SC (fchmod),
	SC (fchmodat),
	SC (fchmodat2),
	SC (chown),
	SC (fchown),
	SC (lchown),
	SC (fchownat),
	SC (umask),
	SC (truncate),
	SC (ftruncate),
	SC (fallocate),
	SC (fadvise64),
	SC (readahead),
	SC (fsync),
	SC (fdatasync),
	SC (sync),
	SC (syncfs),
	SC (sync_file_range),
	SC (utime),
	SC (utimes),
	SC (futimesat),
	SC (utimensat),
	SC (mknod),
	SC (mknodat),
	SC (sendfile),
	SC (copy_file_range),
	SC (splice),
	SC (tee),
	SC (vmsplice),
	/* extended attributes */
	SC (getxattr),
	SC (lgetxattr),
	SC (fgetxattr),
	SC (setxattr),
	SC (lsetxattr),
	SC (fsetxattr),
	SC (listxattr),
	SC (llistxattr),
	SC (flistxattr),
	SC (removexattr),
	SC (lremovexattr),
	SC (fremovexattr),
	SC (getxattrat),
	SC (setxattrat),
	SC (listxattrat),
	SC (removexattrat),
	/* file-change notification (fanotify_mark is useless without
	 * fanotify_init, which is denied) */
	SC (inotify_init),
	SC (inotify_init1),
	SC (inotify_add_watch),
	SC (inotify_rm_watch),
	SC (fanotify_mark),
	/* memory */
	SC (brk),
	SC (mmap),
	SC (munmap),
	SC (mremap),
	SC (mprotect),
	SC (msync),
	SC (mincore),
	SC (madvise),
	SC (remap_file_pages),
	SC (mlock),
	SC (mlock2),
	SC (mlockall),
	SC (munlock),
	SC (munlockall),
	SC (membarrier),
	SC (memfd_create),
	SC (memfd_secret),
	SC (pkey_alloc),
	SC (pkey_free),
	SC (pkey_mprotect),
	SC (mseal),
	SC (map_shadow_stack),
	/* processes and threads (clone is in the argument rules) */
	SC (fork),
	SC (vfork),
	SC (execve),
	SC (execveat),
	SC (exit),
	SC (exit_group),
	SC (wait4),
	SC (waitid),
	SC (set_tid_address),
	SC (set_robust_list),
	SC (get_robust_list),
	SC (rseq),
	SC (arch_prctl),
	SC (set_thread_area),
	SC (get_thread_area),
	SC (prctl),
	SC (futex),
	SC (futex_waitv),
	SC (futex_wake),
	SC (futex_wait),
	SC (futex_requeue),
	SC (getpid),
	SC (getppid),
	SC (gettid),
	SC (getpgid),
	SC (setpgid),
	SC (getpgrp),
	SC (getsid),
	SC (setsid),
	SC (pidfd_open),
	SC (pidfd_send_signal),
	SC (process_mrelease),
	SC (sched_yield),
	SC (sched_getaffinity),
	SC (sched_setaffinity),
	SC (sched_getattr),
	SC (sched_setattr),
	SC (sched_getparam),
	SC (sched_setparam),
	SC (sched_getscheduler),
	SC (sched_setscheduler),
	SC (sched_get_priority_max),
	SC (sched_get_priority_min),
	SC (sched_rr_get_interval),
	SC (getpriority),
	SC (setpriority),
	SC (ioprio_get),
	SC (ioprio_set),
	SC (getcpu),
	/* credentials and limits: the kernel still checks capabilities, and the
	 * sandbox holds none; capset and seccomp can only take privileges away */
	SC (getuid),
	SC (geteuid),
	SC (getgid),
	SC (getegid),
	SC (getresuid),
	SC (getresgid),
	SC (getgroups),
	SC (setuid),
	SC (setgid),
	SC (setreuid),
	SC (setregid),
	SC (setresuid),
	SC (setresgid),
	SC (setfsuid),
	SC (setfsgid),
	SC (setgroups),
	SC (capget),
	SC (capset),
	SC (getrlimit),
	SC (setrlimit),
	SC (prlimit64),
	SC (getrusage),
	SC (times),
	SC (seccomp),
	/* Landlock: Docker allows it too.  A ruleset can only take file-system
	 * access away from the caller and its children, never add any, so a tool
	 * that sandboxes itself further (and stacks on our ruleset) is welcome. */
	SC (landlock_create_ruleset),
	SC (landlock_add_rule),
	SC (landlock_restrict_self),
	/* signals */
	SC (rt_sigaction),
	SC (rt_sigprocmask),
	SC (rt_sigreturn),
	SC (rt_sigpending),
	SC (rt_sigsuspend),
	SC (rt_sigtimedwait),
	SC (rt_sigqueueinfo),
	SC (rt_tgsigqueueinfo),
	SC (sigaltstack),
	SC (kill),
	SC (tkill),
	SC (tgkill),
	SC (pause),
	SC (restart_syscall),
	SC (signalfd),
	SC (signalfd4),
	/* time (reading only) and timers */
	SC (time),
	SC (gettimeofday),
	SC (clock_gettime),
	SC (clock_getres),
	SC (clock_nanosleep),
	SC (nanosleep),
	SC (alarm),
	SC (getitimer),
	SC (setitimer),
	SC (timer_create),
	SC (timer_settime),
	SC (timer_gettime),
	SC (timer_getoverrun),
	SC (timer_delete),
	SC (timerfd_create),
	SC (timerfd_settime),
	SC (timerfd_gettime),
	/* waiting on descriptors */
	SC (pipe),
	SC (pipe2),
	SC (poll),
	SC (ppoll),
	SC (select),
	SC (pselect6),
	SC (epoll_create),
	SC (epoll_create1),
	SC (epoll_ctl),
	SC (epoll_wait),
	SC (epoll_pwait),
	SC (epoll_pwait2),
	SC (eventfd),
	SC (eventfd2),
	/* sockets (socket itself is in the argument rules) */
	SC (socketpair),
	SC (bind),
	SC (listen),
	SC (accept),
	SC (accept4),
	SC (connect),
	SC (shutdown),
	SC (getsockname),
	SC (getpeername),
	SC (getsockopt),
	SC (setsockopt),
	SC (sendto),
	SC (recvfrom),
	SC (sendmsg),
	SC (recvmsg),
	SC (sendmmsg),
	SC (recvmmsg),
	/* System V and POSIX IPC, scoped by the sandbox's IPC namespace */
	SC (shmget),
	SC (shmat),
	SC (shmdt),
	SC (shmctl),
	SC (semget),
	SC (semop),
	SC (semtimedop),
	SC (semctl),
	SC (msgget),
	SC (msgsnd),
	SC (msgrcv),
	SC (msgctl),
	SC (mq_open),
	SC (mq_unlink),
	SC (mq_timedsend),
	SC (mq_timedreceive),
	SC (mq_notify),
	SC (mq_getsetattr),
	/* asynchronous I/O (the old AIO interface; io_uring is denied) */
	SC (io_setup),
	SC (io_destroy),
	SC (io_submit),
	SC (io_cancel),
	SC (io_getevents),
	SC (io_pgetevents),
	/* system information */
	SC (uname),
	SC (sysinfo),
	SC (getrandom),
};
const size_t ab_seccomp_n_allowed = sizeof ab_seccomp_allowed / sizeof ab_seccomp_allowed[0];

#define DENY(name, why)                                                                            \
	{                                                                                          \
		SC (name), EPERM, why                                                              \
	}

const struct ab_seccomp_deny_s ab_seccomp_denied[] = {
	/* clone3 passes its flags in memory, where a seccomp filter cannot look;
	 * ENOSYS (not EPERM) makes glibc fall back to clone(2), whose flags the
	 * argument rules check.  Docker does the same. */
	{ SC (clone3), ENOSYS,
	  "flags in memory that seccomp cannot read; ENOSYS makes libc fall back to clone(2)" },

	/* The file-system view is built by the runtime (SECURITY.md items 1-5). */
	DENY (mount,
	      "changes the file-system view the runtime built; mounting over or beside masks"),
	DENY (umount2, "unmounting a mask reveals what it hides (/proc/kcore, /proc/keys, ...)"),
	DENY (pivot_root, "changes the root; the runtime's pivot is final"),
	DENY (chroot,
	      "needs CAP_SYS_CHROOT; with a directory fd kept open it is the classic jail escape"),
	DENY (fsopen, "new mount API: the power of mount(2)"),
	DENY (fsconfig, "new mount API; CVE-2022-0185 (heap overflow in legacy_parse_param)"),
	DENY (fsmount, "new mount API: the power of mount(2)"),
	DENY (fspick, "new mount API: reconfigures an existing mount"),
	DENY (move_mount, "new mount API: attaches or moves mounts"),
	DENY (open_tree, "OPEN_TREE_CLONE makes a detached copy of a mount; a non-recursive copy "
	                 "shows what the masks on it hide"),
	DENY (open_tree_attr, "open_tree with mount attributes"),
	DENY (mount_setattr, "changes mount flags (read-only, nosuid, idmap)"),
	DENY (open_by_handle_at, "opens any inode of a file system by handle, past every mount and "
	                         "mask: the 2014 'shocker' container escape"),
	DENY (name_to_handle_at,
	      "makes the handles open_by_handle_at takes; leaks inode identities"),

	/* Namespaces: joining one leaves the sandbox (clone and unshare are in
	 * the argument rules). */
	DENY (setns,
	      "joins another namespace through an inherited fd or a pidfd: leaves the sandbox"),

	/* Other processes: the agent is the door (SECURITY.md item 17). */
	DENY (ptrace, "traces and rewrites other processes, the agent included; CVE-2019-13272 "
	              "(PTRACE_TRACEME)"),
	DENY (process_vm_readv, "reads another process's memory"),
	DENY (process_vm_writev, "writes another process's memory"),
	DENY (process_madvise, "acts on another process's memory"),
	DENY (pidfd_getfd,
	      "copies a file descriptor out of another process, such as the agent's connection"),
	DENY (kcmp, "compares kernel objects of two processes; leaks their ordering (KASLR hints)"),

	/* Large kernel attack surface with a record of privilege escalations. */
	DENY (bpf, "eBPF verifier bugs give kernel code execution (CVE-2021-3490, CVE-2022-23222)"),
	DENY (perf_event_open,
	      "kernel attack surface and side channels (CVE-2013-2094, CVE-2023-2235)"),
	DENY (userfaultfd,
	      "stalls kernel page faults at will: the standard tool for winning kernel races"),
	DENY (io_uring_setup, "io_uring operations bypass seccomp; many kernel bugs "
	                      "(CVE-2022-29582, CVE-2023-2598, CVE-2024-0582)"),
	DENY (io_uring_enter, "io_uring: see io_uring_setup"),
	DENY (io_uring_register, "io_uring: see io_uring_setup"),
	DENY (add_key, "kernel keyrings are not namespaced; CVE-2016-0728"),
	DENY (request_key, "kernel keyrings are not namespaced; CVE-2016-0728"),
	DENY (keyctl, "kernel keyrings are not namespaced: other users' keys; CVE-2016-0728"),
	DENY (modify_ldt,
	      "16-bit segments, needed only by Wine and DOSEMU; CVE-2015-3290, CVE-2017-17053"),

	/* The kernel itself and the machine. */
	DENY (kexec_load, "replaces the running kernel"),
	DENY (kexec_file_load, "replaces the running kernel"),
	DENY (init_module, "loads kernel code"),
	DENY (finit_module, "loads kernel code"),
	DENY (delete_module, "unloads kernel code"),
	DENY (reboot, "reboots or halts the machine"),
	DENY (swapon, "host memory management"),
	DENY (swapoff, "host memory management"),
	DENY (acct, "switches the host's process accounting file"),
	DENY (quotactl, "host file-system quotas"),
	DENY (quotactl_fd, "host file-system quotas"),
	DENY (iopl, "raw access to hardware I/O ports"),
	DENY (ioperm, "raw access to hardware I/O ports"),
	DENY (syslog, "the kernel log leaks kernel addresses and host activity"),
	DENY (lookup_dcookie,
	      "kernel profiler internals; leaks paths (removed from recent kernels)"),
	DENY (nfsservctl, "kernel NFS server control (gone since Linux 3.1)"),
	DENY (fanotify_init,
	      "file-system-wide access monitoring; permission events can stall other processes"),
	DENY (vhangup, "hangs up the terminal: a tty hijack primitive"),
	DENY (sethostname, "the host name belongs to the runtime"),
	DENY (setdomainname, "the domain name belongs to the runtime"),

	/* Clocks are global: no time namespace covers setting them. */
	DENY (settimeofday, "sets the host's clock"),
	DENY (clock_settime, "sets the host's clock"),
	DENY (adjtimex, "adjusts the host's clock (Docker allows the read-only use; nothing we run "
	                "needs it)"),
	DENY (clock_adjtime, "adjusts the host's clock"),
};
const size_t ab_seccomp_n_denied = sizeof ab_seccomp_denied / sizeof ab_seccomp_denied[0];

/* Conditions. */
#define LOW32 UINT64_C (0xffffffff)
#define EQ32(a, v)                                                                                 \
	{                                                                                          \
		(a), LOW32, (uint64_t)(v)                                                          \
	}
#define HAS(a, flag)                                                                               \
	{                                                                                          \
		(a), (uint64_t)(flag), (uint64_t)(flag)                                            \
	}
#define NONE_OF(a, mask)                                                                           \
	{                                                                                          \
		(a), (uint64_t)(mask), 0                                                           \
	}

/* Namespace flags.  The kernel reads clone's flags from the low 32 bits of
 * argument 0 on x86-64, so masks below 2^32 see everything it sees.
 * CLONE_NEWTIME (0x80) is not in clone's mask: there that bit belongs to the
 * exit signal (CSIGNAL), and clone(2) cannot create a time namespace. */
#define CLONE_NS_FLAGS                                                                             \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER               \
	 | CLONE_NEWPID | CLONE_NEWNET)
#define UNSHARE_NS_FLAGS (CLONE_NS_FLAGS | CLONE_NEWTIME)

#define NS_USER_WHY                                                                                \
	"user namespaces open root-only kernel code to anyone (CVE-2022-0185, CVE-2023-32233); "   \
	"SECURITY.md item 6 (CVE-2021-41133)"

#define NS_DENY(sys, flag, why)                                                                    \
	{                                                                                          \
		SC (sys), AB_SECCOMP_ERRNO, EPERM, false, 1, { HAS (0, flag) }, why                \
	}
#define NS_RULES(sys)                                                                              \
	NS_DENY (sys, CLONE_NEWUSER, NS_USER_WHY),                                                 \
	        NS_DENY (sys, CLONE_NEWNS, "a new mount namespace: mounts of its own"),            \
	        NS_DENY (sys, CLONE_NEWPID,                                                        \
	                 "a new PID namespace: PID 1 of its own, outside the reaper"),             \
	        NS_DENY (sys, CLONE_NEWNET, "a new network namespace: interfaces of its own"),     \
	        NS_DENY (sys, CLONE_NEWIPC, "a new IPC namespace"),                                \
	        NS_DENY (sys, CLONE_NEWUTS, "a new UTS namespace"),                                \
	        NS_DENY (sys, CLONE_NEWCGROUP,                                                     \
	                 "a new cgroup namespace: a different view of the cgroup tree")

/* Personalities Docker allows: PER_LINUX, PER_LINUX32 (`setarch i686`),
 * UNAME26, both, and 0xffffffff, which only queries.  Everything else sets
 * flags such as ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC that switch exploit
 * mitigations off for the programs started next. */
#define PERSONA(v, why)                                                                            \
	{                                                                                          \
		SC (personality), AB_SECCOMP_ALLOW, 0, false, 1, { EQ32 (0, v) }, why              \
	}

#define SOCKET_FAMILY(af, why)                                                                     \
	{                                                                                          \
		SC (socket), AB_SECCOMP_ALLOW, 0, false, 1, { EQ32 (0, af) }, why                  \
	}
#define NETLINK_PROTO(p, why)                                                                      \
	{                                                                                          \
		SC (socket), AB_SECCOMP_ALLOW, 0, false, 2, { EQ32 (0, AF_NETLINK), EQ32 (2, p) }, \
		        why                                                                        \
	}

const struct ab_seccomp_arg_rule_s ab_seccomp_arg_rules[] = {
	/* clone: threads and processes yes, namespaces no.  fork(), vfork()
	 * and posix_spawn() in glibc all end here once clone3 says ENOSYS. */
	{ SC (clone),
	  AB_SECCOMP_ALLOW,
	  0,
	  false,
	  1,
	  { NONE_OF (0, CLONE_NS_FLAGS) },
	  "threads and processes without new namespaces" },
	NS_RULES (clone),

	/* unshare: CLONE_FILES, CLONE_FS, CLONE_SYSVSEM and friends only detach
	 * what the caller already has; namespaces are refused. */
	{ SC (unshare),
	  AB_SECCOMP_ALLOW,
	  0,
	  false,
	  1,
	  { NONE_OF (0, UNSHARE_NS_FLAGS) },
	  "detaching files, fs or SysV semaphores only" },
	NS_RULES (unshare),
	NS_DENY (unshare, CLONE_NEWTIME, "a new time namespace: clock offsets of its own"),

	/* ioctl: the kernel reads the request as an unsigned int, so match its
	 * low 32 bits whatever the high half holds (CVE-2019-10063: flatpak's
	 * filter compared all 64 and TIOCSTI | 1 << 32 went through). */
	{ SC (ioctl),
	  AB_SECCOMP_ERRNO,
	  EPERM,
	  false,
	  1,
	  { EQ32 (1, TIOCSTI) },
	  "TIOCSTI pushes input into a terminal the sandbox shares: commands typed into the "
	  "caller's shell (CVE-2017-5226)" },
	{ SC (ioctl),
	  AB_SECCOMP_ERRNO,
	  EPERM,
	  false,
	  1,
	  { EQ32 (1, TIOCLINUX) },
	  "TIOCLINUX selection paste on a virtual console does the same (CVE-2023-28100)" },
	{ SC (ioctl),
	  AB_SECCOMP_ALLOW,
	  0,
	  true,
	  0,
	  { { 0 } },
	  "every other request: terminals, FIONREAD, FICLONE, ..." },

	PERSONA (0x0, "PER_LINUX"),
	PERSONA (PER_LINUX32, "PER_LINUX32 (setarch i686)"),
	PERSONA (UNAME26, "UNAME26"),
	PERSONA (PER_LINUX32 | UNAME26, "PER_LINUX32 | UNAME26"),
	PERSONA (0xffffffff, "query the current personality"),
	{ SC (personality),
	  AB_SECCOMP_ERRNO,
	  EPERM,
	  true,
	  0,
	  { { 0 } },
	  "other personalities turn off mitigations (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC)" },

	/* socket: the families ordinary programs use.  The sandbox's network
	 * namespace holds only lo, and the egress proxy listens on 127.0.0.1. */
	SOCKET_FAMILY (AF_UNIX, "local sockets"),
	SOCKET_FAMILY (AF_INET, "IPv4 (to the egress proxy on lo)"),
	SOCKET_FAMILY (AF_INET6, "IPv6"),
	NETLINK_PROTO (NETLINK_ROUTE, "rtnetlink: getifaddrs() and getaddrinfo(AI_ADDRCONFIG) read "
	                              "interfaces through it"),
	NETLINK_PROTO (NETLINK_SOCK_DIAG, "sock_diag: ss(8) lists the sandbox's own sockets"),
	{ SC (socket),
	  AB_SECCOMP_ERRNO,
	  EAFNOSUPPORT,
	  true,
	  0,
	  { { 0 } },
	  "other families and netlink protocols: AF_PACKET (CVE-2016-8655, CVE-2017-7308, "
	  "CVE-2020-14386), AF_VSOCK "
	  "(CVE-2021-26708, the host's vsock), AF_ALG, netfilter and generic netlink; EAFNOSUPPORT "
	  "reads as 'not "
	  "built in', which libraries (libaudit, Python) already handle" },
};
const size_t ab_seccomp_n_arg_rules = sizeof ab_seccomp_arg_rules / sizeof ab_seccomp_arg_rules[0];
