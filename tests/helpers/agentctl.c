/* agentctl: a small CLI over the agent client library (session/agent-client.h),
 * for the integration tests (tests/integration/agent-*.bats) and by hand.
 *
 *   agentctl launch SOCK WORKSPACE        start a service-mode native sandbox
 *                                         (no limits), print its monitor pid
 *   agentctl -s SOCK configure [-r ROOT]... [-w RWPATH]... [-u UID:GID]
 *   agentctl -s SOCK exec [-i] [-t] [-d] [-E] [-e K=V] [-c CWD] [-T TIMEOUT_MS]
 *                         [-g GRACE_MS] [-S BYTES_PER_S] [-u UID:GID] -- CMD...
 *   agentctl -s SOCK attach PID
 *   agentctl -s SOCK stdin PID | closestdin PID | signal PID SIG | resize PID ROWS COLS
 *   agentctl -s SOCK cat PATH | put PATH [MODE] | ls PATH | stat PATH | mkdir PATH
 *                    | rm [-r] PATH | mv FROM TO | ps | port PORT | ping | shutdown [GRACE_MS]
 *   agentctl -s SOCK egress PORT N  listen for egress inside; answer N connections
 *                                  with "egress:" + the line they sent
 *   agentctl -s SOCK raw           send stdin's bytes after the handshake as they
 *                                  are, print the frames that come back
 *   agentctl -s SOCK bench N       N round trips of `true`, print p50/p99
 *
 * Errors print "agentctl: KIND: message" and exit 1; exec exits with the
 * command's status (128+N for signal N, 124 when timed out, 127 when not
 * found).  -E prints events one per line ("stdout N", "stderr N", "exit ...")
 * instead of the bytes. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/native.h"
#include "base/fd.h"
#include "proto/msg.h"
#include "session/agent-client.h"
#include "spec/spec.h"

static const char *sock_path;

static void __attribute__ ((noreturn)) fail (const ab_error_t *e)
{
	fprintf (stderr, "agentctl: %s: %s\n", ab_error_kind_name (e->kind), e->msg);
	exit (1);
}

static void __attribute__ ((noreturn)) usage (void)
{
	fprintf (stderr, "usage: agentctl [-s SOCK] COMMAND ... (see tests/helpers/agentctl.c)\n");
	exit (2);
}

static ab_agent_conn_t *
conn (void)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;

	if (!sock_path)
		usage ();
	if (!(c = ab_agent_connect (sock_path, &err)))
		fail (&err);
	return c;
}

static uint64_t
now_us (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- launch ---------------------------------------------------------------------- */

static int
cmd_launch (int argc, char **argv)
{
	struct ab_spec_s spec;
	struct ab_sandbox_s sb;
	ab_error_t err = AB_ERROR_INIT;

	if (argc != 3)
		usage ();
	ab_spec_init (&spec);
	spec.service_socket = strdup (argv[1]);
	spec.workspace = strdup (argv[2]);
	spec.limits.memory_bytes = spec.limits.pids = 0;
	if (ab_backend_native.create (&spec, NULL, &sb, &err) < 0)
		fail (&err);
	printf ("%d\n", (int)sb.monitor_pid);
	ab_spec_free (&spec);
	return 0;
}

/* ---- configure ------------------------------------------------------------------- */

static void
parse_ids (const char *s, uint32_t *uid, uint32_t *gid)
{
	if (sscanf (s, "%u:%u", uid, gid) != 2)
		usage ();
}

static int
cmd_configure (int argc, char **argv)
{
	char *roots[16] = { 0 }, *rw[16] = { 0 };
	size_t nr = 0, nw = 0;
	struct ab_agent_config_s cfg = { .nofile = 1024 };
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	int o;

	while ((o = getopt (argc, argv, "+r:w:u:")) != -1) {
		if (o == 'r' && nr < 15)
			roots[nr++] = optarg;
		else if (o == 'w' && nw < 15)
			rw[nw++] = optarg;
		else if (o == 'u')
			parse_ids (optarg, &cfg.file_uid, &cfg.file_gid);
		else
			usage ();
	}
	if (!nr)
		roots[nr++] = (char *)"/workspace";
	if (!nw) {
		rw[nw++] = (char *)"/workspace";
		rw[nw++] = (char *)"/tmp";
		rw[nw++] = (char *)"/dev/shm";
	}
	cfg.file_roots = roots;
	cfg.rw_paths = rw;
	c = conn ();
	if (ab_agent_configure (c, &cfg, &err) < 0)
		fail (&err);
	ab_agent_close (c);
	return 0;
}

/* ---- exec and attach --------------------------------------------------------------- */

