/* The kernel features the native sandbox is built from, each proven by
 * doing it: a user and a network namespace, a seccomp filter, a Landlock
 * domain, an idmapped mount, cgroup groups.  Work that changes process
 * state runs in a forked child that exits right after. */
#include "cli/doctor-checks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/tmpdir.h"
#include "base/xalloc.h"
#include "isolate/cgroup.h"
#include "isolate/userns.h"

/* The newest Landlock ABI whose features agentbox-agent uses
 * (agent/confine.c: write rights up to ABI 5, signal and abstract-socket
 * scoping from ABI 6).  ABI 7 adds only audit-log flags. */
#define LANDLOCK_ABI_USED 6

#define CHILD_TIMEOUT_S 10

/* Steps of the child tests whose failure has its own advice. */
enum { STEP_NONE, STEP_USERNS, STEP_NETNS, STEP_OPEN_TREE, STEP_IDMAP };

#define SYSCTL_MAX_USERNS      "/proc/sys/user/max_user_namespaces"
#define SYSCTL_APPARMOR_USERNS "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
#define SYSCTL_DEBIAN_USERNS   "/proc/sys/kernel/unprivileged_userns_clone"

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

int
ab_doctor_child_fail (struct ab_doctor_child_s *out, int errnum, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start (ap, fmt);
	n = vsnprintf (out->msg, sizeof out->msg, fmt, ap);
	va_end (ap);
	if (errnum && n >= 0 && (size_t)n < sizeof out->msg)
		snprintf (out->msg + n, sizeof out->msg - (size_t)n, ": %s", strerror (errnum));
	out->ok = false;
	out->errnum = errnum;
	return -1;
}

void
ab_doctor_in_child (int (*fn) (void *arg, struct ab_doctor_child_s *out), void *arg,
                    struct ab_doctor_child_s *out)
{
	int status = 0, p[2];
	pid_t pid;

	memset (out, 0, sizeof *out);
	if (pipe2 (p, O_CLOEXEC) < 0) {
		ab_doctor_child_fail (out, errno, "pipe");
		return;
	}
	fflush (NULL); /* nothing buffered may be written twice */
	pid = fork ();
	if (pid < 0) {
		close (p[0]);
		close (p[1]);
		ab_doctor_child_fail (out, errno, "fork");
		return;
	}
	if (pid == 0) {
		struct ab_doctor_child_s r = { 0 };
		close (p[0]);
		prctl (PR_SET_PDEATHSIG, SIGKILL);
		alarm (CHILD_TIMEOUT_S);
		r.ok = fn (arg, &r) == 0;
		_exit (ab_write_all (p[1], &r, sizeof r) == 0 ? 0 : 1);
	}
	close (p[1]);
	if (ab_read_exact (p[0], out, sizeof *out) < 0)
		memset (out, 0, sizeof *out);
	close (p[0]);
	while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	out->msg[sizeof out->msg - 1] = '\0';
	if (WIFSIGNALED (status))
		ab_doctor_child_fail (out, 0, "the test process died of signal %d%s",
		                      WTERMSIG (status),
		                      WTERMSIG (status) == SIGALRM ? " (timed out)" : "");
	else if (out->msg[0] == '\0')
		ab_doctor_child_fail (out, 0, "the test process exited without a report");
}

int
ab_doctor_read_long (const char *path, long *out)
{
	cleanup_file FILE *f = fopen (path, "re");
	if (!f)
		return -errno;
	if (fscanf (f, "%ld", out) != 1)
		return -EINVAL;
	return 0;
}

static void
fact_sysctl (json_t *facts, const char *key, int r, long v)
{
	json_object_set_new (facts, key, r == 0 ? json_integer (v) : json_null ());
}

static int
write_proc_self (const char *file, const char *text)
{
	char path[64];
	cleanup_close int fd = -1;

	snprintf (path, sizeof path, "/proc/self/%s", file);
	fd = open (path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ab_write_all (fd, text, strlen (text)) < 0)
		return -1;
	return 0;
}

/* A new user namespace where the caller's ids become root; fails like the
 * sandbox's own setup would (setgroups "deny" first: user_namespaces(7)). */
