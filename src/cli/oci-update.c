/* agentbox-runc update: a running container's memory, pids and cpu
 * limits, from runc's flags or a `specs.LinuxResources` JSON (`--resources
 * FILE`, `-` for stdin: what the containerd shim and dockerd send).
 *
 * The values go to the groups create made (the state's list), v1 or v2
 * file names by what the directory has.  Memory keeps swap off as at
 * create: on v1 memsw follows memory, and since the kernel keeps memsw >=
 * memory, a rise writes memsw first and a cut writes it second. */
#include "cli/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/parse.h"

struct update_s {
	int64_t memory, pids, quota; /* -1: unchanged; pids 0 or <0 in JSON: unlimited */
	uint64_t period;
};

static bool
has (const char *dir, const char *file)
{
	char path[PATH_MAX];

	snprintf (path, sizeof path, "%s/%s", dir, file);
	return access (path, F_OK) == 0;
}

static int
put (const char *dir, const char *file, const char *value, ab_error_t *err)
{
	char path[PATH_MAX];
	cleanup_close int fd = -1;

	snprintf (path, sizeof path, "%s/%s", dir, file);
	fd = open (path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ab_write_all (fd, value, strlen (value)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s to %s", value, path);
	return 0;
}

static int
memory (const char *dir, int64_t bytes, ab_error_t *err)
{
	char v[32];

	if (bytes > 0)
		snprintf (v, sizeof v, "%" PRId64, bytes);
	else
		snprintf (v, sizeof v, has (dir, "memory.max") ? "max" : "-1");
	if (has (dir, "memory.max"))
		return put (dir, "memory.max", v, err) < 0
		               ? -1
		               : (has (dir, "memory.swap.max") ? put (dir, "memory.swap.max",
		                                                      bytes > 0 ? "0" : "max", err)
		                                               : 0);
	if (!has (dir, "memory.memsw.limit_in_bytes"))
		return put (dir, "memory.limit_in_bytes", v, err);
	/* One order works, whichever way the limit moves. */
	if (put (dir, "memory.memsw.limit_in_bytes", v, err) == 0)
		return put (dir, "memory.limit_in_bytes", v, err);
	ab_error_clear (err);
	if (put (dir, "memory.limit_in_bytes", v, err) < 0)
		return -1;
	return put (dir, "memory.memsw.limit_in_bytes", v, err);
}

static int
cpu (const char *dir, int64_t quota, uint64_t period, ab_error_t *err)
{
	char v[64];

	if (has (dir, "cpu.max")) {
		if (quota > 0)
			snprintf (v, sizeof v, "%" PRId64 " %" PRIu64, quota, period);
		else
			snprintf (v, sizeof v, "max %" PRIu64, period);
		return put (dir, "cpu.max", v, err);
	}
	snprintf (v, sizeof v, "%" PRIu64, period);
	if (put (dir, "cpu.cfs_period_us", v, err) < 0)
		return -1;
	snprintf (v, sizeof v, "%" PRId64, quota > 0 ? quota : -1);
	return put (dir, "cpu.cfs_quota_us", v, err);
}

/* The first of the container's groups with `file`. */
static const char *
group_with (const json_t *dirs, const char *v1, const char *v2)
{
	size_t i;
	json_t *d;

	json_array_foreach (dirs, i, d)
	{
		const char *s = json_string_value (d);
		if (s && (has (s, v1) || has (s, v2)))
			return s;
	}
	return NULL;
}

static int
apply (const struct update_s *u, const json_t *dirs, ab_error_t *err)
{
	const char *m = group_with (dirs, "memory.limit_in_bytes", "memory.max");
	const char *p = group_with (dirs, "pids.max", "pids.max");
	const char *c = group_with (dirs, "cpu.cfs_quota_us", "cpu.max");
	char v[32];

	if ((u->memory >= 0 && !m) || (u->pids >= 0 && !p) || (u->quota >= 0 && !c))
		return ab_error (err, 0, AB_E_INVALID,
		                 "update: the container has no %s group (create sets one up only "
		                 "for the limits its config asks for)",
		                 u->memory >= 0 && !m ? "memory"
		                 : u->pids >= 0 && !p ? "pids"
		                                      : "cpu");
	if (u->memory >= 0 && memory (m, u->memory, err) < 0)
		return -1;
	if (u->pids >= 0) {
		if (u->pids > 0)
			snprintf (v, sizeof v, "%" PRId64, u->pids);
		else
			snprintf (v, sizeof v, "max");
		if (put (p, "pids.max", v, err) < 0)
			return -1;
	}
	if (u->quota >= 0 && cpu (c, u->quota, u->period, err) < 0)
		return -1;
	return 0;
}

static int
from_json (struct update_s *u, const char *file, ab_error_t *err)
{
	json_error_t je;
	json_t *r = strcmp (file, "-") == 0 ? json_loadf (stdin, 0, &je)
	                                    : json_load_file (file, 0, &je);
	json_t *v;

	if (!r)
		return ab_error (err, 0, AB_E_INVALID, "update --resources %s: %s", file, je.text);
	if ((v = json_object_get (json_object_get (r, "memory"), "limit")))
		u->memory = json_integer_value (v) > 0 ? json_integer_value (v) : 0;
	if ((v = json_object_get (json_object_get (r, "pids"), "limit")))
		u->pids = json_integer_value (v) > 0 ? json_integer_value (v) : 0;
	if ((v = json_object_get (json_object_get (r, "cpu"), "quota")))
		u->quota = json_integer_value (v) > 0 ? json_integer_value (v) : 0;
	if ((v = json_object_get (json_object_get (r, "cpu"), "period"))
	    && json_integer_value (v) > 0)
		u->period = (uint64_t)json_integer_value (v);
	json_decref (r);
	return 0;
}

/* --memory takes sizes ("128m"), the others counts; -1 (or 0) lifts a
 * limit, as runc's flags do. */
static int
number (const char *s, bool size, int64_t *out, ab_error_t *err)
{
	uint64_t b;

	if (strcmp (s, "-1") == 0 || strcmp (s, "0") == 0) {
		*out = 0;
		return 0;
	}
	if ((size ? ab_parse_size (s, &b, err) : ab_parse_uint (s, 1, INT64_MAX, &b, err)) < 0)
		return ab_error_wrap (err, "update");
	*out = (int64_t)b;
	return 0;
}

int
ab_oci_cmd_update (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	static const struct option opts[] = {
		{ "resources", required_argument, NULL, 'r' },
		{ "memory", required_argument, NULL, 'm' },
		{ "pids-limit", required_argument, NULL, 'p' },
		{ "cpu-quota", required_argument, NULL, 'q' },
		{ "cpu-period", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct update_s u = { .memory = -1, .pids = -1, .quota = -1, .period = 100000 };
	struct ab_oci_state_s st;
	int o, r;

	optind = 1;
	while ((o = getopt_long (argc, argv, "+r:", opts, NULL)) != -1) {
		int64_t n = 0;
		if (o == 'r')
			r = from_json (&u, optarg, err);
		else if (o == 'm' || o == 'p' || o == 'q' || o == 'P')
			r = number (optarg, o == 'm', &n, err);
		else
			return ab_error (err, 0, AB_E_INVALID,
			                 "update: only --resources, --memory, --pids-limit, "
			                 "--cpu-quota and --cpu-period are supported");
		if (r < 0)
			return -1;
		if (o == 'm')
			u.memory = n;
		else if (o == 'p')
			u.pids = n;
		else if (o == 'q')
			u.quota = n;
		else if (o == 'P' && n > 0)
			u.period = (uint64_t)n;
	}
	if (optind != argc - 1)
		return ab_error (err, 0, AB_E_INVALID, "update: exactly one container id");
	if (ab_oci_state_load (g, argv[optind], &st, err) < 0)
		return -1;
	r = ab_oci_alive (&st) ? apply (&u, st.cgroups, err)
	                       : ab_error (err, 0, AB_E_CONFLICT, "container not running");
	ab_oci_state_free (&st);
	return r;
}
