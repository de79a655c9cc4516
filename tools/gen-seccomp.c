/* gen-seccomp: compiles the default seccomp profile (src/isolate/
 * seccomp-profile.c) to classic BPF with libseccomp and prints it as a C
 * header, so the static agent installs it with prctl(PR_SET_SECCOMP) and no
 * library (SECURITY.md item 8).
 *
 *   gen-seccomp > build/gen/seccomp-default.h
 *   gen-seccomp --pfc        libseccomp's readable pseudo-code, for review
 *   gen-seccomp --markdown   the tables as Markdown, for docs/seccomp.md
 *
 * Before printing, the program is run through a small BPF interpreter
 * against every table entry, so a libseccomp that orders rules differently,
 * a typo in the tables or a missing arch check fails the build instead of
 * shipping a filter that says something else than the profile.
 *
 * A build tool: every failure prints one line on stderr and exits 1. */
#include <errno.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isolate/seccomp-profile.h"

#define MAX_NR  1024 /* x86-64 numbers are far below; anything above is a typo */
#define X32_BIT 0x40000000u

__attribute__ ((noreturn, format (printf, 1, 2))) static void
fail (const char *fmt, ...)
{
	va_list ap;

	va_start (ap, fmt);
	fputs ("gen-seccomp: ", stderr);
	vfprintf (stderr, fmt, ap);
	fputc ('\n', stderr);
	va_end (ap);
	exit (1);
}

/* ---- from the tables to libseccomp ---------------------------------- */

static char unknown_names[512]; /* names this libseccomp does not know, for the note */
static bool unknown_nr[MAX_NR];

/* The syscall number, checked against libseccomp's own table.  A name that
 * the installed libseccomp is too old to know keeps the profile's number
 * (taken from the kernel's syscall_64.tbl), with a note on stderr. */
static int
resolve (const struct ab_seccomp_syscall_s *sc)
{
	int nr = seccomp_syscall_resolve_name_arch (SCMP_ARCH_X86_64, sc->name);

	if (sc->nr < 0 || sc->nr >= MAX_NR)
		fail ("%s: number %d out of range", sc->name, sc->nr);
	if (nr == __NR_SCMP_ERROR) {
		size_t used = strlen (unknown_names);
		if (!unknown_nr[sc->nr])
			snprintf (unknown_names + used, sizeof unknown_names - used, "%s%s",
			          used ? ", " : "", sc->name);
		unknown_nr[sc->nr] = true;
		return sc->nr;
	}
	if (nr != sc->nr)
		fail ("%s: libseccomp says %d, the profile says %d", sc->name, nr, sc->nr);
	return nr;
}

static uint32_t
action_of (enum ab_seccomp_action action, int errnum)
{
	return action == AB_SECCOMP_ALLOW ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO ((uint32_t)errnum);
}

static void
add_rule (scmp_filter_ctx ctx, const char *name, int nr, uint32_t action, unsigned n,
          const struct scmp_arg_cmp *cmp)
{
	int rc;

	/* libseccomp refuses a rule that repeats the default action (EACCES);
	 * the default already gives that answer (clone3's ENOSYS). */
	if (action == SCMP_ACT_ERRNO (AB_SECCOMP_DEFAULT_ERRNO))
		return;
	rc = seccomp_rule_add_exact_array (ctx, action, nr, n, cmp);
	if (rc < 0)
		fail ("cannot add the rule for %s (%d): %s", name, nr, strerror (-rc));
}

/* Each syscall is in one plain table, or only in the argument rules:
 * libseccomp lets an unconditional rule silently swallow the conditional
 * rules of the same syscall, which would undo a deny. */