static int
enter_userns (struct ab_doctor_child_s *out)
{
	char map[64];
	uid_t uid = geteuid ();
	gid_t gid = getegid ();

	out->step = STEP_USERNS;
	if (unshare (CLONE_NEWUSER) < 0)
		return ab_doctor_child_fail (out, errno, "unshare(CLONE_NEWUSER)");
	snprintf (map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (write_proc_self ("setgroups", "deny") < 0 || write_proc_self ("uid_map", map) < 0)
		return ab_doctor_child_fail (out, errno, "write the new namespace's uid_map");
	snprintf (map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (write_proc_self ("gid_map", map) < 0)
		return ab_doctor_child_fail (out, errno, "write the new namespace's gid_map");
	out->step = STEP_NONE;
	return 0;
}

/* ------------------------------------------------------------------ */
/* User namespaces                                                      */

/* Creating one is not enough: AppArmor's restriction (Ubuntu 23.10+)
 * lets unshare succeed and then denies every capability inside, so the
 * child also makes a mount namespace, which needs CAP_SYS_ADMIN there. */
static int
try_userns (void *arg, struct ab_doctor_child_s *out)
{
	if (enter_userns (out) < 0)
		return -1;
	if (unshare (CLONE_NEWNS) < 0)
		return ab_doctor_child_fail (out, errno,
		                             "unshare(CLONE_NEWNS) inside the new user namespace");
	snprintf (out->msg, sizeof out->msg,
	          "created one, became root in it and used CAP_SYS_ADMIN there");
	return 0;
}

enum userns_fact { UF_MAX, UF_DEBIAN, UF_APPARMOR, UF_ERRNO };

struct userns_state_s {
	long value[UF_ERRNO + 1];
	bool present[UF_ERRNO + 1];
};

/* First match wins: the most specific cause first. */
static const struct {
	enum userns_fact fact;
	long value;
	bool unprivileged_only;
	const char *fix;
} userns_fixes[] = {
	{ UF_MAX, 0, false, "sysctl -w user.max_user_namespaces=15000" },
	{ UF_DEBIAN, 0, true, "sysctl -w kernel.unprivileged_userns_clone=1, or run as root" },
	{ UF_APPARMOR, 1, true,
	  "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile that "
	  "allows userns for agentbox), or run as root" },
	{ UF_ERRNO, ENOSPC, false,
	  "the namespace limit is reached: raise user.max_user_namespaces" },
	{ UF_ERRNO, EPERM, false,
	  "a seccomp or LSM policy around this process forbids it (a container?): run agentbox on "
	  "the host, or in a container allowed to create user namespaces" },
	{ UF_ERRNO, EINVAL, false,
	  "the kernel lacks CONFIG_USER_NS: use a kernel with user namespaces" },
};

static const char *
userns_fix (const struct userns_state_s *s)
{
	for (size_t i = 0; i < sizeof userns_fixes / sizeof userns_fixes[0]; i++) {
		enum userns_fact f = userns_fixes[i].fact;
		if (userns_fixes[i].unprivileged_only && geteuid () == 0)
			continue;
		if (s->present[f] && s->value[f] == userns_fixes[i].value)
			return userns_fixes[i].fix;
	}
	return "run as root, or check the kernel log (dmesg) for the LSM that denied it";
}

static void
check_userns (struct ab_doctor_check_s *c)
{
	struct userns_state_s s = { 0 };
	struct ab_doctor_child_s r;
	char max[32] = "unknown", aa[80] = " absent (not restricted)";
	int rmax = ab_doctor_read_long (SYSCTL_MAX_USERNS, &s.value[UF_MAX]);
	int raa = ab_doctor_read_long (SYSCTL_APPARMOR_USERNS, &s.value[UF_APPARMOR]);
	int rdeb = ab_doctor_read_long (SYSCTL_DEBIAN_USERNS, &s.value[UF_DEBIAN]);

	s.present[UF_MAX] = rmax == 0;
	s.present[UF_APPARMOR] = raa == 0;
	s.present[UF_DEBIAN] = rdeb == 0;
	fact_sysctl (c->facts, "max_user_namespaces", rmax, s.value[UF_MAX]);
	fact_sysctl (c->facts, "apparmor_restrict_unprivileged_userns", raa, s.value[UF_APPARMOR]);
	fact_sysctl (c->facts, "unprivileged_userns_clone", rdeb, s.value[UF_DEBIAN]);
	if (rmax == 0)
		snprintf (max, sizeof max, "%ld", s.value[UF_MAX]);
	if (raa == 0)
		snprintf (aa, sizeof aa, "=%ld", s.value[UF_APPARMOR]);
	ab_doctor_in_child (try_userns, NULL, &r);
	s.present[UF_ERRNO] = true;
	s.value[UF_ERRNO] = r.errnum;
	c->ok = r.ok;
	snprintf (c->detail, sizeof c->detail,
	          "%s; user.max_user_namespaces=%s; kernel.apparmor_restrict_unprivileged_userns%s",
	          r.msg, max, aa);
	if (!c->ok)
		snprintf (c->fix, sizeof c->fix, "%s", userns_fix (&s));
}

/* ------------------------------------------------------------------ */
/* Network namespaces                                                   */

/* As the sandbox does it: inside a new user namespace.  A fresh network
 * namespace must hold nothing but lo. */
static int
try_netns (void *arg, struct ab_doctor_child_s *out)
{
	struct if_nameindex *ifs;
	size_t n = 0;
	bool only_lo;
	int s;

	if (enter_userns (out) < 0)
		return -1;
	out->step = STEP_NETNS;
	if (unshare (CLONE_NEWNET) < 0)
		return ab_doctor_child_fail (out, errno, "unshare(CLONE_NEWNET)");
	s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ab_doctor_child_fail (out, errno, "socket in the new network namespace");
	close (s);
	ifs = if_nameindex ();
	if (!ifs)
		return ab_doctor_child_fail (out, errno,
		                             "list interfaces in the new network namespace");
	while (ifs[n].if_name)
		n++;
	only_lo = n == 1 && strcmp (ifs[0].if_name, "lo") == 0;
	if_freenameindex (ifs);
	if (!only_lo)
		return ab_doctor_child_fail (
		        out, 0, "a new network namespace holds %zu interfaces, not only lo", n);
	snprintf (out->msg, sizeof out->msg,
	          "created one (inside a user namespace); it holds only lo");
	return 0;
}

static void
check_netns (struct ab_doctor_check_s *c)
{
	struct ab_doctor_child_s r;

	ab_doctor_in_child (try_netns, NULL, &r);
	c->ok = r.ok;
	snprintf (c->detail, sizeof c->detail, "%s", r.msg);
	if (!c->ok)
		snprintf (c->fix, sizeof c->fix, "%s",
		          r.step == STEP_USERNS ? "needs user namespaces: see that line"
		          : r.errnum == EINVAL
		                  ? "use a kernel with CONFIG_NET_NS"
		                  : "a policy around this process forbids network namespaces");
}

/* ------------------------------------------------------------------ */
/* seccomp                                                              */

#if defined(__x86_64__)
#define DOCTOR_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define DOCTOR_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "add this architecture's AUDIT_ARCH"
#endif

/* A filter that makes getppid fail with EXDEV proves filters are enforced,
 * not merely accepted. */
static int
try_seccomp (void *arg, struct ab_doctor_child_s *out)
{
	struct sock_filter insns[] = {
		BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch)),
		BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, DOCTOR_AUDIT_ARCH, 1, 0),
		BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
		BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
		BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EXDEV),
		BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof insns / sizeof insns[0], .filter = insns };

	if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ab_doctor_child_fail (out, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
	if (prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return ab_doctor_child_fail (out, errno, "install a seccomp filter");
	if (syscall (__NR_getppid) != -1 || errno != EXDEV)
		return ab_doctor_child_fail (out, 0,
		                             "a seccomp filter was accepted but not enforced");
	snprintf (out->msg, sizeof out->msg,
	          "a filter installed in a child denied getppid as told");
	return 0;
}

static void
check_seccomp (struct ab_doctor_check_s *c)
{
	static const char *const modes[] = { "none", "strict", "filter" };
	struct ab_doctor_child_s r;
	int mode = prctl (PR_GET_SECCOMP, 0, 0, 0, 0);
	const char *m = mode >= 0 && mode <= 2 ? modes[mode] : "unknown";

	json_object_set_new (c->facts, "this_process_mode", json_string (m));
	ab_doctor_in_child (try_seccomp, NULL, &r);
	c->ok = r.ok;
	snprintf (c->detail, sizeof c->detail, "%s (this process: %s%s)", r.msg, m,
	          mode == 2 ? ", filters stack" : "");
	if (!c->ok)
		snprintf (c->fix, sizeof c->fix,
		          r.errnum == EINVAL
		                  ? "use a kernel with CONFIG_SECCOMP_FILTER"
		                  : "a policy around this process forbids seccomp filters");
}

/* ------------------------------------------------------------------ */
/* Landlock                                                             */

struct landlock_probe_s {
	const char *file; /* exists, writable by us without Landlock */
};

static int
try_landlock (void *arg, struct ab_doctor_child_s *out)
{
	const struct landlock_probe_s *p = arg;
	struct ab_landlock_ruleset_attr_s attr = { .handled_access_fs = AB_LL_FS_WRITE_FILE };
	int ruleset, fd;

	ruleset = ab_sys_landlock_create_ruleset (
	        &attr, offsetof (struct ab_landlock_ruleset_attr_s, handled_access_net), 0);
	if (ruleset < 0)
		return ab_doctor_child_fail (out, errno, "landlock_create_ruleset");
	if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
	    || ab_sys_landlock_restrict_self (ruleset, 0) < 0)
		return ab_doctor_child_fail (out, errno, "landlock_restrict_self");
	fd = open (p->file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 || errno != EACCES)
		return ab_doctor_child_fail (out, fd >= 0 ? 0 : errno,
		                             "a Landlock domain did not deny a write as told");
	fd = open (p->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ab_doctor_child_fail (out, errno,
		                             "a Landlock domain denied a read it should allow");
	close (fd);
	snprintf (out->msg, sizeof out->msg,
	          "a domain made in a child denied a write and allowed a read");
	return 0;
}

static void
landlock_functional (struct ab_doctor_check_s *c, int abi)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *dir = ab_make_temp_dir (NULL, "agentbox-doctor", &err);
	struct landlock_probe_s p;
	struct ab_doctor_child_s r;
	cleanup_free char *file = NULL;
	int fd;

	if (!dir) {
		ab_doctor_child_fail (&r, err.errnum, "%s", err.msg);
	} else {
		file = xasprintf ("%s/f", dir);
		fd = open (file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			ab_doctor_child_fail (&r, errno, "create %s", file);
		} else {
			close (fd);
			p.file = file;
			ab_doctor_in_child (try_landlock, &p, &r);
			unlink (file);
		}
		rmdir (dir);
	}
	c->ok = r.ok;
	snprintf (c->detail, sizeof c->detail, "ABI %d (this agentbox uses up to %d); %s", abi,
	          LANDLOCK_ABI_USED, r.msg);
	if (!c->ok)
		snprintf (c->fix, sizeof c->fix,
		          "the kernel reports Landlock but it does not work here");
}

