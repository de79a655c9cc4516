/* `agentbox doctor`'s capability checks.  Each one tries the real thing
 * where it can (in a throwaway child when it changes process state:
 * namespaces, seccomp filters, Landlock domains, detached mounts) and says
 * yes or no, why, and for a no what the user can do about it.  No check
 * changes the host beyond its own temporary directories and cgroups. */
#ifndef AB_CLI_DOCTOR_CHECKS_H
#define AB_CLI_DOCTOR_CHECKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct ab_doctor_check_s {
	const char *name;  /* JSON key: "user_namespaces" */
	const char *label; /* text column: "user namespaces" */
	bool ok;
	char detail[512]; /* why yes or no */
	char fix[320];    /* what the user can do about a no; "" when ok */
	json_t *facts;    /* extra machine-readable fields (an object, owned) */
};

struct ab_doctor_check_def_s {
	const char *name;
	const char *label;
	void (*run) (struct ab_doctor_check_s *c);
};

/* Every check in display order, terminated by an entry whose run is NULL. */
const struct ab_doctor_check_def_s *ab_doctor_checks (void);

/* What a forked child reports back. */
struct ab_doctor_child_s {
	bool ok;
	int errnum; /* errno of the step that failed, 0 if none */
	int step;   /* which step failed, numbered by the check; 0 = none */
	char msg[400];
};

/* Run fn in a forked child (bounded by a 10 s alarm) so whatever it
 * changes dies with it; *out is what the child said, or why it died. */
void ab_doctor_in_child (int (*fn) (void *arg, struct ab_doctor_child_s *out), void *arg,
                         struct ab_doctor_child_s *out);
/* For child functions: record "<what>: strerror(errnum)", return -1.
 * Set out->step before a step whose failure needs its own advice. */
int ab_doctor_child_fail (struct ab_doctor_child_s *out, int errnum, const char *fmt, ...)
        __attribute__ ((format (printf, 3, 4)));

/* A sysctl-like file holding one integer: 0, or -errno (-ENOENT = absent). */
int ab_doctor_read_long (const char *path, long *out);

/* Host facilities outside the kernel's namespace features (doctor-host.c). */
void ab_doctor_check_kvm (struct ab_doctor_check_s *c);
void ab_doctor_check_runsc (struct ab_doctor_check_s *c);
void ab_doctor_check_firecracker (struct ab_doctor_check_s *c);
void ab_doctor_check_docker (struct ab_doctor_check_s *c);

#endif
