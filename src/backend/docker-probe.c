/* Does the Docker backend work here?  Only a trial run decides (the issue:
 * a binary on PATH or a non-empty line of template output is not a probe;
 * Docker prints `<no value>` or an empty map for a runtime that is not
 * configured).  Cheap checks first, each naming what is missing: the
 * client, root, the daemon; then the functional probe (a sandbox runs
 * `true` through its agent).  What `docker info` says about the runtimes
 * only adds to the explanation. */
#include "backend/docker-internal.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define CHEAP_TIMEOUT_MS 10000

const char *
ab_docker_client (void)
{
	const char *c = getenv ("AGENTBOX_DOCKER");
	return c && c[0] ? c : "docker";
}

void
ab_docker_first_line (const char *text, char *out, size_t cap)
{
	size_t n;

	while (*text && isspace ((unsigned char)*text))
		text++;
	n = strcspn (text, "\n");
	while (n > 0 && isspace ((unsigned char)text[n - 1]))
		n--;
	snprintf (out, cap, "%.*s", (int)n, text);
}

/* Does a JSON value hold anything: a non-empty string or `true`, at any
 * depth?  (`{}`, `{"path":""}`, `null` do not.) */
static bool
json_has_something (const json_t *v)
{
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_string (v))
		return json_string_length (v) > 0;
	if (json_is_true (v))
		return true;
	if (json_is_object (v)) {
		json_object_foreach ((json_t *)v, key, x)
		{
			if (json_has_something (x))
				return true;
		}
	}
	if (json_is_array (v)) {
		json_array_foreach (v, i, x)
		{
			if (json_has_something (x))
				return true;
		}
	}
	return false;
}

/* Go's %v of a struct or map: `{runc [] <nil>}`, `{{ []  map[]} map[]}`,
 * `map[path:/usr/bin/runsc]`.  Something is there when a word is left
 * once brackets, `map`, `<nil>`, `<no value>` and empty `key:` are gone. */
static bool
go_value_has_something (char *text)
{
	/* Blanked, but for a map's opening bracket (a separator anyway). */
	static const struct {
		const char *word;
		size_t blank;
	} nil_words[] = { { "<no value>", 10 }, { "<nil>", 5 }, { "map[", 3 } };
	char *save = NULL;

	for (size_t i = 0; i < sizeof nil_words / sizeof *nil_words; i++)
		for (char *p = strstr (text, nil_words[i].word); p;
		     p = strstr (p, nil_words[i].word))
			memset (p, ' ', nil_words[i].blank);
	for (char *w = strtok_r (text, "{}[] \t\r\n", &save); w;
	     w = strtok_r (NULL, "{}[] \t\r\n", &save)) {
		size_t key = strspn (w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_");
		if (key > 0 && w[key] == ':')
			w += key + 1; /* a map's key: only its value counts */
		if (*w)
			return true;
	}
	return false;
}

bool
ab_docker_runtime_answer_configured (const char *answer)
{
	cleanup_free char *copy = NULL;
	json_t *j;
	bool r;

	if (!answer)
		return false;
	j = json_loads (answer, JSON_DECODE_ANY, NULL);
	if (j) {
		r = json_has_something (j);
		json_decref (j);
		return r;
	}
	copy = xstrdup (answer);
	return go_value_has_something (copy);
}

bool
ab_docker_runtime_names (const char *text, char *out, size_t cap)
{
	json_t *j = json_loads (text ? text : "", JSON_DECODE_ANY, NULL);
	const char *key;
	json_t *v;
	size_t used = 0;

	if (cap)
		out[0] = '\0';
	if (!json_is_object (j)) {
		json_decref (j);
		return false;
	}
	json_object_foreach (j, key, v)
	{
		int w = snprintf (out + used, cap > used ? cap - used : 0, "%s%s", used ? " " : "",
		                  key);
		if (w < 0 || used + (size_t)w >= cap) {
			if (cap)
				out[used] = '\0'; /* whole names only */
			break;
		}
		used += (size_t)w;
	}
	json_decref (j);
	return true;
}

/* The tool's exit status and output; -2 when the client could not be run. */
static int
docker_answer (char *const argv[], char *out, size_t cap)
{
	ab_error_t err = AB_ERROR_INIT;
	int r = ab_run_tool (argv, out, cap, CHEAP_TIMEOUT_MS, &err);
	if (r < 0)
		snprintf (out, cap, "%s", err.msg);
	return r < 0 && err.errnum == ENOENT ? -2 : r;
}

/* Explanation only: which runtimes the daemon has, and whether gVisor's is
 * one of them (a runtime Docker does not know prints `<no value>`). */
static void
runtime_facts (const char *client, char *facts, size_t cap)
{
	char *info[] = { (char *)client, (char *)"info", (char *)"--format",
		         (char *)"{{json .Runtimes}}\n{{index .Runtimes \"runsc\"}}", NULL };
	char out[2048], names[160];
	char *nl;
	size_t used = strlen (facts);

	if (docker_answer (info, out, sizeof out) != 0 || !(nl = strchr (out, '\n')))
		return;
	*nl = '\0';
	if (ab_docker_runtime_names (out, names, sizeof names))
		snprintf (facts + used, cap - used, ", runtimes: %s (runsc %s)", names,
		          ab_docker_runtime_answer_configured (nl + 1) ? "configured"
		                                                       : "not configured");
}

/* Cheap checks; 0 with facts for the explanation, -1 with the reason. */
static int
cheap_checks (char *facts, size_t cap, struct ab_probe_result_s *res)
{
	const char *client = ab_docker_client ();
	char *version[] = { (char *)client, (char *)"version", (char *)"--format",
		            (char *)"{{.Server.Version}} (API {{.Server.APIVersion}})", NULL };
	const char *host = getenv ("DOCKER_HOST");
	char out[1024], line[160];
	int r;

	if (geteuid () != 0) {
		snprintf (res->reason, sizeof res->reason,
		          "needs root (the agent's socket in the container is root's)");
		return -1;
	}
	r = docker_answer (version, out, sizeof out);
	ab_docker_first_line (out, line, sizeof line);
	if (r == -2) {
		snprintf (res->reason, sizeof res->reason,
		          "docker client '%s' not found (install docker.io or set AGENTBOX_DOCKER)",
		          client);
		return -1;
	}
	if (r != 0) {
		snprintf (res->reason, sizeof res->reason, "docker daemon not reachable at %s: %s",
		          host && host[0] ? host : "the default socket", line);
		return -1;
	}
	snprintf (facts, cap, "docker %s", line);
	runtime_facts (client, facts, cap);
	return 0;
}

void
ab_docker_probe (struct ab_probe_result_s *result)
{
	char facts[200] = "", why[sizeof result->reason];

	memset (result, 0, sizeof *result);
	if (cheap_checks (facts, sizeof facts, result) < 0)
		return;
	ab_backend_service_probe (&ab_backend_docker, result);
	snprintf (why, sizeof why, "%s", result->reason);
	snprintf (result->reason, sizeof result->reason, "%s; %s", facts, why);
}
