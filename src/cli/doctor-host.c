/* What the stronger backends to come would stand on: /dev/kvm (microVM),
 * runsc (gVisor), a Docker daemon.  Each is checked for what it is, not
 * for a file being present: a device that answers KVM_GET_API_VERSION, a
 * runsc that runs, a daemon that answers /_ping. */
#include "cli/doctor-checks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/firecracker-version.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"

#define KVM_PATH            "/dev/kvm"
#define KVM_EXPECTED_API    12 /* fixed since Linux 2.6.22; anything else is not KVM as we know it */
#define RUNSC_TIMEOUT_MS    5000
#define DOCKER_TIMEOUT_S    3
#define DOCKER_DEFAULT_SOCK "/var/run/docker.sock"
#define DEFAULT_PATH        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

extern char **environ;

/* ------------------------------------------------------------------ */
/* /dev/kvm                                                             */

static const struct {
	int errnum;
	const char *fix;
} kvm_fixes[] = {
	{ ENOENT,
	  "enable hardware virtualization (nested virtualization when this is a VM) and load "
	  "kvm_intel or kvm_amd (modprobe kvm_intel)" },
	{ EACCES, "add the user to the kvm group (usermod -aG kvm USER), then log in again" },
	{ EPERM, "a device policy around this process (a container?) forbids /dev/kvm: pass it in "
	         "(docker run --device /dev/kvm)" },
	{ ENXIO, "the KVM module is not loaded: modprobe kvm_intel (or kvm_amd)" },
};

static const char *
kvm_fix (int errnum)
{
	for (size_t i = 0; i < sizeof kvm_fixes / sizeof kvm_fixes[0]; i++)
		if (kvm_fixes[i].errnum == errnum)
			return kvm_fixes[i].fix;
	return "check dmesg for why the KVM device does not answer";
}