static void
check_landlock (struct ab_doctor_check_s *c)
{
	int abi = ab_sys_landlock_create_ruleset (NULL, 0, AB_LANDLOCK_CREATE_RULESET_VERSION);
	int e = errno;

	json_object_set_new (c->facts, "abi", json_integer (abi > 0 ? abi : 0));
	json_object_set_new (c->facts, "abi_used", json_integer (LANDLOCK_ABI_USED));
	if (abi > 0) {
		landlock_functional (c, abi);
		return;
	}
	c->ok = false;
	snprintf (c->detail, sizeof c->detail,
	          "landlock_create_ruleset: %s; sandboxes run without this second file-system wall",
	          strerror (e));
	snprintf (c->fix, sizeof c->fix, "%s",
	          e == EOPNOTSUPP
	                  ? "Landlock is built in but off: add it to the lsm= kernel parameter "
	                    "(e.g. lsm=landlock,lockdown,yama,integrity,apparmor) and reboot"
	                  : "use Linux >= 5.13 built with CONFIG_SECURITY_LANDLOCK=y");
}

/* ------------------------------------------------------------------ */
/* Idmapped mounts                                                      */

static const struct {
	unsigned long magic;
	const char *name;
} fs_names[] = {
	{ 0xEF53, "ext4" },      { 0x58465342, "xfs" },      { 0x9123683E, "btrfs" },
	{ 0x01021994, "tmpfs" }, { 0x794c7630, "overlay" },  { 0x6969, "nfs" },
	{ 0x65735546, "fuse" },  { 0x01021997, "9p" },       { 0x2fc12fc1, "zfs" },
	{ 0xF2F52010, "f2fs" },  { 0x73717368, "squashfs" },
};

