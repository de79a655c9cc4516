/* `agentbox doctor [--json]`: what this host can do, which backends work
 * and which one `--backend auto` would pick.  Every backend is probed
 * fresh, never from the probe cache: the doctor is where a user looks
 * when a cached answer may be stale.  Exit 0 when at least one backend
 * works, 1 when none does, 125 on bad usage. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/doctor-checks.h"

static const char doctor_usage[] = "usage: agentbox doctor [--json] [--backend NAME]\n";

struct backend_row_s {
	const struct ab_backend_ops_s *ops;
	struct ab_probe_result_s probe;
};

struct report_s {
	struct ab_doctor_check_s *checks;
	size_t n_checks;
	struct backend_row_s *backends;
	size_t n_backends;
	const struct ab_backend_ops_s *pick; /* what auto would choose, NULL if none */
	char kernel[256];
	bool partial; /* --backend: one backend probed, auto's pick not known */
};

/* 1 = --json, 0 = text, -1 = usage error (reported in err), 2 = --help.
 * --backend NAME probes that backend only (*only). */
static int
parse_args (int argc, char **argv, const char **only, ab_error_t *err)
{
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--json") == 0)
			json = 1;
		else if (strcmp (argv[i], "--backend") == 0 && i + 1 < argc) {
			*only = argv[++i];
			if (!ab_backend_find (*only))
				return ab_error (err, 0, AB_E_INVALID,
				                 "doctor: unknown backend '%s'", *only);
		} else if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0)
			return 2;
		else
			return ab_error (err, 0, AB_E_INVALID,
			                 "doctor: unknown %s '%s' (usage: agentbox doctor [--json] "
			                 "[--backend NAME])",
			                 argv[i][0] == '-' ? "option" : "argument", argv[i]);
	}
	return json;
}

static void
run_checks (struct report_s *rep)
{
	const struct ab_doctor_check_def_s *defs = ab_doctor_checks ();

	while (defs[rep->n_checks].run)
		rep->n_checks++;
	rep->checks = xcalloc (rep->n_checks, sizeof *rep->checks);
	for (size_t i = 0; i < rep->n_checks; i++) {
		struct ab_doctor_check_s *c = &rep->checks[i];
		c->name = defs[i].name;
		c->label = defs[i].label;
		c->facts = json_object ();
		defs[i].run (c);
		if (c->ok)
			c->fix[0] = '\0';
	}
}

/* The functional probe of every compiled-in backend, and auto's choice:
 * the strongest one that works. */
static void
run_backends (struct report_s *rep, const char *only)
{
	const struct ab_backend_ops_s *const *all = ab_backends ();
	size_t n = 0;

	while (all[n])
		n++;
	rep->backends = xcalloc (n, sizeof *rep->backends);
	for (size_t i = 0; i < n; i++) {
		struct backend_row_s *b = &rep->backends[rep->n_backends];
		if (only && strcmp (all[i]->name, only) != 0)
			continue;
		rep->n_backends++;
		b->ops = all[i];
		b->ops->probe (&b->probe);
		if (b->probe.works && (!rep->pick || b->ops->strength > rep->pick->strength))
			rep->pick = b->ops;
	}
}

static void
describe_host (struct report_s *rep)
{
	struct utsname u;

	if (uname (&u) == 0)
		snprintf (rep->kernel, sizeof rep->kernel, "%s %s %s", u.sysname, u.release,
		          u.machine);
	else
		snprintf (rep->kernel, sizeof rep->kernel, "unknown");
}

static const struct {
	unsigned bit;
	const char *name;
} features[] = {
	{ AB_BACKEND_ONESHOT, "oneshot" }, { AB_BACKEND_FD_PASSING, "fd-passing" },
	{ AB_BACKEND_LIMITS, "limits" },   { AB_BACKEND_NET_PROXY, "network-proxy" },
	{ AB_BACKEND_PAUSE, "pause" },     { AB_BACKEND_SNAPSHOT, "snapshot" },
};

/* "limits network-proxy ..." (static buffer: doctor is single-threaded). */
static const char *
feature_list (unsigned bits)
{
	static char buf[128];
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof features / sizeof *features; i++)
		if (bits & features[i].bit)
			snprintf (buf + strlen (buf), sizeof buf - strlen (buf), "%s%s",
			          buf[0] ? " " : "", features[i].name);
	return buf[0] ? buf : "-";
}

