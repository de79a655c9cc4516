/* gVisor's compatibility shim (tools/statx-shim.c): Debian's runsc
 * (2022-12) answers EINVAL to statx and fstatat with AT_NO_AUTOMOUNT, which
 * coreutils always passes, so `ls DIR`, `ls -l` and `stat` fail there.
 * With `--preload PATH` the agent puts PATH first in every command's
 * LD_PRELOAD; the shim drops the flag (there is no automounter under
 * gVisor, so it changes nothing else).  Static binaries and setuid
 * programs ignore LD_PRELOAD, as they ignore any library. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

static const char *preload;

void
ab_agent_set_preload (const char *path)
{
	preload = path;
}

/* env with LD_PRELOAD=preload[:old] (the last LD_PRELOAD entry replaced, or
 * one appended); env itself when there is no shim or no memory.  A new
 * vector borrows env's other strings: free it with ab_agent_env_free. */
char **
ab_agent_env_with_preload (char **env)
{
	size_t n = 0, at = (size_t)-1;
	char **out;

	if (!preload)
		return env;
	for (; env && env[n]; n++)
		if (strncmp (env[n], "LD_PRELOAD=", 11) == 0)
			at = n;
	out = calloc (n + 2, sizeof *out);
	if (!out)
		return env;
	for (size_t i = 0; i < n; i++)
		out[i] = env[i];
	if (at == (size_t)-1) {
		at = n;
		out[at] = NULL;
	}
	size_t len = strlen (preload) + 12 + (out[at] ? strlen (out[at]) : 0);
	char *kv = malloc (len + 1);
	if (!kv) {
		free (out);
		return env;
	}
	strcpy (kv, "LD_PRELOAD=");
	strcat (kv, preload);
	if (out[at] && out[at][11]) {
		strcat (kv, ":");
		strcat (kv, out[at] + 11);
	}
	out[at] = kv;
	return out;
}

void
ab_agent_env_free (char **env)
{
	size_t last = (size_t)-1;

	for (size_t i = 0; env[i]; i++)
		if (strncmp (env[i], "LD_PRELOAD=", 11) == 0)
			last = i;
	if (last != (size_t)-1)
		free (env[last]);
	free (env);
}
