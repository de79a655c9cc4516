/* /v1/metrics in the Prometheus text exposition format (version 0.0.4):
 * sandboxes by state, counters of what happened, bytes moved, and latency
 * histograms.  Counters are lock-free atomics. */
#include "daemon/daemon-internal.h"

#include <stdio.h>
#include <string.h>

#include "base/xalloc.h"

static const struct {
	const char *name, *help;
} counters[] = {
	{ "sandboxes_created", "Sandboxes created" },
	{ "sandboxes_deleted", "Sandboxes deleted" },
	{ "sandboxes_expired", "Sandboxes removed when their TTL expired" },
	{ "sandboxes_died", "Sandboxes whose agent or monitor ended on its own" },
	{ "execs", "Processes started" },
	{ "exec_stdout_bytes", "Bytes of process stdout sent to clients" },
	{ "exec_stderr_bytes", "Bytes of process stderr sent to clients" },
	{ "exec_stdin_bytes", "Bytes written to process stdin" },
	{ "file_read_bytes", "Bytes of files downloaded" },
	{ "file_write_bytes", "Bytes of files uploaded" },
};
#define N_COUNTERS (sizeof counters / sizeof *counters)
static uint64_t counter_values[N_COUNTERS];

static const int statuses[] = { 200, 201, 204, 101, 400, 401, 403, 404, 405,
	                        409, 413, 429, 431, 500, 501, 503, 505 };
#define N_STATUSES (sizeof statuses / sizeof *statuses)
static uint64_t status_counts[N_STATUSES + 1]; /* last: other */

static const double bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	                         0.1,    0.25,  0.5,    1,     2.5,  5,     10 };
#define N_BOUNDS (sizeof bounds / sizeof *bounds)
static const struct {
	const char *name, *help;
} hists[AB_M_N_HIST] = {
	[AB_M_CREATE] = { "sandbox_create_seconds", "Time to create a sandbox" },
	[AB_M_EXEC_START] = { "exec_start_seconds",
	                      "Time from an exec request to its process running" },
	[AB_M_REQUEST] = { "http_request_duration_seconds",
	                   "Time to handle an HTTP request (streams: to the end)" },
};
static struct {
	uint64_t buckets[N_BOUNDS + 1];
	uint64_t count, sum_us;
} hist_values[AB_M_N_HIST];

static void
add (uint64_t *p, uint64_t n)
{
	__atomic_add_fetch (p, n, __ATOMIC_RELAXED);
}

static uint64_t
get (const uint64_t *p)
{
	return __atomic_load_n (p, __ATOMIC_RELAXED);
}

void
ab_metrics_observe (ab_metric_hist h, uint64_t us)
{
	size_t i = 0;
	while (i < N_BOUNDS && (double)us / 1e6 > bounds[i])
		i++;
	add (&hist_values[h].buckets[i], 1);
	add (&hist_values[h].count, 1);
	add (&hist_values[h].sum_us, us);
}

void
ab_metrics_request (int status)
{
	size_t i = 0;
	while (i < N_STATUSES && statuses[i] != status)
		i++;
	add (&status_counts[i], 1);
}

void
ab_metrics_add_bytes (const char *what, uint64_t n)
{
	for (size_t i = 0; i < N_COUNTERS; i++)
		if (strcmp (counters[i].name, what) == 0)
			add (&counter_values[i], n);
}

void
ab_metrics_inc (const char *what)
{
	ab_metrics_add_bytes (what, 1);
}

static void
render_hist (FILE *f, ab_metric_hist h)
{
	uint64_t cum = 0;

	fprintf (f, "# HELP agentbox_%s %s\n# TYPE agentbox_%s histogram\n", hists[h].name,
	         hists[h].help, hists[h].name);
	for (size_t i = 0; i < N_BOUNDS; i++) {
		cum += get (&hist_values[h].buckets[i]);
		fprintf (f, "agentbox_%s_bucket{le=\"%g\"} %llu\n", hists[h].name, bounds[i],
		         (unsigned long long)cum);
	}
	cum += get (&hist_values[h].buckets[N_BOUNDS]);
	fprintf (f, "agentbox_%s_bucket{le=\"+Inf\"} %llu\n", hists[h].name,
	         (unsigned long long)cum);
	fprintf (f, "agentbox_%s_sum %.6f\nagentbox_%s_count %llu\n", hists[h].name,
	         (double)get (&hist_values[h].sum_us) / 1e6, hists[h].name,
	         (unsigned long long)get (&hist_values[h].count));
}

char *
ab_metrics_render (struct ab_daemon_s *d)
{
	unsigned by_state[4];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream (&text, &len);

	ab_registry_counts (d, by_state);
	fputs ("# HELP agentbox_sandboxes Sandboxes by state\n# TYPE agentbox_sandboxes gauge\n",
	       f);
	for (int s = 0; s < 4; s++)
		fprintf (f, "agentbox_sandboxes{state=\"%s\"} %u\n",
		         ab_box_state_name ((ab_box_state)s), by_state[s]);
	fputs ("# HELP agentbox_connections Open API connections\n# TYPE agentbox_connections "
	       "gauge\n",
	       f);
	fprintf (f, "agentbox_connections %u\n", ab_http_server_conns (d->http));
	for (size_t i = 0; i < N_COUNTERS; i++)
		fprintf (f,
		         "# HELP agentbox_%s_total %s\n# TYPE agentbox_%s_total "
		         "counter\nagentbox_%s_total %llu\n",
		         counters[i].name, counters[i].help, counters[i].name, counters[i].name,
		         (unsigned long long)get (&counter_values[i]));
	fputs ("# HELP agentbox_http_responses_total HTTP responses by status; 4xx and 5xx are the "
	       "errors\n"
	       "# TYPE agentbox_http_responses_total counter\n",
	       f);
	for (size_t i = 0; i <= N_STATUSES; i++) {
		if (i < N_STATUSES)
			fprintf (f, "agentbox_http_responses_total{code=\"%d\"} %llu\n",
			         statuses[i], (unsigned long long)get (&status_counts[i]));
		else
			fprintf (f, "agentbox_http_responses_total{code=\"other\"} %llu\n",
			         (unsigned long long)get (&status_counts[i]));
	}
	for (int h = 0; h < AB_M_N_HIST; h++)
		render_hist (f, (ab_metric_hist)h);
	ab_pool_metrics_render (d, f);
	fclose (f);
	return text;
}