static void
check_unique (void)
{
	static unsigned char seen[MAX_NR]; /* 1 = plain table, 2 = argument rules */
	int otherwise[MAX_NR] = { 0 };

	for (size_t i = 0; i < ab_seccomp_n_allowed + ab_seccomp_n_denied; i++) {
		const struct ab_seccomp_syscall_s *sc =
		        i < ab_seccomp_n_allowed ? &ab_seccomp_allowed[i]
		                                 : &ab_seccomp_denied[i - ab_seccomp_n_allowed].sc;
		int nr = resolve (sc);
		if (seen[nr])
			fail ("%s is listed twice in the plain tables", sc->name);
		seen[nr] = 1;
	}
	for (size_t i = 0; i < ab_seccomp_n_arg_rules; i++) {
		const struct ab_seccomp_arg_rule_s *r = &ab_seccomp_arg_rules[i];
		int nr = resolve (&r->sc);
		if (seen[nr] == 1)
			fail ("%s has argument rules and a plain entry", r->sc.name);
		seen[nr] = 2;
		if (r->otherwise && otherwise[nr]++)
			fail ("%s has more than one 'otherwise' rule", r->sc.name);
		if (!r->otherwise && (r->n_conds == 0 || r->n_conds > AB_SECCOMP_MAX_CONDS))
			fail ("%s: an argument rule needs 1 to %d conditions", r->sc.name,
			      AB_SECCOMP_MAX_CONDS);
		for (unsigned c = 0; c < r->n_conds; c++)
			if (r->conds[c].arg > 5 || (r->conds[c].value & ~r->conds[c].mask) != 0)
				fail ("%s: condition %u can never match", r->sc.name, c);
	}
}

static void
add_arg_rule (scmp_filter_ctx ctx, const struct ab_seccomp_arg_rule_s *r)
{
	struct scmp_arg_cmp cmp[AB_SECCOMP_MAX_CONDS];
	unsigned n = 0;

	if (r->otherwise) {
		/* An always-true test that libseccomp evaluates after the syscall's
		 * other argument tests: it orders them by argument number, then by
		 * operator, highest first (db.c, _db_chain_lt), so A0 >= 0 comes
		 * last.  verify() proves the order on the exported program. */
		cmp[n++] = SCMP_A0 (SCMP_CMP_GE, 0);
	} else {
		for (unsigned c = 0; c < r->n_conds; c++)
			cmp[n++] = SCMP_CMP (r->conds[c].arg, SCMP_CMP_MASKED_EQ, r->conds[c].mask,
			                     r->conds[c].value);
	}
	add_rule (ctx, r->sc.name, resolve (&r->sc), action_of (r->action, r->errnum), n, cmp);
}

static scmp_filter_ctx
build_filter (void)
{
	scmp_filter_ctx ctx;

	if (seccomp_arch_native () != SCMP_ARCH_X86_64)
		fail ("the profile is for x86-64; this libseccomp's native arch is 0x%x",
		      seccomp_arch_native ());
	/* Only the export is used: do not let the build host's kernel decide
	 * whether KILL_PROCESS (Linux 4.14) may be named. */
	if (seccomp_api_get () < 3 && seccomp_api_set (3) < 0)
		fail ("cannot raise the libseccomp API level to 3");
	ctx = seccomp_init (SCMP_ACT_ERRNO (AB_SECCOMP_DEFAULT_ERRNO));
	if (ctx == NULL)
		fail ("seccomp_init failed");
	/* Only the native arch is in the context: i386 (int $0x80) and x32
	 * (numbers with __X32_SYSCALL_BIT) hit the bad-arch action, and libseccomp
	 * adds the x32 check itself.  Kill, as an old-ABI call is an attack. */
	if (seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0)
		fail ("cannot set the bad-arch action");
	/* A binary search over syscall numbers: about ten jumps per syscall
	 * instead of a walk through a list of three hundred. */
	if (seccomp_attr_set (ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0)
		fail ("cannot set the optimisation level");

	for (size_t i = 0; i < ab_seccomp_n_allowed; i++)
		add_rule (ctx, ab_seccomp_allowed[i].name, resolve (&ab_seccomp_allowed[i]),
		          SCMP_ACT_ALLOW, 0, NULL);
	for (size_t i = 0; i < ab_seccomp_n_denied; i++) {
		const struct ab_seccomp_deny_s *d = &ab_seccomp_denied[i];
		add_rule (ctx, d->sc.name, resolve (&d->sc), SCMP_ACT_ERRNO ((uint32_t)d->errnum),
		          0, NULL);
	}
	for (size_t i = 0; i < ab_seccomp_n_arg_rules; i++)
		add_arg_rule (ctx, &ab_seccomp_arg_rules[i]);
	return ctx;
}

static struct sock_filter *
export_bpf (scmp_filter_ctx ctx, size_t *len)
{
	struct sock_filter *prog;
	struct stat st;
	int fd = memfd_create ("seccomp-bpf", MFD_CLOEXEC);
	int rc;

	if (fd < 0)
		fail ("memfd_create: %s", strerror (errno));
	rc = seccomp_export_bpf (ctx, fd);
	if (rc < 0)
		fail ("seccomp_export_bpf: %s", strerror (-rc));
	if (fstat (fd, &st) < 0)
		fail ("fstat: %s", strerror (errno));
	if (st.st_size <= 0 || st.st_size % sizeof *prog != 0
	    || st.st_size / sizeof *prog > BPF_MAXINSNS)
		fail ("libseccomp exported %lld bytes, not a usable program",
		      (long long)st.st_size);
	prog = malloc ((size_t)st.st_size);
	if (prog == NULL)
		fail ("out of memory");
	if (pread (fd, prog, (size_t)st.st_size, 0) != st.st_size)
		fail ("reading the exported program back failed");
	close (fd);
	*len = (size_t)st.st_size / sizeof *prog;
	return prog;
}

/* ---- checking the program against the tables ------------------------ */

/* Runs classic BPF the way the kernel's seccomp does, for the instructions
 * libseccomp emits.  Jumps only go forward, so the loop ends. */
static uint32_t
run_bpf (const struct sock_filter *prog, size_t len, const struct seccomp_data *d)
{
	uint32_t a = 0;
	size_t pc = 0;

	while (pc < len) {
		const struct sock_filter *in = &prog[pc++];
		switch (in->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (in->k % 4 != 0 || in->k > sizeof *d - 4)
				fail ("self-check: load from offset %u", in->k);
			memcpy (&a, (const char *)d + in->k, sizeof a);
			break;
		case BPF_ALU | BPF_AND | BPF_K: a &= in->k; break;
		case BPF_JMP | BPF_JA: pc += in->k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += a == in->k ? in->jt : in->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += a > in->k ? in->jt : in->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += a >= in->k ? in->jt : in->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (a & in->k) ? in->jt : in->jf; break;
		case BPF_RET | BPF_K: return in->k;
		default:
			fail ("self-check: instruction %zu has opcode 0x%04x, unknown to the "
			      "checker",
			      pc - 1, in->code);
		}
	}
	fail ("self-check: the program runs off its end");
}

struct prog_s {
	const struct sock_filter *insns;
	size_t len;
};

static void
expect (const struct prog_s *p, uint32_t arch, uint32_t nr, const uint64_t args[6], uint32_t want,
        const char *what)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = arch };
	uint32_t got;

	if (args != NULL)
		memcpy (d.args, args, sizeof d.args);
	got = run_bpf (p->insns, p->len, &d);
	if (got != want)
		fail ("self-check: %s (nr 0x%x): the program answers 0x%08x, the profile 0x%08x",
		      what, nr, got, want);
}

