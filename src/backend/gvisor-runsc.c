/* Running runsc: where it is, what version, the flags every call carries.
 *
 * Every call names the sandbox's own state directory (--root) and the
 * same flags `run` got: runsc re-reads the container's state from --root,
 * and a second runsc using the default /var/run/runsc could see (and
 * delete) other containers.  --network=none: the sandbox has only lo (and
 * runsc's default "sandbox" network fails on this kernel anyway);
 * --host-uds=create: the agent may bind its socket in the host-backed
 * door directory, while connecting to host sockets stays refused;
 * --ignore-cgroups: the keeper already placed runsc in our own group (or
 * none, without limits), and runsc's re-joining of every v1 hierarchy
 * costs an RCU grace period (~15 ms measured) for nothing. */
#include "backend/gvisor-internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define PLATFORM_MAX 16

char *
ab_runsc_find (ab_error_t *err)
{
	const char *env = getenv ("AGENTBOX_RUNSC");
	const char *path = getenv ("PATH");
	cleanup_free char *copy = NULL;
	char *save = NULL;

	if (env && env[0]) {
		if (env[0] != '/' || access (env, X_OK) < 0) {
			ab_error (err, errno, AB_E_NOT_FOUND,
			          "AGENTBOX_RUNSC=%s is not an executable", env);
			return NULL;
		}
		return xstrdup (env);
	}
	copy = xstrdup (path && path[0] ? path
	                                : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin");
	for (char *d = strtok_r (copy, ":", &save); d; d = strtok_r (NULL, ":", &save)) {
		char *c = xasprintf ("%s/runsc", d);
		if (d[0] == '/' && access (c, X_OK) == 0)
			return c;
		free (c);
	}
	/* Debian's package, for a daemon started with a bare PATH. */
	if (access ("/usr/bin/runsc", X_OK) == 0)
		return xstrdup ("/usr/bin/runsc");
	ab_error (err, 0, AB_E_NOT_FOUND, "runsc not found (install Debian's runsc package)");
	return NULL;
}

int
ab_runsc_parse_version (const char *out, char *version, size_t size)
{
	const char *prefix = "runsc version ";
	const char *v, *end;

	if (strncmp (out, prefix, strlen (prefix)) != 0)
		return -1;
	v = out + strlen (prefix);
	end = v;
	while (*end && !isspace ((unsigned char)*end))
		end++;
	if (end == v || *end != '\n' || (size_t)(end - v) >= size)
		return -1;
	/* The OCI runtime-spec version line runsc prints next. */
	if (strncmp (end + 1, "spec: ", 6) != 0)
		return -1;
	memcpy (version, v, (size_t)(end - v));
	version[end - v] = '\0';
	return 0;
}

int
ab_runsc_version (const char *runsc, char *version, size_t size, ab_error_t *err)
{
	char *const argv[] = { (char *)runsc, (char *)"--version", NULL };
	char out[512];
	int st = ab_run_tool (argv, out, sizeof out, AB_GVISOR_TOOL_TIMEOUT_MS, err);

	if (st < 0)
		return -1;
	if (st != 0 || ab_runsc_parse_version (out, version, size) < 0)
		return ab_error (err, 0, AB_E_SYSTEM,
		                 "`%s --version` did not answer as runsc does: %.100s", runsc, out);
	return 0;
}

int
ab_runsc_platform (char **platform, ab_error_t *err)
{
	const char *p = getenv ("AGENTBOX_RUNSC_PLATFORM");

	*platform = NULL;
	if (!p || !p[0])
		return 0;
	for (const char *c = p; *c; c++)
		if (!islower ((unsigned char)*c) || c - p >= PLATFORM_MAX)
			return ab_error (err, 0, AB_E_INVALID,
			                 "AGENTBOX_RUNSC_PLATFORM=%s is not a platform name", p);
	*platform = xstrdup (p);
	return 0;
}

char **
ab_runsc_argv (const struct ab_gvisor_s *g, const char *const *cmd)
{
	char **v = NULL;
	cleanup_free char *root = xasprintf ("--root=%s/state", g->dir);
	cleanup_free char *platform = g->platform ? xasprintf ("--platform=%s", g->platform) : NULL;

	ab_strv_push (&v, g->runsc);
	ab_strv_push (&v, root);
	ab_strv_push (&v, "--network=none");
	ab_strv_push (&v, "--host-uds=create");
	ab_strv_push (&v, "--ignore-cgroups");
	if (platform)
		ab_strv_push (&v, platform);
	/* A layered root's writes go to its host upper layer (root-upper/),
	 * not to a memory overlay of runsc's. */
	if (g->layered)
		ab_strv_push (&v, "--overlay2=none");
	for (size_t i = 0; cmd[i]; i++)
		ab_strv_push (&v, cmd[i]);
	return v;
}

static void
run_quietly (const struct ab_gvisor_s *g, const char *const *cmd)
{
	cleanup_strv char **argv = ab_runsc_argv (g, cmd);
	ab_error_t ignored = AB_ERROR_INIT;

	ab_run_tool (argv, NULL, 0, AB_GVISOR_TOOL_TIMEOUT_MS, &ignored);
}

void
ab_runsc_kill (const struct ab_gvisor_s *g)
{
	const char *const cmd[] = { "kill", "-all", g->cid, "KILL", NULL };
	run_quietly (g, cmd);
}

void
ab_runsc_delete (const struct ab_gvisor_s *g)
{
	const char *const cmd[] = { "delete", "-force", g->cid, NULL };
	run_quietly (g, cmd);
}
