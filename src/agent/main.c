/* agentbox-agent: PID 1 of a sandbox.
 *
 * Two modes, told apart by the fds it starts with (or by `--listen PATH`,
 * service mode on a socket it binds itself, for backends that cannot pass
 * it a listening fd: see listen.c):
 *   - one-shot (oneshot.c, protocol v1): fd 3 is a connected socket to the
 *     host; one EXEC, then the sandbox ends with the command;
 *   - service (service.c, protocol v2): fd 4 is a listening unix socket;
 *     any number of sessions, processes outlive them, the sandbox ends on
 *     SHUTDOWN or when the monitor kills it.
 *
 * Either way it never acts on signals sent from inside the sandbox: as PID
 * 1 of its pid namespace the kernel drops those it has no handler for, and
 * the only one it handles is SIGCHLD (through a signalfd).  It is
 * non-dumpable, so commands cannot trace it or read its memory,
 * environment or fds (SECURITY.md 17). */
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/service.h"
#include "agent/vm.h"
#include "base/log.h"

void
ab_agent_loopback_up (void)
{
	struct ifreq ifr = { 0 };
	int s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return;
	strcpy (ifr.ifr_name, "lo");
	if (ioctl (s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		ioctl (s, SIOCSIFFLAGS, &ifr);
	}
	close (s);
}

void
ab_agent_release_stdio (void)
{
	int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return;
	for (int fd = 0; fd < 3; fd++)
		dup3 (null, fd, 0);
	close (null);
}

/* fd 4 is a listening socket: the monitor started a long-lived sandbox. */
static int
is_listening (int fd)
{
	int v = 0;
	socklen_t len = sizeof v;
	return getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v;
}

/* The agent's edge: what went wrong before it could serve anyone. */
static void
report (const ab_error_t *err)
{
	fprintf (stderr, "agentbox-agent: %s\n", err->msg);
}

static void __attribute__ ((noreturn)) fail (const ab_error_t *err)
{
	report (err);
	exit (125);
}

static void __attribute__ ((noreturn)) usage (void)
{
	fprintf (stderr,
	         "usage: agentbox-agent [--listen PATH [--pids-max N] [--preload LIB] | --vm]\n");
	exit (125);
}

/* gVisor and Docker: --listen PATH (listen.c); --pids-max N, the process
 * limit gVisor's runtime cannot apply (pids-limit.c); --preload LIB, the
 * statx shim for gVisor (preload.c). */
static void __attribute__ ((noreturn)) service_on_path (int argc, char **argv)
{
	const char *listen = NULL;
	ab_error_t err = AB_ERROR_INIT;
	int fd = -1;

	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			usage ();
		if (strcmp (argv[i], "--listen") == 0)
			listen = argv[i + 1];
		else if (strcmp (argv[i], "--pids-max") == 0) {
			if (ab_agent_pids_limit (argv[i + 1], &err) < 0)
				fail (&err);
		} else if (strcmp (argv[i], "--preload") == 0)
			ab_agent_set_preload (argv[i + 1]);
		else
			usage ();
	}
	if (!listen)
		usage ();
	if ((fd = ab_agent_listen_path (listen, &err)) < 0) {
		report (&err);
		usage ();
	}
	ab_service_run (fd);
}

int
main (int argc, char **argv)
{
	if (getpid () != 1) {
		/* kill(-1) from anywhere else would reach far more than a sandbox. */
		fprintf (stderr, "agentbox-agent: must run as PID 1 of its own pid namespace\n");
		return 125;
	}
	ab_log_set_program ("agentbox-agent");
	prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* The microVM guest's /init (vm-init.c); the kernel passes what
	 * follows "--" on its command line. */
	if (argc == 2 && strcmp (argv[1], "--vm") == 0)
		ab_vm_init_run ();
	if (argc > 1)
		service_on_path (argc, argv);
	if (is_listening (AB_AGENT_LISTEN_FD))
		ab_service_run (AB_AGENT_LISTEN_FD);
	ab_oneshot_run ();
}
