/* bench/alternate: the timing loop behind bench/startup.
 *
 * hyperfine runs one command's batch after another's, so a host that
 * slows down half-way (another build, a CPU frequency change) favours one
 * side.  This runs the commands in turn, A B C A B C ..., so every command
 * sees the same host.
 *
 *   alternate interleave RUNS WARMUP NAME CMD [ARGS...] [::: NAME CMD [ARGS...]]...
 *     one line per command: NAME median_ms p90_ms min_ms max_ms peak_rss_kib
 *     (peak_rss_kib is wait4's ru_maxrss, the largest single process of the
 *     command's tree, maximum over the runs)
 *   alternate burst COUNT ROUNDS NAME CMD [ARGS...] [::: NAME CMD [ARGS...]]...
 *     COUNT back-to-back runs per command, rounds interleaved; one line per
 *     command: NAME median_per_second best_per_second
 *
 * Every command runs with stdin, stdout and stderr on /dev/null (a terminal
 * would make some tools relay it, which is not what is measured) and must
 * exit 0; any failure stops the run with exit status 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 8

extern char **environ;

struct cmd_s {
	const char *name;
	char **argv;
	double *samples; /* ms */
	size_t n;
	long peak_kib;
};

static double
now_ms (void)
{
	struct timespec t;
	clock_gettime (CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One run: spawn, wait, return wall ms; exits on failure. */
static double
run_once (struct cmd_s *c)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	double t0, t1;
	int status, r;
	pid_t pid;

	posix_spawn_file_actions_init (&fa);
	for (int fd = 0; fd < 3; fd++)
		posix_spawn_file_actions_addopen (&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY,
		                                  0);
	t0 = now_ms ();
	r = posix_spawnp (&pid, c->argv[0], &fa, NULL, c->argv, environ);
	posix_spawn_file_actions_destroy (&fa);
	if (r != 0) {
		fprintf (stderr, "alternate: %s: cannot start %s: %s\n", c->name, c->argv[0],
		         strerror (r));
		exit (1);
	}
	while (wait4 (pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			perror ("alternate: wait4");
			exit (1);
		}
	t1 = now_ms ();
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
		fprintf (stderr, "alternate: %s failed (%s %d)\n", c->name,
		         WIFEXITED (status) ? "exit status" : "signal",
		         WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status));
		exit (1);
	}
	if (ru.ru_maxrss > c->peak_kib)
		c->peak_kib = ru.ru_maxrss;
	return t1 - t0;
}

static int
cmp_double (const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static double
percentile (const double *v, size_t n, double p)
{
	size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static double
median (double *v, size_t n)
{
	qsort (v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static size_t
parse_cmds (int argc, char **argv, struct cmd_s *cmds)
{
	size_t n = 0;
	int i = 0;

	while (i < argc) {
		if (n == MAX_CMDS || i + 1 >= argc) {
			fprintf (
			        stderr,
			        "alternate: expected NAME CMD [ARGS...] groups separated by :::\n");
			exit (2);
		}
		cmds[n].name = argv[i];
		cmds[n].argv = &argv[i + 1];
		for (i += 2; i < argc && strcmp (argv[i], ":::") != 0; i++)
			;
		if (i < argc)
			argv[i++] = NULL; /* ends this command's argv */
		n++;
	}
	return n;
}

static void
interleave (struct cmd_s *cmds, size_t n, long runs, long warmup)
{
	for (long w = 0; w < warmup; w++)
		for (size_t c = 0; c < n; c++)
			run_once (&cmds[c]);
	for (size_t c = 0; c < n; c++) {
		cmds[c].samples = calloc ((size_t)runs, sizeof (double));
		cmds[c].peak_kib = 0;
		if (!cmds[c].samples)
			abort ();
	}
	for (long r = 0; r < runs; r++)
		for (size_t c = 0; c < n; c++)
			cmds[c].samples[cmds[c].n++] = run_once (&cmds[c]);
	for (size_t c = 0; c < n; c++) {
		double *v = cmds[c].samples;
		double med = median (v, cmds[c].n); /* sorts v */
		printf ("%s %.3f %.3f %.3f %.3f %ld\n", cmds[c].name, med,
		        percentile (v, cmds[c].n, 90), v[0], v[cmds[c].n - 1], cmds[c].peak_kib);
		free (v);
	}
}

static void
burst (struct cmd_s *cmds, size_t n, long count, long rounds)
{
	for (size_t c = 0; c < n; c++) {
		cmds[c].samples = calloc ((size_t)rounds, sizeof (double));
		if (!cmds[c].samples)
			abort ();
	}
	for (long r = 0; r < rounds; r++)
		for (size_t c = 0; c < n; c++) {
			double t0 = now_ms ();
			for (long k = 0; k < count; k++)
				run_once (&cmds[c]);
			cmds[c].samples[cmds[c].n++] = (double)count / ((now_ms () - t0) / 1e3);
		}
	for (size_t c = 0; c < n; c++) {
		double *v = cmds[c].samples;
		double med = median (v, cmds[c].n);
		printf ("%s %.1f %.1f\n", cmds[c].name, med, v[cmds[c].n - 1]);
		free (v);
	}
}

int
main (int argc, char **argv)
{
	struct cmd_s cmds[MAX_CMDS] = { 0 };
	long a, b;
	size_t n;

	if (argc < 6 || (strcmp (argv[1], "interleave") != 0 && strcmp (argv[1], "burst") != 0)) {
		fprintf (
		        stderr,
		        "usage: alternate interleave RUNS WARMUP NAME CMD... [::: NAME CMD...]...\n"
		        "       alternate burst COUNT ROUNDS NAME CMD... [::: NAME CMD...]...\n");
		return 2;
	}
	a = strtol (argv[2], NULL, 10);
	b = strtol (argv[3], NULL, 10);
	if (a < 1 || a > 100000 || b < 0 || b > 100000) {
		fprintf (stderr, "alternate: counts out of range\n");
		return 2;
	}
	n = parse_cmds (argc - 4, argv + 4, cmds);
	setvbuf (stdout, NULL, _IOLBF, 0);
	if (strcmp (argv[1], "interleave") == 0)
		interleave (cmds, n, a, b);
	else
		burst (cmds, n, a, b < 1 ? 1 : b);
	return 0;
}
