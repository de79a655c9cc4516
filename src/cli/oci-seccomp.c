/* The bundle's linux.seccomp, compiled with libseccomp and loaded on top
 * of our own filter (never instead of it).
 *
 * The kernel runs every filter a process has and takes the most
 * restrictive answer (seccomp(2): KILL > TRAP > ERRNO > TRACE > LOG >
 * ALLOW), so a bundle's profile can only take syscalls away: a stricter
 * one tightens, a looser one changes nothing of ours.  It is compiled
 * where the container's process is forked (init at create, so a bad
 * profile fails `create`; exec before its fork) and loaded last, right
 * before execve, as runc does.
 *
 * As runc: syscall names libseccomp does not know are skipped, a rule
 * whose action is the default action is dropped, and conditions on one
 * argument index given twice become one rule per condition (libseccomp
 * refuses two conditions on one argument in one rule).  Only the native
 * x86-64 ABI is filtered: ours kills every other ABI before the bundle's
 * filter is asked.  SCMP_ACT_NOTIFY is refused: there is no listener. */
#include "cli/oci.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define MAX_ARGS 6

struct name_s {
	const char *name;
	uint64_t value;
};

static const struct name_s ops[] = {
	{ "SCMP_CMP_NE", SCMP_CMP_NE },
	{ "SCMP_CMP_LT", SCMP_CMP_LT },
	{ "SCMP_CMP_LE", SCMP_CMP_LE },
	{ "SCMP_CMP_EQ", SCMP_CMP_EQ },
	{ "SCMP_CMP_GE", SCMP_CMP_GE },
	{ "SCMP_CMP_GT", SCMP_CMP_GT },
	{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
};

static int
lookup (const struct name_s *t, size_t n, const char *name, uint64_t *out)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp (t[i].name, name) == 0) {
			*out = t[i].value;
			return 0;
		}
	return -1;
}

/* An action and its errno (errnoRet, else the default's, else EPERM). */
static int
action (const char *name, const json_t *errno_ret, int fallback, uint32_t *out, ab_error_t *err)
{
	int e = json_is_integer (errno_ret) ? (int)json_integer_value (errno_ret) : fallback;

	if (!name)
		return ab_error (err, 0, AB_E_INVALID, "seccomp: an action is required");
	if (strcmp (name, "SCMP_ACT_ALLOW") == 0)
		*out = SCMP_ACT_ALLOW;
	else if (strcmp (name, "SCMP_ACT_ERRNO") == 0)
		*out = SCMP_ACT_ERRNO ((uint16_t)e);
	else if (strcmp (name, "SCMP_ACT_KILL") == 0 || strcmp (name, "SCMP_ACT_KILL_THREAD") == 0)
		*out = SCMP_ACT_KILL;
	else if (strcmp (name, "SCMP_ACT_KILL_PROCESS") == 0)
		*out = SCMP_ACT_KILL_PROCESS;
	else if (strcmp (name, "SCMP_ACT_TRAP") == 0)
		*out = SCMP_ACT_TRAP;
	else if (strcmp (name, "SCMP_ACT_TRACE") == 0)
		*out = SCMP_ACT_TRACE ((uint16_t)e); /* no tracer: the kernel says ENOSYS */
	else if (strcmp (name, "SCMP_ACT_LOG") == 0)
		*out = SCMP_ACT_LOG;
	else if (strcmp (name, "SCMP_ACT_NOTIFY") == 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "seccomp: SCMP_ACT_NOTIFY is not supported (no listener)");
	else
		return ab_error (err, 0, AB_E_INVALID, "seccomp: unknown action %s", name);
	return 0;
}

static int
parse_args (const json_t *args, struct scmp_arg_cmp *cmp, size_t *n, bool *split, ab_error_t *err)
{
	unsigned seen = 0;
	size_t i;
	json_t *a;

	*n = 0;
	*split = false;
	if (json_array_size (args) > MAX_ARGS)
		return ab_error (err, 0, AB_E_INVALID, "seccomp: more than %d conditions",
		                 MAX_ARGS);
	json_array_foreach (args, i, a)
	{
		json_int_t idx = json_integer_value (json_object_get (a, "index"));
		uint64_t op;
		if (idx < 0 || idx >= MAX_ARGS
		    || lookup (ops, sizeof ops / sizeof *ops,
		               json_string_value (json_object_get (a, "op")), &op)
		               < 0)
			return ab_error (err, 0, AB_E_INVALID, "seccomp: bad argument condition");
		*split |= (seen & (1u << idx)) != 0;
		seen |= 1u << idx;
		cmp[*n] = (struct scmp_arg_cmp){
			.arg = (unsigned)idx,
			.op = (enum scmp_compare)op,
			.datum_a = (scmp_datum_t)json_integer_value (json_object_get (a, "value")),
			.datum_b =
			        (scmp_datum_t)json_integer_value (json_object_get (a, "valueTwo")),
		};
		(*n)++;
	}
	return 0;
}