struct follow_opts_s {
	bool events;
	uint64_t slow_bps; /* read at most this many bytes per second */
};

static int
exit_code (const struct ab_agent_exit_s *x)
{
	if (x->exec_errno)
		return x->exec_errno == ENOENT ? 127 : 126;
	if (x->timed_out)
		return 124;
	if (WIFSIGNALED (x->wait_status))
		return 128 + WTERMSIG (x->wait_status);
	return WEXITSTATUS (x->wait_status);
}

static void
throttle (uint64_t t0, uint64_t bytes, uint64_t bps)
{
	uint64_t due = t0 + bytes * 1000000 / bps, now = now_us ();
	if (due > now)
		usleep ((useconds_t)(due - now));
}

static void
print_event (const struct ab_agent_event_s *ev)
{
	if (ev->kind == AB_AGENT_EV_EXIT)
		printf ("exit status=%d timed_out=%d exec_errno=%d\n", ev->exit.wait_status,
		        ev->exit.timed_out, ev->exit.exec_errno);
	else
		printf ("%s %.*s\n", ev->kind == AB_AGENT_EV_STDOUT ? "stdout" : "stderr",
		        (int)ev->len, (const char *)ev->data);
	fflush (stdout);
}

/* Copy our stdin to the process on a second connection, so this one only follows. */
static pid_t
feed_stdin (uint32_t pid)
{
	pid_t k = fork ();
	if (k == 0) {
		ab_error_t err = AB_ERROR_INIT;
		ab_agent_conn_t *c = conn ();
		char buf[65536];
		ssize_t n;
		while ((n = read (0, buf, sizeof buf)) > 0)
			if (ab_agent_proc_write_stdin (c, pid, buf, (size_t)n, &err) < 0)
				fail (&err);
		if (ab_agent_proc_close_stdin (c, pid, &err) < 0 && err.kind != AB_E_CONFLICT)
			fail (&err);
		_exit (0);
	}
	return k;
}

static int
follow (ab_agent_conn_t *c, struct ab_agent_proc_s *p, const struct follow_opts_s *o)
{
	ab_error_t err = AB_ERROR_INIT;
	uint64_t t0 = now_us (), got = 0;

	for (;;) {
		struct ab_agent_event_s ev;
		if (ab_agent_proc_next_event (c, p, &ev, -1, &err) < 0)
			fail (&err);
		if (o->events)
			print_event (&ev);
		if (ev.kind == AB_AGENT_EV_EXIT)
			return exit_code (&ev.exit);
		if (!o->events
		    && ab_write_all (ev.kind == AB_AGENT_EV_STDOUT ? 1 : 2, ev.data, ev.len) < 0)
			exit (1);
		got += ev.len;
		if (o->slow_bps)
			throttle (t0, got, o->slow_bps);
	}
}