static void
print_text (const struct report_s *rep)
{
	printf ("agentbox doctor: %s, running as uid %u\n\n", rep->kernel, (unsigned)geteuid ());
	for (size_t i = 0; i < rep->n_checks; i++) {
		const struct ab_doctor_check_s *c = &rep->checks[i];
		printf ("  %-20s %-4s %s\n", c->label, c->ok ? "yes" : "no", c->detail);
		if (!c->ok && c->fix[0])
			printf ("  %-20s %-4s fix: %s\n", "", "", c->fix);
	}
	printf ("\nbackends (each probed now: a real sandbox that runs `true`)\n");
	for (size_t i = 0; i < rep->n_backends; i++) {
		const struct backend_row_s *b = &rep->backends[i];
		printf ("  %-20s %-4s %.1f ms  %s\n", b->ops->name, b->probe.works ? "yes" : "no",
		        (double)b->probe.duration_us / 1000.0, b->probe.reason);
		printf ("  %-20s %-4s wall: %s\n", "", "", b->ops->wall ? b->ops->wall : "-");
		printf ("  %-20s %-4s supports: %s\n", "", "", feature_list (b->ops->features));
	}
	if (rep->partial)
		printf ("\nauto picks: (not computed: only one backend was probed)\n");
	else if (rep->pick)
		printf ("\nauto picks: %s\n", rep->pick->name);
	else
		printf ("\nauto picks: nothing (no backend works on this host)\n");
}

static json_t *
check_json (const struct ab_doctor_check_s *c)
{
	json_t *o = json_pack ("{s:b, s:s, s:o}", "ok", c->ok, "detail", c->detail, "fix",
	                       c->fix[0] ? json_string (c->fix) : json_null ());
	json_object_update (o, c->facts);
	return o;
}

static void
print_json (const struct report_s *rep)
{
	json_t *caps = json_object (), *backends = json_array (), *root;

	for (size_t i = 0; i < rep->n_checks; i++)
		json_object_set_new (caps, rep->checks[i].name, check_json (&rep->checks[i]));
	for (size_t i = 0; i < rep->n_backends; i++) {
		const struct backend_row_s *b = &rep->backends[i];
		json_t *feats = json_array ();
		for (size_t k = 0; k < sizeof features / sizeof *features; k++)
			if (b->ops->features & features[k].bit)
				json_array_append_new (feats, json_string (features[k].name));
		json_array_append_new (
		        backends,
		        json_pack ("{s:s, s:i, s:b, s:f, s:s, s:s, s:o}", "name", b->ops->name,
		                   "strength", b->ops->strength, "works", b->probe.works,
		                   "duration_ms", (double)b->probe.duration_us / 1000.0, "reason",
		                   b->probe.reason, "wall", b->ops->wall ? b->ops->wall : "",
		                   "features", feats));
	}
	root = json_pack ("{s:s, s:i, s:o, s:o, s:o}", "kernel", rep->kernel, "euid",
	                  (int)geteuid (), "capabilities", caps, "backends", backends, "auto",
	                  rep->pick && !rep->partial ? json_string (rep->pick->name)
	                                             : json_null ());
	json_dumpf (root, stdout, JSON_INDENT (2));
	putchar ('\n');
	json_decref (root);
}

static void
free_report (struct report_s *rep)
{
	for (size_t i = 0; i < rep->n_checks; i++)
		json_decref (rep->checks[i].facts);
	free (rep->checks);
	free (rep->backends);
}

int
ab_cmd_doctor (int argc, char **argv)
{
	struct report_s rep = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	const char *only = NULL;
	int mode = parse_args (argc, argv, &only, &err);

	if (mode < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	if (mode == 2) {
		fputs (doctor_usage, stdout);
		return 0;
	}
	describe_host (&rep);
	run_checks (&rep);
	rep.partial = only != NULL;
	run_backends (&rep, only);
	if (mode == 1)
		print_json (&rep);
	else
		print_text (&rep);
	fflush (stdout);
	free_report (&rep);
	return rep.pick ? 0 : 1;
}