static const char *
fs_name (const char *path)
{
	struct statfs sf;
	if (statfs (path, &sf) < 0)
		return "unknown fs";
	for (size_t i = 0; i < sizeof fs_names / sizeof fs_names[0]; i++)
		if ((unsigned long)sf.f_type == fs_names[i].magic)
			return fs_names[i].name;
	return "other fs";
}

/* What the native backend does for a root caller's workspace: clone the
 * directory's mount and idmap its owner to the sandbox's root (host uid
 * AB_USERNS_HOST_BASE).  The clone is detached; it goes with the child. */
static int
try_idmap (void *arg, struct ab_doctor_child_s *out)
{
	struct ab_mount_attr_s attr = { .attr_set = MOUNT_ATTR_IDMAP };
	ab_error_t err = AB_ERROR_INIT;
	const char *dir = arg;
	struct stat st;
	pid_t helper = -1;
	int userns, mnt;

	if (stat (dir, &st) < 0)
		return ab_doctor_child_fail (out, errno, "stat %s", dir);
	out->step = STEP_USERNS;
	userns = ab_userns_idmap_fd (st.st_uid, st.st_gid, AB_USERNS_HOST_BASE, AB_USERNS_HOST_BASE,
	                             &helper, &err);
	if (helper > 0)
		waitpid (helper, NULL, 0);
	if (userns < 0)
		return ab_doctor_child_fail (out, 0, "%s", err.msg);
	out->step = STEP_OPEN_TREE;
	mnt = ab_sys_open_tree (AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (mnt < 0)
		return ab_doctor_child_fail (out, errno, "open_tree(OPEN_TREE_CLONE) %s", dir);
	attr.userns_fd = (uint64_t)userns;
	out->step = STEP_IDMAP;
	if (ab_sys_mount_setattr (mnt, "", AT_EMPTY_PATH, &attr) < 0)
		return ab_doctor_child_fail (out, errno,
		                             "mount_setattr(MOUNT_ATTR_IDMAP) on %s (%s)", dir,
		                             fs_name (dir));
	if (fstat (mnt, &st) < 0 || st.st_uid != AB_USERNS_HOST_BASE)
		return ab_doctor_child_fail (out, 0,
		                             "an idmapped mount of %s did not map its owner", dir);
	snprintf (out->msg, sizeof out->msg,
	          "idmapped a clone of %s (%s): its owner appeared as the sandbox's root", dir,
	          fs_name (dir));
	return 0;
}

static void
check_idmap (struct ab_doctor_check_s *c)
{
	struct ab_doctor_child_s r;
	char cwd[4096];

	if (geteuid () != 0) {
		c->ok = false;
		snprintf (c->detail, sizeof c->detail,
		          "only root can idmap a host filesystem; agentbox uses them only when run "
		          "as root");
		snprintf (c->fix, sizeof c->fix,
		          "nothing to do when unprivileged: the sandbox maps your own uid, so "
		          "workspace files stay yours");
		return;
	}
	if (!getcwd (cwd, sizeof cwd))
		snprintf (cwd, sizeof cwd, "/");
	json_object_set_new (c->facts, "tested_on", json_string (cwd));
	json_object_set_new (c->facts, "filesystem", json_string (fs_name (cwd)));
	ab_doctor_in_child (try_idmap, cwd, &r);
	c->ok = r.ok;
	snprintf (c->detail, sizeof c->detail, "%s", r.msg);
	if (c->ok)
		return;
	if (r.step == STEP_USERNS)
		snprintf (c->fix, sizeof c->fix, "needs user namespaces: see that line");
	else if (r.step == STEP_OPEN_TREE)
		snprintf (c->fix, sizeof c->fix,
		          "needs Linux >= 5.2 and root in the host's own namespaces (not in a "
		          "container)");
	else
		snprintf (c->fix, sizeof c->fix,
		          "needs Linux >= 5.12 and a filesystem with idmapping (ext4, xfs, btrfs; "
		          "tmpfs "
		          ">= 6.3); without it, workspace files written by the sandbox belong to "
		          "host uid "
		          "%u",
		          AB_USERNS_HOST_BASE);
}

/* ------------------------------------------------------------------ */
/* cgroups                                                              */

static const char *const cgroup_modes[] = {
	[AB_CGROUP_NONE] = "none",
	[AB_CGROUP_V1] = "v1",
	[AB_CGROUP_HYBRID] = "hybrid",
	[AB_CGROUP_V2] = "v2",
};

static void
cgroup_facts (json_t *facts, const struct ab_cgroup_info_s *info)
{
	json_object_set_new (facts, "mode", json_string (cgroup_modes[info->mode]));
	json_object_set_new (facts, "controllers",
	                     json_pack ("{s:b, s:b, s:b, s:b, s:b, s:b}", "memory", info->memory,
	                                "memory_swap", info->memory_swap, "pids", info->pids, "cpu",
	                                info->cpu, "freezer", info->freezer, "kill", info->kill));
}

static const char *
cgroup_fix (const struct ab_cgroup_info_s *info)
{
	if (info->mode == AB_CGROUP_NONE)
		return "mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup), or boot with systemd";
	if (geteuid () != 0)
		return "run as root, or from a delegated cgroup: systemd-run --user --scope -p "
		       "Delegate=yes agentbox run ...";
	return "enable the memory and pids controllers (cgroup_enable=memory on the kernel command "
	       "line; on v2, +memory +pids in the parent's cgroup.subtree_control)";
}

/* The native backend needs memory and pids for its default limits. */
static void
check_cgroups (struct ab_doctor_check_s *c)
{
	struct ab_cgroup_info_s info;
	ab_error_t err = AB_ERROR_INIT;

	if (ab_cgroup_probe (&info, &err) < 0) {
		c->ok = false;
		snprintf (c->detail, sizeof c->detail, "%s", err.msg);
		snprintf (c->fix, sizeof c->fix, "%s", cgroup_fix (&info));
		return;
	}
	cgroup_facts (c->facts, &info);
	c->ok = info.memory && info.pids;
	/* What holds `agentbox run`'s default limits here (explicit limits
	 * need cgroups; without them an unprivileged run falls back). */
	json_object_set_new (c->facts, "default_limits",
	                     json_string (c->ok             ? "cgroup"
	                                  : geteuid () != 0 ? "rlimit"
	                                                    : "none"));
	snprintf (c->detail, sizeof c->detail, "%s%s", info.detail,
	          c->ok || geteuid () == 0
	                  ? ""
	                  : "; default limits fall back to rlimits (RLIMIT_NPROC per uid in the "
	                    "sandbox, RLIMIT_DATA per process)");
	if (!c->ok)
		snprintf (c->fix, sizeof c->fix, "%s", cgroup_fix (&info));
}

/* ------------------------------------------------------------------ */

static const struct ab_doctor_check_def_s checks[] = {
	{ "user_namespaces", "user namespaces", check_userns },
	{ "network_namespaces", "network namespaces", check_netns },
	{ "seccomp", "seccomp", check_seccomp },
	{ "landlock", "Landlock", check_landlock },
	{ "idmapped_mounts", "idmapped mounts", check_idmap },
	{ "cgroups", "cgroups", check_cgroups },
	{ "kvm", "/dev/kvm", ab_doctor_check_kvm },
	{ "firecracker", "Firecracker", ab_doctor_check_firecracker },
	{ "runsc", "runsc (gVisor)", ab_doctor_check_runsc },
	{ "docker", "Docker daemon", ab_doctor_check_docker },
	{ NULL, NULL, NULL },
};

const struct ab_doctor_check_def_s *
ab_doctor_checks (void)
{
	return checks;
}