static int
add_rule (scmp_filter_ctx ctx, uint32_t def, const json_t *rule, int def_errno, ab_error_t *err)
{
	struct scmp_arg_cmp cmp[MAX_ARGS];
	uint32_t act;
	size_t i, n;
	bool split;
	json_t *name;

	if (action (json_string_value (json_object_get (rule, "action")),
	            json_object_get (rule, "errnoRet"), def_errno, &act, err)
	            < 0
	    || parse_args (json_object_get (rule, "args"), cmp, &n, &split, err) < 0)
		return -1;
	if (act == def)
		return 0;
	json_array_foreach (json_object_get (rule, "names"), i, name)
	{
		int nr = seccomp_syscall_resolve_name (json_string_value (name) ?: "");
		int r = 0;
		if (nr == __NR_SCMP_ERROR)
			continue;
		if (!split)
			r = seccomp_rule_add_array (ctx, act, nr, (unsigned)n, cmp);
		for (size_t k = 0; split && k < n && r == 0; k++)
			r = seccomp_rule_add_array (ctx, act, nr, 1, &cmp[k]);
		if (r < 0)
			return ab_error (err, -r, AB_E_INVALID, "seccomp: rule for %s",
			                 json_string_value (name));
	}
	return 0;
}

int
ab_oci_seccomp_compile (const json_t *seccomp, void **out, ab_error_t *err)
{
	const json_t *dflt_errno = json_object_get (seccomp, "defaultErrnoRet");
	int def_errno = json_is_integer (dflt_errno) ? (int)json_integer_value (dflt_errno) : EPERM;
	scmp_filter_ctx ctx;
	uint32_t def;
	size_t i;
	json_t *rule, *flag;

	*out = NULL;
	if (!json_is_object (seccomp))
		return 0;
	if (json_string_value (json_object_get (seccomp, "listenerPath")))
		return ab_error (err, 0, AB_E_INVALID,
		                 "seccomp: listenerPath is not supported (no notify listener)");
	if (action (json_string_value (json_object_get (seccomp, "defaultAction")), dflt_errno,
	            EPERM, &def, err)
	    < 0)
		return ab_error_wrap (err, "linux.seccomp.defaultAction");
	if (!(ctx = seccomp_init (def)))
		return ab_error (err, ENOMEM, AB_E_SYSTEM, "seccomp_init");
	/* We set no_new_privs ourselves, before Landlock and our filter. */
	seccomp_attr_set (ctx, SCMP_FLTATR_CTL_NNP, 0);
	json_array_foreach (json_object_get (seccomp, "flags"), i, flag)
	{
		if (strcmp (json_string_value (flag) ?: "", "SECCOMP_FILTER_FLAG_LOG") == 0)
			seccomp_attr_set (ctx, SCMP_FLTATR_CTL_LOG, 1);
		else if (strcmp (json_string_value (flag) ?: "", "SECCOMP_FILTER_FLAG_SPEC_ALLOW")
		         == 0)
			seccomp_attr_set (ctx, SCMP_FLTATR_CTL_SSB, 1);
	}
	json_array_foreach (json_object_get (seccomp, "syscalls"), i, rule)
	{
		if (add_rule (ctx, def, rule, def_errno, err) < 0) {
			seccomp_release (ctx);
			return ab_error_wrap (err, "linux.seccomp.syscalls[%zu]", i);
		}
	}
	*out = ctx;
	return 0;
}

int
ab_oci_seccomp_load (void *filter)
{
	int r;

	if (!filter)
		return 0;
	r = seccomp_load ((scmp_filter_ctx)filter);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

void
ab_oci_seccomp_free (void *filter)
{
	if (filter)
		seccomp_release ((scmp_filter_ctx)filter);
}
