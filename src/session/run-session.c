#include "session/run-session.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "proto/proto.h"

enum { P_DOOR, P_SIG, P_STDIN, P_OUT, P_ERR, P_PTY, P_COUNT };

struct relay_s {
	int door;
	int sigfd;
	int pty; /* master, once the agent sends it */
	struct ab_run_io_s *io;
	struct ab_run_outcome_s *out;
	bool exited, have_termios, stdin_done;
	struct termios saved;
};

static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH };

static int
block_signals (sigset_t *old, ab_error_t *err)
{
	sigset_t set;
	sigemptyset (&set);
	for (size_t i = 0; i < sizeof forwarded_signals / sizeof *forwarded_signals; i++)
		sigaddset (&set, forwarded_signals[i]);
	if (sigprocmask (SIG_BLOCK, &set, old) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sigprocmask");
	return signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int
send_signal (struct relay_s *r, int sig, ab_error_t *err)
{
	struct ab_tlv_writer_s w = { 0 };
	int rc;
	ab_tlv_put_u32 (&w, AB_TAG_SIGNAL, (uint32_t)sig);
	rc = ab_frame_send (r->door, AB_MSG_SIGNAL, 0, w.buf, w.len, NULL, 0, err);
	ab_tlv_writer_free (&w);
	return rc;
}

static void
sync_winsize (struct relay_s *r)
{
	struct winsize ws;
	if (r->pty >= 0 && ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
		ioctl (r->pty, TIOCSWINSZ, &ws);
}

static void
on_signals (struct relay_s *r, ab_error_t *err)
{
	struct signalfd_siginfo si;
	while (read (r->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGWINCH)
			sync_winsize (r);
		else
			send_signal (r, (int)si.ssi_signo, err);
	}
}

static void
enter_raw_mode (struct relay_s *r)
{
	struct termios raw;
	if (!r->io->raw_terminal || tcgetattr (STDIN_FILENO, &r->saved) < 0)
		return;
	r->have_termios = true;
	raw = r->saved;
	cfmakeraw (&raw);
	tcsetattr (STDIN_FILENO, TCSANOW, &raw);
}

static void
leave_raw_mode (struct relay_s *r)
{
	if (r->have_termios)
		tcsetattr (STDIN_FILENO, TCSANOW, &r->saved);
}

static int
read_tlvs (const struct ab_frame_s *f, struct ab_run_outcome_s *out, ab_error_t *err)
{
	struct ab_tlv_reader_s rd;
	struct ab_tlv_s t;
	uint32_t v;
	int k;

	ab_tlv_reader_init (&rd, f->payload, f->length);
	while ((k = ab_tlv_next (&rd, &t, err)) > 0) {
		if (t.tag == AB_TAG_MESSAGE) {
			char msg[AB_ERROR_MSG_MAX];
			size_t n = t.length < sizeof msg - 1 ? t.length : sizeof msg - 1;
			memcpy (msg, t.value, n);
			msg[n] = '\0';
			return ab_error (err, 0, AB_E_SYSTEM, "%s", msg);
		}
		if (ab_tlv_u32 (&t, &v, err) < 0)
			continue; /* fields of other widths are not ours to read here */
		if (t.tag == AB_TAG_WAIT_STATUS)
			out->wait_status = (int)v;
		else if (t.tag == AB_TAG_TIMED_OUT)
			out->timed_out = v != 0;
		else if (t.tag == AB_TAG_EXEC_ERRNO)
			out->exec_errno = (int)v;
		else if (t.tag == AB_TAG_LANDLOCK_ABI)
			out->landlock_abi = (int)v;
		else if (t.tag == AB_TAG_VERSION && v != AB_PROTO_VERSION)
			return ab_error (err, 0, AB_E_SYSTEM,
			                 "agent speaks protocol %u, we speak %u", v,
			                 AB_PROTO_VERSION);
	}
	return k;
}

/* The listening port an EGRESS_CONN came in on; an agent that sends no
 * TAG_PORT has one listener, the first asked for. */
static uint16_t
conn_port (const struct ab_frame_s *f, const struct ab_run_io_s *io)
{
	ab_error_t ignored = AB_ERROR_INIT;
	struct ab_tlv_reader_s rd;
	struct ab_tlv_s t;
	uint32_t v;

	ab_tlv_reader_init (&rd, f->payload, f->length);
	while (ab_tlv_next (&rd, &t, &ignored) > 0)
		if (t.tag == AB_TAG_PORT && ab_tlv_u32 (&t, &v, &ignored) == 0 && v && v <= 65535)
			return (uint16_t)v;
	return io->listen_ports[0];
}

static int
on_door (struct relay_s *r, ab_error_t *err)
{
	struct ab_frame_s f;
	int fds[1];
	size_t n_fds = 0;
	int k = ab_frame_recv (r->door, &f, fds, 1, &n_fds, err);

	if (k == 0)
		return ab_error (err, 0, AB_E_SYSTEM,
		                 "the sandbox ended before reporting an exit status");
	if (k < 0)
		return -1;
	if (n_fds && f.type == AB_MSG_STARTED && r->pty < 0) {
		r->pty = fds[0];
		sync_winsize (r);
	} else if (n_fds && f.type == AB_MSG_EGRESS_CONN && r->io->conn && r->io->n_listen) {
		r->io->conn (r->io->conn_ctx, conn_port (&f, r->io), fds[0]);
	} else if (n_fds) {
		close (fds[0]);
	}
	k = read_tlvs (&f, r->out, err);
	if (f.type == AB_MSG_EXIT)
		r->exited = true;
	ab_frame_free (&f);
	return k < 0 ? -1 : 0;
}

/* Copy what is readable now; false on EOF or error. */
static bool
pump (int from, int to)
{
	char buf[65536];
	ssize_t n = read (from, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	return ab_write_all (to, buf, (size_t)n) == 0;
}

static void
on_stdin (struct relay_s *r)
{
	int to = r->pty >= 0 ? r->pty : r->io->relay_in;
	if (pump (STDIN_FILENO, to))
		return;
	r->stdin_done = true;
	if (r->pty >= 0) {
		ab_write_all (r->pty, "\x04", 1); /* end of input at the terminal */
	} else {
		close (r->io->relay_in);
		r->io->relay_in = -1;
	}
}

static void
drain (int fd, int to)
{
	if (fd < 0)
		return;
	ab_set_nonblock (fd, 0);
	while (pump (fd, to))
		;
}

static void
fill_poll (struct relay_s *r, struct pollfd *p)
{
	p[P_PTY].fd = r->pty;
	/* stdin is read only once there is somewhere to put it (the pty arrives
	 * with STARTED) and until it ends. */
	p[P_STDIN].fd = !r->stdin_done && (r->pty >= 0 || r->io->relay_in >= 0) ? STDIN_FILENO : -1;
}

static int
loop (struct relay_s *r, ab_error_t *err)
{
	struct pollfd p[P_COUNT] = {
		[P_DOOR] = { .fd = r->door, .events = POLLIN },
		[P_SIG] = { .fd = r->sigfd, .events = POLLIN },
		[P_STDIN] = { .fd = -1, .events = POLLIN },
		[P_OUT] = { .fd = r->io->relay_out, .events = POLLIN },
		[P_ERR] = { .fd = r->io->relay_err, .events = POLLIN },
		[P_PTY] = { .fd = -1, .events = POLLIN },
	};
	while (!r->exited) {
		fill_poll (r, p);
		if (poll (p, P_COUNT, -1) < 0) {
			if (errno == EINTR)
				continue;
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
		}
		if (p[P_SIG].revents)
			on_signals (r, err);
		if (p[P_OUT].revents && !pump (r->io->relay_out, STDOUT_FILENO))
			p[P_OUT].fd = -1;
		if (p[P_ERR].revents && !pump (r->io->relay_err, STDERR_FILENO))
			p[P_ERR].fd = -1;
		if (p[P_PTY].revents && !pump (r->pty, STDOUT_FILENO)) {
			close (r->pty);
			r->pty = -1; /* EIO: every slave is closed */
		}
		if (p[P_STDIN].fd >= 0 && p[P_STDIN].revents)
			on_stdin (r);
		if (p[P_DOOR].revents && on_door (r, err) < 0)
			return -1;
	}
	/* The agent has ended every process: what is left in the pipes is the
	 * tail of the output, and EOF follows it. */
	drain (p[P_OUT].fd >= 0 ? r->io->relay_out : -1, STDOUT_FILENO);
	drain (p[P_ERR].fd >= 0 ? r->io->relay_err : -1, STDERR_FILENO);
	if (r->pty >= 0)
		drain (r->pty, STDOUT_FILENO);
	return 0;
}

int
ab_run_session (int door, const struct ab_exec_msg_s *exec, struct ab_run_io_s *io,
                struct ab_run_outcome_s *out, ab_error_t *err)
{
	struct relay_s r = { .door = door, .pty = -1, .io = io, .out = out };
	struct ab_tlv_writer_s w = { 0 };
	sigset_t old;
	int rc;

	memset (out, 0, sizeof *out);
	if ((r.sigfd = block_signals (&old, err)) < 0)
		return err->kind != AB_E_NONE ? -1 : ab_error (err, errno, AB_E_SYSTEM, "signalfd");
	for (size_t i = 0; i < io->n_listen; i++) {
		ab_tlv_put_u32 (&w, AB_TAG_PORT, io->listen_ports[i]);
		rc = ab_frame_send (door, AB_MSG_EGRESS_LISTEN, 0, w.buf, w.len, NULL, 0, err);
		w.len = 0;
		if (rc < 0)
			goto out;
	}
	ab_exec_msg_encode (&w, exec);
	rc = ab_frame_send (door, AB_MSG_EXEC, 0, w.buf, w.len, NULL, 0, err);
	if (rc == 0) {
		enter_raw_mode (&r);
		rc = loop (&r, err);
		leave_raw_mode (&r);
	}
out:
	ab_tlv_writer_free (&w);
	if (r.pty >= 0)
		close (r.pty);
	close (r.sigfd);
	sigprocmask (SIG_SETMASK, &old, NULL);
	return rc;
}