static uint32_t
ret_of (enum ab_seccomp_action action, int errnum)
{
	return action == AB_SECCOMP_ALLOW
	               ? SECCOMP_RET_ALLOW
	               : SECCOMP_RET_ERRNO | ((uint32_t)errnum & SECCOMP_RET_DATA);
}

static bool
rule_matches (const struct ab_seccomp_arg_rule_s *r, const uint64_t args[6])
{
	if (r->otherwise)
		return false;
	for (unsigned c = 0; c < r->n_conds; c++)
		if ((args[r->conds[c].arg] & r->conds[c].mask) != r->conds[c].value)
			return false;
	return true;
}

/* What the profile says for nr with these arguments: the answer of the
 * matching rules (which must agree), else the otherwise rule, else the
 * default. */
static uint32_t
profile_answer (int nr, const uint64_t args[6])
{
	const struct ab_seccomp_arg_rule_s *match = NULL, *otherwise = NULL;

	for (size_t i = 0; i < ab_seccomp_n_arg_rules; i++) {
		const struct ab_seccomp_arg_rule_s *r = &ab_seccomp_arg_rules[i];
		if (r->sc.nr != nr)
			continue;
		if (r->otherwise)
			otherwise = r;
		else if (rule_matches (r, args)) {
			if (match
			    && ret_of (match->action, match->errnum)
			               != ret_of (r->action, r->errnum))
				fail ("%s: rules '%s' and '%s' overlap with different answers",
				      r->sc.name, match->why, r->why);
			match = r;
		}
	}
	if (match == NULL)
		match = otherwise;
	return match ? ret_of (match->action, match->errnum)
	             : SECCOMP_RET_ERRNO | AB_SECCOMP_DEFAULT_ERRNO;
}

/* Probes every argument rule with arguments that satisfy it (the bits it
 * does not look at filled with a pattern, high halves included) and checks
 * the program gives the profile's answer; an otherwise rule must be reached
 * by at least one probe that no other rule matches. */