static int
kvm_api_version (int *version, int *errnum)
{
	struct stat st;
	cleanup_close int fd = -1;

	if (stat (KVM_PATH, &st) < 0)
		return *errnum = errno, -1;
	if (!S_ISCHR (st.st_mode) || major (st.st_rdev) != 10 || minor (st.st_rdev) != 232)
		return *errnum = ENXIO, -1;
	fd = open (KVM_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return *errnum = errno, -1;
	*version = ioctl (fd, KVM_GET_API_VERSION, 0);
	if (*version < 0)
		return *errnum = errno, -1;
	return 0;
}

void
ab_doctor_check_kvm (struct ab_doctor_check_s *c)
{
	int version = -1, e = 0;

	if (kvm_api_version (&version, &e) < 0) {
		snprintf (c->detail, sizeof c->detail, "%s: %s", KVM_PATH,
		          e == ENXIO ? "not the KVM device (char 10:232)" : strerror (e));
		snprintf (c->fix, sizeof c->fix, "%s", kvm_fix (e));
		return;
	}
	json_object_set_new (c->facts, "api_version", json_integer (version));
	c->ok = version == KVM_EXPECTED_API;
	snprintf (c->detail, sizeof c->detail,
	          "%s answers KVM_GET_API_VERSION = %d%s; a usable /dev/kvm does not prove a guest "
	          "boots: the microvm backend's probe below does",
	          KVM_PATH, version, c->ok ? "" : " (expected 12)");
	if (!c->ok)
		snprintf (c->fix, sizeof c->fix, "this kernel's KVM speaks an unknown API version");
}

/* ------------------------------------------------------------------ */
/* Executables                                                          */

/* The first executable `name` in $PATH, then in the usual directories
 * ($PATH of a non-root user often lacks the sbin ones). */
static char *
find_program (const char *name)
{
	const char *env = getenv ("PATH");
	cleanup_free char *dirs =
	        xasprintf ("%s:%s", env && *env ? env : DEFAULT_PATH, DEFAULT_PATH);
	char *save = NULL;

	for (char *d = strtok_r (dirs, ":", &save); d; d = strtok_r (NULL, ":", &save)) {
		cleanup_free char *p = xasprintf ("%s/%s", d, name);
		struct stat st;
		if (d[0] == '/' && stat (p, &st) == 0 && S_ISREG (st.st_mode)
		    && access (p, X_OK) == 0)
			return steal_pointer (&p);
	}
	return NULL;
}

/* Read from fd until EOF, `size` - 1 bytes or the deadline (monotonic ms). */
static size_t
read_until (int fd, char *buf, size_t size, long deadline)
{
	size_t got = 0;

	while (got + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = deadline - (long)ab_mono_ms ();
		ssize_t n;

		if (left <= 0 || poll (&p, 1, (int)left) <= 0)
			break;
		n = read (fd, buf + got, size - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

/* Wait for pid until the deadline; false when it is still running. */
static bool
exited_by (pid_t pid, long deadline)
{
	struct pollfd p = { .fd = ab_sys_pidfd_open (pid, 0), .events = POLLIN };
	long left = deadline - (long)ab_mono_ms ();
	bool done;

	if (p.fd < 0)
		return false;
	done = poll (&p, 1, left > 0 ? (int)left : 0) > 0;
	close (p.fd);
	return done;
}

/* `path --version` in its own process group, stdin from /dev/null, stdout
 * and stderr captured, the whole group killed after RUNSC_TIMEOUT_MS.
 * Returns the wait status, -1 on spawn failure (errno set). */
static int
run_version (const char *path, char *out, size_t size, bool *timed_out)
{
	char *argv[] = { (char *)path, (char *)"--version", NULL };
	long deadline = (long)ab_mono_ms () + RUNSC_TIMEOUT_MS;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	int p[2], status = -1, r;
	pid_t pid;

	if (pipe2 (p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init (&fa);
	posix_spawn_file_actions_addopen (&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2 (&fa, p[1], 1);
	posix_spawn_file_actions_adddup2 (&fa, p[1], 2);
	posix_spawnattr_init (&sa);
	posix_spawnattr_setflags (&sa, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup (&sa, 0);
	r = posix_spawn (&pid, path, &fa, &sa, argv, environ);
	posix_spawn_file_actions_destroy (&fa);
	posix_spawnattr_destroy (&sa);
	close (p[1]);
	if (r != 0) {
		close (p[0]);
		errno = r;
		return -1;
	}
	read_until (p[0], out, size, deadline);
	close (p[0]);
	*timed_out = !exited_by (pid, deadline);
	kill (-pid, SIGKILL); /* what a wrapper script left behind goes too */
	while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

void
ab_doctor_check_runsc (struct ab_doctor_check_s *c)
{
	cleanup_free char *path = find_program ("runsc");
	bool timed_out = false;
	char out[512];
	int status;

	if (!path) {
		snprintf (c->detail, sizeof c->detail, "not found in PATH");
		snprintf (c->fix, sizeof c->fix, "install gVisor's runsc: apt-get install runsc");
		return;
	}
	json_object_set_new (c->facts, "path", json_string (path));
	status = run_version (path, out, sizeof out, &timed_out);
	out[strcspn (out, "\n")] = '\0';
	if (status < 0 || !WIFEXITED (status) || WEXITSTATUS (status) != 0) {
		char how[64];
		if (status < 0)
			snprintf (how, sizeof how, "%s", strerror (errno));
		else if (timed_out)
			snprintf (how, sizeof how, "no exit within %d ms", RUNSC_TIMEOUT_MS);
		else if (WIFEXITED (status))
			snprintf (how, sizeof how, "exit status %d", WEXITSTATUS (status));
		else
			snprintf (how, sizeof how, "killed by signal %d", WTERMSIG (status));
		snprintf (c->detail, sizeof c->detail, "%s --version failed (%s)%s%.200s", path,
		          how, out[0] ? ": " : "", out);
		snprintf (c->fix, sizeof c->fix,
		          "reinstall runsc (apt-get install --reinstall runsc)");
		return;
	}
	json_object_set_new (c->facts, "version", json_string (out));
	c->ok = true;
	snprintf (c->detail, sizeof c->detail,
	          "%s: %s (present and runs; the gvisor backend's probe below says whether "
	          "a sandbox starts)",
	          path, out);
}

/* Firecracker is only reported: the microvm backend drives QEMU's
 * -M microvm (docs/microvm.md); a Firecracker found here is checked
 * against the minimum version it would need (docs/microvm-firecracker.md). */
void
ab_doctor_check_firecracker (struct ab_doctor_check_s *c)
{
	cleanup_free char *path = find_program ("firecracker");
	struct ab_fc_version_s v;
	ab_error_t err = AB_ERROR_INIT;
	char text[96];

	if (!path) {
		snprintf (c->detail, sizeof c->detail,
		          "not found in PATH (the microvm backend uses QEMU's -M microvm)");
		snprintf (c->fix, sizeof c->fix,
		          "nothing to do: Firecracker is not in Debian; QEMU serves the microvm "
		          "backend");
		return;
	}
	json_object_set_new (c->facts, "path", json_string (path));
	if (ab_firecracker_version_query (path, RUNSC_TIMEOUT_MS, &v, &err) < 0) {
		snprintf (c->detail, sizeof c->detail, "%s", err.msg);
		snprintf (c->fix, sizeof c->fix,
		          "install Firecracker >= 1.14.1 (a release, not an -rc)");
		return;
	}
	ab_firecracker_version_format (&v, text, sizeof text);
	json_object_set_new (c->facts, "version", json_string (text));
	c->ok = true;
	snprintf (c->detail, sizeof c->detail,
	          "%s: v%s, at least 1.14.1 (reported only: the microvm backend drives QEMU)", path,
	          text);
}

/* ------------------------------------------------------------------ */
/* Docker daemon                                                        */

/* The daemon's socket: DOCKER_HOST when it names a unix socket. */
static const char *
docker_socket (const char **unsupported)
{
	const char *host = getenv ("DOCKER_HOST");

	*unsupported = NULL;
	if (!host || !*host)
		return DOCKER_DEFAULT_SOCK;
	if (strncmp (host, "unix://", 7) == 0)
		return host + 7;
	*unsupported = host;
	return NULL;
}

static int
docker_connect (const char *path)
{
	ab_error_t err = AB_ERROR_INIT;
	struct timeval tv = { .tv_sec = DOCKER_TIMEOUT_S };
	cleanup_close int s = -1;
	struct sockaddr_un a;
	socklen_t len;

	if (ab_unix_addr (path, &a, &len, &err) < 0)
		return errno = ENAMETOOLONG, -1;
	/* Not ab_unix_connect: the send timeout must be set before connect,
	 * which it also bounds when the daemon's backlog is full. */
	s = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || setsockopt (s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0
	    || connect (s, (struct sockaddr *)&a, len) < 0)
		return -1;
	return steal_fd (&s);
}

/* The value of header `name` in an HTTP head, without leading blanks. */
static void
header_value (const char *head, const char *end, const char *name, char *out, size_t size)
{
	size_t n = strlen (name);

	out[0] = '\0';
	for (const char *h = head; h && h < end;) {
		if (strncasecmp (h, name, n) == 0 && h[n] == ':') {
			h += n + 1;
			h += strspn (h, " \t");
			snprintf (out, size, "%.*s", (int)strcspn (h, "\r\n"), h);
			return;
		}
		h = strstr (h, "\r\n");
		h = h ? h + 2 : NULL;
	}
}

/* "OK" from GET /_ping (Docker Engine API), plus the API version header. */
static bool
docker_ping (int s, char *why, size_t size, char *api, size_t api_size)
{
	static const char req[] = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";
	char resp[2048];
	const char *body;

	if (ab_write_all (s, req, sizeof req - 1) < 0)
		return snprintf (why, size, "send /_ping: %s", strerror (errno)), false;
	read_until (s, resp, sizeof resp, (long)ab_mono_ms () + DOCKER_TIMEOUT_S * 1000);
	body = strstr (resp, "\r\n\r\n");
	if (strncmp (resp, "HTTP/1.", 7) != 0 || strncmp (resp + 8, " 200", 4) != 0 || !body
	    || strcmp (body + 4, "OK") != 0)
		return snprintf (why, size, "/_ping did not answer 200 OK (got '%.*s')",
		                 (int)(strcspn (resp, "\r\n") > 60 ? 60 : strcspn (resp, "\r\n")),
		                 resp),
		       false;
	header_value (resp, body, "Api-Version", api, api_size);
	return true;
}

static const char *
docker_fix (int errnum, bool have_client)
{
	if (errnum == EACCES)
		return "add the user to the docker group (usermod -aG docker USER), or run as root";
	if (errnum == ECONNREFUSED)
		return "the socket is stale: start the daemon (systemctl start docker)";
	return have_client ? "start the daemon (systemctl start docker, or dockerd &), or point "
	                     "DOCKER_HOST=unix://PATH at its socket"
	                   : "install and start Docker: apt-get install docker.io";
}

void
ab_doctor_check_docker (struct ab_doctor_check_s *c)
{
	cleanup_free char *client = find_program ("docker");
	const char *unsupported, *sock = docker_socket (&unsupported);
	char why[200], api[32];
	cleanup_close int s = -1;

	json_object_set_new (c->facts, "client", client ? json_string (client) : json_null ());
	if (!sock) {
		snprintf (c->detail, sizeof c->detail,
		          "DOCKER_HOST=%s is not a unix socket; not checked", unsupported);
		snprintf (c->fix, sizeof c->fix,
		          "set DOCKER_HOST=unix://PATH (agentbox talks to local daemons only)");
		return;
	}
	json_object_set_new (c->facts, "socket", json_string (sock));
	s = docker_connect (sock);
	if (s < 0) {
		int e = errno;
		snprintf (c->detail, sizeof c->detail, "connect %s: %s%s%s%s", sock, strerror (e),
		          client ? " (a client is installed at " : "", client ? client : "",
		          client ? ", but a client is not a daemon)" : "");
		snprintf (c->fix, sizeof c->fix, "%s", docker_fix (e, client != NULL));
		return;
	}
	c->ok = docker_ping (s, why, sizeof why, api, sizeof api);
	if (!c->ok) {
		snprintf (c->detail, sizeof c->detail, "%s: %s", sock, why);
		snprintf (c->fix, sizeof c->fix, "check the daemon's log (journalctl -u docker)");
		return;
	}
	json_object_set_new (c->facts, "api_version", api[0] ? json_string (api) : json_null ());
	snprintf (c->detail, sizeof c->detail, "%s answered /_ping with OK%s%s", sock,
	          api[0] ? ", API " : "", api);
}
