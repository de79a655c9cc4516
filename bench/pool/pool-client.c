/* bench/pool's timing helper: talks to `agentbox serve` over its unix
 * socket (keep-alive) and prints one "LABEL MICROSECONDS" line per
 * measurement.
 *
 *   pool-client claim SOCK POOL N
 *       N times: wait (untimed) until POOL has a ready entry, then time the
 *       claim ("claim") and claim + first exec of `true` ("claim_exec");
 *       each claimed sandbox is deleted (untimed)
 *   pool-client cold SOCK BODY N
 *       N times: create + first exec of `true` ("cold_exec"), delete untimed
 *   pool-client burst SOCK BODY N
 *       N creates at once, one process and connection each; prints the wall
 *       time of all of them ("burst") and deletes them
 *
 * libc only, as bench/backends-client.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../daemon-http.h"

static char out[1 << 16];

static void
id_of (const char *json, char id[64])
{
	const char *p = strstr (json, "\"id\":");
	id[0] = 0;
	if (p && (p = strchr (p + 5, '"')))
		sscanf (p + 1, "%63[0-9a-f]", id);
}

static void
delete_box (int fd, const char *id)
{
	char path[128];
	snprintf (path, sizeof path, "/v1/sandboxes/%s?force=1", id);
	call (fd, "DELETE", path, NULL, out, sizeof out);
}

static void
exec_true (int fd, const char *id)
{
	char path[128];
	snprintf (path, sizeof path, "/v1/sandboxes/%s/exec", id);
	if (call (fd, "POST", path, "{\"cmd\": [\"true\"], \"wait\": true}", out, sizeof out)
	    != 200) {
		fprintf (stderr, "exec: %s\n", out);
		exit (1);
	}
}

static void
wait_ready (int fd, const char *pool)
{
	char path[128];
	snprintf (path, sizeof path, "/v1/pools/%s", pool);
	for (int i = 0; i < 6000; i++) {
		call (fd, "GET", path, NULL, out, sizeof out);
		const char *r = strstr (out, "\"ready\":");
		if (r && atoi (r + 8) > 0)
			return;
		usleep (10000);
	}
	fprintf (stderr, "pool %s never got ready: %s\n", pool, out);
	exit (1);
}

static void
claim (int fd, const char *pool, int n)
{
	char body[256], id[64];
	snprintf (body, sizeof body, "{\"pool\": \"%s\", \"pool_only\": true}", pool);
	for (int i = 0; i < n; i++) {
		wait_ready (fd, pool);
		long long t0 = now_us ();
		if (call (fd, "POST", "/v1/sandboxes", body, out, sizeof out) != 201) {
			fprintf (stderr, "claim: %s\n", out);
			exit (1);
		}
		long long t1 = now_us ();
		id_of (out, id);
		exec_true (fd, id);
		long long t2 = now_us ();
		printf ("claim %lld\nclaim_exec %lld\n", t1 - t0, t2 - t0);
		delete_box (fd, id);
	}
}

static void
cold (int fd, const char *body, int n)
{
	char id[64];
	for (int i = 0; i < n; i++) {
		long long t0 = now_us ();
		if (call (fd, "POST", "/v1/sandboxes", body, out, sizeof out) != 201) {
			fprintf (stderr, "create: %s\n", out);
			exit (1);
		}
		id_of (out, id);
		exec_true (fd, id);
		printf ("cold_exec %lld\n", now_us () - t0);
		delete_box (fd, id);
	}
}

static void
burst (const char *sock, const char *body, int n)
{
	char (*ids)[64] = mmap (NULL, (size_t)n * 64, PROT_READ | PROT_WRITE,
	                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long long t0 = now_us ();
	int fd;

	for (int i = 0; i < n; i++)
		if (fork () == 0) {
			int c = dial (sock);
			if (call (c, "POST", "/v1/sandboxes", body, out, sizeof out) != 201) {
				fprintf (stderr, "create: %s\n", out);
				_exit (1);
			}
			id_of (out, ids[i]);
			_exit (0);
		}
	for (int i = 0; i < n; i++)
		wait (NULL);
	printf ("burst %lld\n", now_us () - t0);
	fd = dial (sock);
	for (int i = 0; i < n; i++)
		if (ids[i][0])
			delete_box (fd, ids[i]);
}

int
main (int argc, char **argv)
{
	if (argc != 5) {
		fprintf (stderr, "usage: pool-client claim|cold|burst SOCK POOL|BODY N\n");
		return 2;
	}
	setvbuf (stdout, NULL, _IOLBF, 0);
	int n = atoi (argv[4]);
	if (strcmp (argv[1], "burst") == 0)
		burst (argv[2], argv[3], n);
	else if (strcmp (argv[1], "claim") == 0)
		claim (dial (argv[2]), argv[3], n);
	else
		cold (dial (argv[2]), argv[3], n);
	return 0;
}