static void
verify_arg_rules (const struct prog_s *p)
{
	static const uint64_t fill[] = { 0, UINT64_C (0xa5a5a5a5a5a5a5a5),
		                         UINT64_C (0x5a5a5a5a5a5a5a5a), ~UINT64_C (0) };

	for (size_t i = 0; i < ab_seccomp_n_arg_rules; i++) {
		const struct ab_seccomp_arg_rule_s *r = &ab_seccomp_arg_rules[i];
		bool reached = false;
		for (size_t f = 0; f < sizeof fill / sizeof fill[0]; f++) {
			uint64_t args[6];
			uint32_t want;
			for (int a = 0; a < 6; a++)
				args[a] = fill[f];
			for (unsigned c = 0; c < r->n_conds; c++)
				args[r->conds[c].arg] =
				        (fill[f] & ~r->conds[c].mask) | r->conds[c].value;
			want = profile_answer (r->sc.nr, args);
			reached |= want == ret_of (r->action, r->errnum);
			expect (p, AUDIT_ARCH_X86_64, (uint32_t)r->sc.nr, args, want, r->why);
		}
		if (!reached)
			fail ("self-check: no probe reaches the rule '%s' of %s", r->why,
			      r->sc.name);
	}
}

static void
verify (const struct prog_s *p)
{
	static const uint64_t junk[6] = { ~UINT64_C (0),     1, UINT64_C (0xdead00005412), 0, 0x80,
		                          UINT64_C (1) << 63 };
	bool named[MAX_NR] = { false };

	for (size_t i = 0; i < ab_seccomp_n_allowed; i++) {
		named[ab_seccomp_allowed[i].nr] = true;
		expect (p, AUDIT_ARCH_X86_64, (uint32_t)ab_seccomp_allowed[i].nr, junk,
		        SECCOMP_RET_ALLOW, ab_seccomp_allowed[i].name);
	}
	for (size_t i = 0; i < ab_seccomp_n_denied; i++) {
		const struct ab_seccomp_deny_s *d = &ab_seccomp_denied[i];
		named[d->sc.nr] = true;
		expect (p, AUDIT_ARCH_X86_64, (uint32_t)d->sc.nr, junk,
		        ret_of (AB_SECCOMP_ERRNO, d->errnum), d->sc.name);
	}
	for (size_t i = 0; i < ab_seccomp_n_arg_rules; i++)
		named[ab_seccomp_arg_rules[i].sc.nr] = true;
	verify_arg_rules (p);

	for (uint32_t nr = 0; nr < MAX_NR; nr++) {
		if (!named[nr])
			expect (p, AUDIT_ARCH_X86_64, nr, junk,
			        SECCOMP_RET_ERRNO | AB_SECCOMP_DEFAULT_ERRNO, "unlisted syscall");
		/* x32 numbers, and the x32-only range 512-547 */
		expect (p, AUDIT_ARCH_X86_64, nr | X32_BIT, junk, SECCOMP_RET_KILL_PROCESS,
		        "x32 syscall");
		expect (p, AUDIT_ARCH_I386, nr, junk, SECCOMP_RET_KILL_PROCESS, "i386 syscall");
	}
	expect (p, AUDIT_ARCH_AARCH64, 172, junk, SECCOMP_RET_KILL_PROCESS, "foreign arch");
}

/* ---- output --------------------------------------------------------- */

static void
print_header (const struct prog_s *p)
{
	const struct scmp_version *v = seccomp_version ();

	printf ("/* Generated by tools/gen-seccomp from src/isolate/seccomp-profile.c: do not "
	        "edit.\n"
	        " *\n"
	        " * agentbox default seccomp profile, version %d, x86-64 native ABI only;\n"
	        " * compiled with libseccomp %u.%u.%u.  %zu syscalls allowed, %zu denied,\n"
	        " * %zu argument rules; any other syscall fails with errno %d.\n"
	        " * See docs/seccomp.md. */\n",
	        AB_SECCOMP_PROFILE_VERSION, v->major, v->minor, v->micro, ab_seccomp_n_allowed,
	        ab_seccomp_n_denied, ab_seccomp_n_arg_rules, AB_SECCOMP_DEFAULT_ERRNO);
	printf ("#ifndef AB_GEN_SECCOMP_DEFAULT_H\n#define AB_GEN_SECCOMP_DEFAULT_H\n\n#include "
	        "<linux/filter.h>\n\n");
	printf ("#define AB_SECCOMP_DEFAULT_VERSION %d\n#define AB_SECCOMP_DEFAULT_LEN %zu\n\n",
	        AB_SECCOMP_PROFILE_VERSION, p->len);
	printf ("__attribute__ ((unused)) static const struct sock_filter "
	        "ab_seccomp_default_filter[%zu] = {\n",
	        p->len);
	for (size_t i = 0; i < p->len; i++)
		printf ("\t{0x%04x, %u, %u, 0x%08" PRIx32 "},\n", p->insns[i].code, p->insns[i].jt,
		        p->insns[i].jf, (uint32_t)p->insns[i].k);
	printf ("};\n\n#endif\n");
	if (fflush (stdout) != 0 || ferror (stdout))
		fail ("writing the header failed");
}

