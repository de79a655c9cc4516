/* The default seccomp profile of the native sandbox, as data (SECURITY.md
 * item 8).
 *
 * Nothing here calls libseccomp: tools/gen-seccomp.c turns these tables into
 * classic BPF at build time and the static agent installs the result
 * (build/gen/seccomp-default.h) with prctl(PR_SET_SECCOMP) right before it
 * executes an untrusted command.  The unit test and docs/seccomp.md read the
 * same tables.
 *
 * Shape of the filter:
 *   - x86-64 native ABI only; any other audit arch (i386 through int $0x80)
 *     and x32 numbers (nr | __X32_SYSCALL_BIT) kill the process;
 *   - ab_seccomp_allowed[]: allowed whatever the arguments;
 *   - ab_seccomp_denied[]: refused with a chosen errno, each with its reason;
 *   - ab_seccomp_arg_rules[]: syscalls decided on their arguments (clone,
 *     unshare, ioctl, personality, socket);
 *   - everything else: ENOSYS, so a newer libc treats the syscall as missing
 *     and falls back to an older one instead of failing. */
#ifndef AB_ISOLATE_SECCOMP_PROFILE_H
#define AB_ISOLATE_SECCOMP_PROFILE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bump on every change of the tables; printed into the generated header. */
#define AB_SECCOMP_PROFILE_VERSION 1

/* The filter's answer to a syscall that no table names. */
#define AB_SECCOMP_DEFAULT_ERRNO ENOSYS

/* One syscall, by its name (what libseccomp resolves) and its x86-64 number
 * (from the kernel headers, or from arch/x86/entry/syscalls/syscall_64.tbl
 * for syscalls newer than Debian 12's headers).  The generator checks that
 * the two agree wherever libseccomp knows the name. */
struct ab_seccomp_syscall_s {
	const char *name;
	int nr;
};

/* Refused whatever the arguments. */
struct ab_seccomp_deny_s {
	struct ab_seccomp_syscall_s sc;
	int errnum;
	const char *why;
};

/* (args[arg] & mask) == value.  Arguments the kernel reads as a 32-bit int
 * (ioctl's request, personality, socket's domain) are compared on their low
 * 32 bits only: comparing all 64 lets junk in the high half slip past a deny
 * rule (CVE-2019-10063). */
struct ab_seccomp_cond_s {
	unsigned arg;
	uint64_t mask;
	uint64_t value;
};

enum ab_seccomp_action {
	AB_SECCOMP_ALLOW,
	AB_SECCOMP_ERRNO,
};

#define AB_SECCOMP_MAX_CONDS 2

/* A rule on a syscall's arguments.  All conditions must hold.  An
 * `otherwise` rule has no conditions: it applies when no other rule of the
 * same syscall matches (the generator checks that a syscall has at most
 * one, and that the other rules of a syscall never disagree on one set of
 * arguments). */
struct ab_seccomp_arg_rule_s {
	struct ab_seccomp_syscall_s sc;
	enum ab_seccomp_action action;
	int errnum; /* for AB_SECCOMP_ERRNO */
	bool otherwise;
	unsigned n_conds;
	struct ab_seccomp_cond_s conds[AB_SECCOMP_MAX_CONDS];
	const char *why;
};

extern const struct ab_seccomp_syscall_s ab_seccomp_allowed[];
extern const size_t ab_seccomp_n_allowed;

extern const struct ab_seccomp_deny_s ab_seccomp_denied[];
extern const size_t ab_seccomp_n_denied;

extern const struct ab_seccomp_arg_rule_s ab_seccomp_arg_rules[];
extern const size_t ab_seccomp_n_arg_rules;

#endif