static int
cmd_exec (int argc, char **argv)
{
	struct ab_agent_proc_spec_s ps = { 0 };
	struct follow_opts_s fo = { 0 };
	struct ab_agent_proc_s p;
	ab_error_t err = AB_ERROR_INIT;
	char *env[64] = { 0 };
	size_t ne = 0;
	bool want_stdin = false;
	ab_agent_conn_t *c;
	pid_t feeder = -1;
	int o, code;

	while ((o = getopt (argc, argv, "+itdEe:c:T:g:S:u:")) != -1) {
		switch (o) {
		case 'i': want_stdin = true; break;
		case 't':
			ps.tty = true;
			ps.rows = 24;
			ps.cols = 80;
			break;
		case 'd': ps.detach = true; break;
		case 'E': fo.events = true; break;
		case 'e':
			if (ne < 62)
				env[ne++] = optarg;
			break;
		case 'c': ps.cwd = optarg; break;
		case 'T': ps.timeout_ms = strtoull (optarg, NULL, 10); break;
		case 'g': ps.grace_ms = strtoull (optarg, NULL, 10); break;
		case 'S': fo.slow_bps = strtoull (optarg, NULL, 10); break;
		case 'u': parse_ids (optarg, &ps.uid, &ps.gid); break;
		default: usage ();
		}
	}
	if (optind >= argc)
		usage ();
	if (ne) {
		env[ne++] =
		        (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
		ps.env = env;
	}
	ps.argv = argv + optind;
	ps.stdin_open = want_stdin;
	c = conn ();
	if (ab_agent_proc_start (c, &ps, &p, &err) < 0)
		fail (&err);
	if (ps.detach) {
		printf ("%u\n", p.pid);
		return 0;
	}
	if (want_stdin)
		feeder = feed_stdin (p.pid);
	code = follow (c, &p, &fo);
	if (feeder > 0) {
		kill (feeder, SIGTERM);
		waitpid (feeder, NULL, 0);
	}
	ab_agent_close (c);
	return code;
}

static int
cmd_attach (int argc, char **argv)
{
	struct follow_opts_s fo = { 0 };
	struct ab_agent_proc_s p;
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;

	if (argc >= 2 && strcmp (argv[1], "-E") == 0) {
		fo.events = true;
		argc--, argv++;
	}
	if (argc != 2)
		usage ();
	c = conn ();
	if (ab_agent_proc_attach (c, (uint32_t)atoi (argv[1]), &p, &err) < 0)
		fail (&err);
	return follow (c, &p, &fo);
}

/* ---- by pid ------------------------------------------------------------------------- */

static int
cmd_by_pid (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	uint32_t pid;
	int r = -1;

	if (argc < 2)
		usage ();
	pid = (uint32_t)atoi (argv[1]);
	c = conn ();
	if (strcmp (argv[0], "signal") == 0 && argc == 3)
		r = ab_agent_proc_signal (c, pid, atoi (argv[2]), &err);
	else if (strcmp (argv[0], "resize") == 0 && argc == 4)
		r = ab_agent_proc_resize (c, pid, (uint16_t)atoi (argv[2]),
		                          (uint16_t)atoi (argv[3]), &err);
	else if (strcmp (argv[0], "closestdin") == 0)
		r = ab_agent_proc_close_stdin (c, pid, &err);
	else if (strcmp (argv[0], "stdin") == 0) {
		char buf[65536];
		ssize_t n;
		r = 0;
		while (r == 0 && (n = read (0, buf, sizeof buf)) > 0)
			r = ab_agent_proc_write_stdin (c, pid, buf, (size_t)n, &err);
	} else
		usage ();
	if (r < 0)
		fail (&err);
	ab_agent_close (c);
	return 0;
}

static int
cmd_ps (void)
{
	struct ab_agent_proc_info_s *v;
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = conn ();
	size_t n;

	if (ab_agent_proc_list (c, &v, &n, &err) < 0)
		fail (&err);
	for (size_t i = 0; i < n; i++) {
		printf ("%u %s", v[i].pid, v[i].running ? "running" : "exited");
		if (!v[i].running)
			printf (" code=%d", exit_code (&v[i].exit));
		for (char **a = v[i].argv; *a; a++)
			printf (" %s", *a);
		printf ("\n");
	}
	ab_agent_proc_info_free (v, n);
	ab_agent_close (c);
	return 0;
}

/* ---- files ---------------------------------------------------------------------------- */

static int
sink_data (void *ctx, const void *buf, size_t len, ab_error_t *err)
{
	if (ab_write_all (1, buf, len) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write stdout");
	return 0;
}

static ssize_t
source_stdin (void *ctx, void *buf, size_t cap, ab_error_t *err)
{
	ssize_t n;
	do
		n = read (0, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read stdin");
	return n;
}

static const char *const type_names[] = { "other", "file", "dir", "symlink" };

static void
print_stat (const char *name, const struct ab_agent_stat_s *st)
{
	printf ("%s %s %llu %04o\n", name, type_names[st->type & 3], (unsigned long long)st->size,
	        st->mode);
}

static int
cmd_file (int argc, char **argv)
{
	const char *cmd = argv[0];
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	int r = -1;

	if (argc < 2)
		usage ();
	c = conn ();
	if (strcmp (cmd, "cat") == 0) {
		struct ab_agent_file_sink_s sink = { .data = sink_data };
		r = ab_agent_file_read (c, argv[1], &sink, &err);
	} else if (strcmp (cmd, "put") == 0) {
		uint64_t n = 0;
		r = ab_agent_file_write (c, argv[1],
		                         argc > 2 ? (uint32_t)strtoul (argv[2], NULL, 8) : 0,
		                         source_stdin, NULL, &n, &err);
		if (r == 0)
			printf ("%llu\n", (unsigned long long)n);
	} else if (strcmp (cmd, "stat") == 0) {
		struct ab_agent_stat_s st;
		if ((r = ab_agent_file_stat (c, argv[1], &st, &err)) == 0)
			print_stat (argv[1], &st);
	} else if (strcmp (cmd, "ls") == 0) {
		struct ab_agent_dirent_s *v;
		size_t n;
		if ((r = ab_agent_file_list (c, argv[1], &v, &n, &err)) == 0) {
			for (size_t i = 0; i < n; i++)
				print_stat (v[i].name, &v[i].st);
			ab_agent_dirents_free (v, n);
		}
	} else if (strcmp (cmd, "mkdir") == 0) {
		r = ab_agent_file_mkdir (c, argv[1], 0, &err);
	} else if (strcmp (cmd, "rm") == 0) {
		bool rec = strcmp (argv[1], "-r") == 0;
		if (rec && argc < 3)
			usage ();
		r = ab_agent_file_remove (c, argv[rec ? 2 : 1], rec, &err);
	} else if (strcmp (cmd, "mv") == 0 && argc == 3) {
		r = ab_agent_file_rename (c, argv[1], argv[2], &err);
	} else {
		usage ();
	}
	if (r < 0)
		fail (&err);
	ab_agent_close (c);
	return 0;
}

/* ---- ports ------------------------------------------------------------------------------ */

static int
cmd_port (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	bool in_open = true;
	int fd;

	if (argc != 2)
		usage ();
	c = conn ();
	if ((fd = ab_agent_port_open (&c, (uint16_t)atoi (argv[1]), &err)) < 0)
		fail (&err);
	for (;;) {
		struct pollfd p[2] = { { .fd = in_open ? 0 : -1, .events = POLLIN },
			               { .fd = fd, .events = POLLIN } };
		char buf[65536];
		ssize_t n;
		if (poll (p, 2, -1) < 0)
			continue;
		if (p[0].revents) {
			n = read (0, buf, sizeof buf);
			if (n <= 0) {
				shutdown (fd, SHUT_WR);
				in_open = false;
			} else if (ab_write_all (fd, buf, (size_t)n) < 0) {
				return 1;
			}
		}
		if (p[1].revents) {
			n = read (fd, buf, sizeof buf);
			if (n <= 0)
				return 0;
			if (ab_write_all (1, buf, (size_t)n) < 0)
				return 1;
		}
	}
}

/* ---- egress (fds handed over by SCM_RIGHTS) ------------------------------------------------- */

static int
cmd_egress (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	int n;

	if (argc != 3)
		usage ();
	n = atoi (argv[2]);
	c = conn ();
	if (ab_agent_egress_listen (c, (uint16_t)atoi (argv[1]), &err) < 0)
		fail (&err);
	printf ("listening\n");
	fflush (stdout);
	for (int i = 0; i < n; i++) {
		char buf[256] = "egress:";
		ssize_t k;
		int fd;
		if (ab_agent_egress_next (c, &fd, 20000, &err) <= 0) {
			if (err.kind != AB_E_NONE)
				fail (&err);
			return 1;
		}
		k = read (fd, buf + 7, sizeof buf - 8);
		if (k > 0)
			ab_write_all (fd, buf, 7 + (size_t)k);
		close (fd);
	}
	ab_agent_close (c);
	return 0;
}

/* ---- raw frames and benchmarks ------------------------------------------------------------- */

static int
cmd_raw (void)
{
	uint8_t buf[65536], hello[64];
	struct ab_tlv_writer_s w = { 0 };
	struct ab_msg_s m;
	ssize_t n;
	int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un {
		sa_family_t sun_family;
		char sun_path[108];
	} sun = { .sun_family = AF_UNIX };

	if (!sock_path || fd < 0)
		usage ();
	snprintf (sun.sun_path, sizeof sun.sun_path, "%s", sock_path);
	if (connect (fd, (struct sockaddr *)&sun, sizeof sun) < 0)
		return perror ("connect"), 1;
	ab_msg_init (&m, AB_MSG_HELLO);
	ab_msg_set (&m, version, AB_TAG_VERSION, AB_PROTO_VERSION_2);
	ab_msg_encode (&w, &m);
	ab_proto_encode_header (hello, AB_MSG_HELLO, 0, (uint32_t)w.len);
	memcpy (hello + AB_PROTO_HEADER_SIZE, w.buf, w.len);
	if (getenv ("AGENTCTL_RAW_NO_HELLO") == NULL)
		ab_write_all (fd, hello, AB_PROTO_HEADER_SIZE + w.len);
	while ((n = read (0, buf, sizeof buf)) > 0)
		ab_write_all (fd, buf, (size_t)n);
	shutdown (fd, SHUT_WR);
	/* Print the type and channel of every frame the agent sends back. */
	{
		uint8_t *in = NULL;
		size_t len = 0;
		while ((n = read (fd, buf, sizeof buf)) > 0) {
			in = realloc (in, len + (size_t)n);
			memcpy (in + len, buf, (size_t)n);
			len += (size_t)n;
		}
		for (size_t off = 0; off + AB_PROTO_HEADER_SIZE <= len;) {
			struct ab_frame_s f;
			ab_error_t err = AB_ERROR_INIT;
			size_t fl;
			if (ab_frame_parse (in + off, len - off, &f, &fl, &err) <= 0)
				break;
			printf ("frame type=%u channel=%u", f.type, f.channel);
			if (f.type == AB_MSG_FAIL) {
				struct ab_msg_s fm;
				if (ab_msg_decode (f.type, f.payload, f.length, &fm, &err) == 0)
					printf (" req=%u code=%u msg=%s", fm.req_id, fm.code,
					        fm.message);
				ab_msg_free (&fm);
			}
			printf ("\n");
			off += fl;
		}
		free (in);
	}
	return 0;
}

static int
cmp_u64 (const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int
cmd_bench (int argc, char **argv)
{
	char *targv[] = { getenv ("BENCH_CMD") ? getenv ("BENCH_CMD") : (char *)"true", NULL };
	struct ab_agent_proc_spec_s ps = { .argv = targv };
	int n = argc > 1 ? atoi (argv[1]) : 200;
	uint64_t *t = calloc ((size_t)n, sizeof *t), *tc = calloc ((size_t)n, sizeof *tc);
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = conn ();

	for (int i = 0; i < n; i++) {
		struct ab_agent_proc_s p;
		struct ab_agent_event_s ev;
		uint64_t t0 = now_us ();
		ab_agent_conn_t *c2;
		if (ab_agent_proc_start (c, &ps, &p, &err) < 0)
			fail (&err);
		do
			if (ab_agent_proc_next_event (c, &p, &ev, -1, &err) < 0)
				fail (&err);
		while (ev.kind != AB_AGENT_EV_EXIT);
		t[i] = now_us () - t0;
		/* Same, with a fresh connection per exec (what the daemon does). */
		t0 = now_us ();
		if (!(c2 = ab_agent_connect (sock_path, &err))
		    || ab_agent_proc_start (c2, &ps, &p, &err) < 0)
			fail (&err);
		do
			if (ab_agent_proc_next_event (c2, &p, &ev, -1, &err) < 0)
				fail (&err);
		while (ev.kind != AB_AGENT_EV_EXIT);
		ab_agent_close (c2);
		tc[i] = now_us () - t0;
	}
	qsort (t, (size_t)n, sizeof *t, cmp_u64);
	qsort (tc, (size_t)n, sizeof *tc, cmp_u64);
	printf ("exec true, same connection: p50 %llu us, p99 %llu us (n=%d)\n",
	        (unsigned long long)t[n / 2], (unsigned long long)t[n * 99 / 100], n);
	printf ("exec true, new connection:  p50 %llu us, p99 %llu us (n=%d)\n",
	        (unsigned long long)tc[n / 2], (unsigned long long)tc[n * 99 / 100], n);
	return 0;
}

int
main (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	const char *cmd;

	signal (SIGPIPE, SIG_IGN);
	if (argc > 2 && strcmp (argv[1], "-s") == 0) {
		sock_path = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 2)
		usage ();
	cmd = argv[1];
	argc--;
	argv++;
	optind = 1;
	if (strcmp (cmd, "launch") == 0)
		return cmd_launch (argc, argv);
	if (strcmp (cmd, "configure") == 0)
		return cmd_configure (argc, argv);
	if (strcmp (cmd, "exec") == 0)
		return cmd_exec (argc, argv);
	if (strcmp (cmd, "attach") == 0)
		return cmd_attach (argc, argv);
	if (strcmp (cmd, "signal") == 0 || strcmp (cmd, "resize") == 0 || strcmp (cmd, "stdin") == 0
	    || strcmp (cmd, "closestdin") == 0)
		return cmd_by_pid (argc, argv);
	if (strcmp (cmd, "ps") == 0)
		return cmd_ps ();
	if (strcmp (cmd, "port") == 0)
		return cmd_port (argc, argv);
	if (strcmp (cmd, "raw") == 0)
		return cmd_raw ();
	if (strcmp (cmd, "egress") == 0)
		return cmd_egress (argc, argv);
	if (strcmp (cmd, "bench") == 0)
		return cmd_bench (argc, argv);
	if (strcmp (cmd, "ping") == 0 || strcmp (cmd, "shutdown") == 0) {
		c = conn ();
		if ((strcmp (cmd, "ping") == 0
		             ? ab_agent_ping (c, &err)
		             : ab_agent_shutdown (c, argc > 1 ? strtoull (argv[1], NULL, 10) : 0,
		                                  &err))
		    < 0)
			fail (&err);
		ab_agent_close (c);
		return 0;
	}
	return cmd_file (argc, argv);
}