static void
print_cond (const struct ab_seccomp_cond_s *c)
{
	if (c->mask == 0xffffffff)
		printf ("arg%u == 0x%" PRIx64, c->arg, c->value);
	else if (c->mask == c->value)
		printf ("arg%u has 0x%" PRIx64, c->arg, c->value);
	else if (c->value == 0)
		printf ("arg%u has none of 0x%" PRIx64, c->arg, c->mask);
	else
		printf ("arg%u & 0x%" PRIx64 " == 0x%" PRIx64, c->arg, c->mask, c->value);
}

/* Table cells: a '|' would end the cell. */
static void
print_cell (const char *text)
{
	for (; *text; text++)
		printf ("%s%c", *text == '|' ? "\\" : "", *text);
}

static void
print_markdown (void)
{
	printf ("<!-- generated by `gen-seccomp --markdown` (profile version %d) -->\n\n",
	        AB_SECCOMP_PROFILE_VERSION);
	printf ("### Denied\n\n| syscall | errno | why |\n|---|---|---|\n");
	for (size_t i = 0; i < ab_seccomp_n_denied; i++) {
		printf ("| `%s` | %s | ", ab_seccomp_denied[i].sc.name,
		        strerrorname_np (ab_seccomp_denied[i].errnum));
		print_cell (ab_seccomp_denied[i].why);
		printf (" |\n");
	}
	printf ("\n### Decided on the arguments\n\n| syscall | when | answer | why "
	        "|\n|---|---|---|---|\n");
	for (size_t i = 0; i < ab_seccomp_n_arg_rules; i++) {
		const struct ab_seccomp_arg_rule_s *r = &ab_seccomp_arg_rules[i];
		printf ("| `%s` | ", r->sc.name);
		if (r->otherwise)
			printf ("otherwise");
		for (unsigned c = 0; c < r->n_conds; c++) {
			printf ("%s`", c ? " and " : "");
			print_cond (&r->conds[c]);
			printf ("`");
		}
		printf (" | %s | ",
		        r->action == AB_SECCOMP_ALLOW ? "allow" : strerrorname_np (r->errnum));
		print_cell (r->why);
		printf (" |\n");
	}
	printf ("\n### Allowed whatever the arguments (%zu)\n\n", ab_seccomp_n_allowed);
	for (size_t i = 0; i < ab_seccomp_n_allowed; i++)
		printf ("`%s`%s", ab_seccomp_allowed[i].name,
		        i + 1 < ab_seccomp_n_allowed ? ", " : ".\n");
}

int
main (int argc, char **argv)
{
	scmp_filter_ctx ctx;
	struct prog_s p;
	size_t len;

	if (argc > 2
	    || (argc == 2 && strcmp (argv[1], "--pfc") != 0 && strcmp (argv[1], "--markdown") != 0))
		fail ("usage: gen-seccomp [--pfc | --markdown] > seccomp-default.h");
	check_unique ();
	if (argc == 2 && strcmp (argv[1], "--markdown") == 0) {
		print_markdown ();
		return 0;
	}
	ctx = build_filter ();
	if (unknown_names[0])
		fprintf (stderr,
		         "gen-seccomp: note: libseccomp does not know %s; used the profile's "
		         "x86-64 numbers\n",
		         unknown_names);
	if (argc == 2) {
		int rc = seccomp_export_pfc (ctx, STDOUT_FILENO);
		seccomp_release (ctx);
		return rc < 0 ? 1 : 0;
	}
	p.insns = export_bpf (ctx, &len);
	p.len = len;
	seccomp_release (ctx);
	verify (&p);
	print_header (&p);
	free ((void *)p.insns);
	return 0;
}
