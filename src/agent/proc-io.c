/* A process's bytes: its output is read into a ring (the last 1 MiB per
 * stream is kept for PROC_ATTACH) and sent to every channel following it,
 * each at its own position and within its own credit.  The pipes are read
 * only while every follower is less than AB_PROC_LAG_MAX behind, so a slow
 * client makes the process block on write instead of making us buffer;
 * with no follower at all the output drains into the ring (a detached
 * server must never stall for want of a reader).  Stdin is a queue fed by
 * STDIN frames (credit returned as bytes reach the pipe) and PROC_STDIN
 * requests (answered as their bytes reach the pipe). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent/proc.h"
#include "base/fd.h"
#include "base/xalloc.h"

#define READ_CHUNK (64U * 1024)

static const uint16_t stream_type[2] = { AB_MSG_STDOUT, AB_MSG_STDERR };

/* ---- output -------------------------------------------------------------- */

static bool
may_read (const struct ab_proc_s *p, int i)
{
	for (const struct ab_follower_s *f = p->followers; f; f = f->next)
		if (p->out[i].ring.end - f->pos[i] >= AB_PROC_LAG_MAX)
			return false;
	return true;
}

void
ab_proc_update_reading (struct ab_proc_s *p)
{
	for (int i = 0; i < 2; i++)
		if (p->out[i].fd >= 0)
			ab_loop_set (&p->out[i].w, may_read (p, i) ? EPOLLIN : 0);
}

static void
close_stream (struct ab_stream_s *st)
{
	if (st->fd < 0)
		return;
	ab_loop_del (&st->w);
	close (st->fd);
	st->fd = -1;
}

/* Read what is there; false at EOF (or EIO: every pty slave is closed). */
static bool
read_stream (struct ab_stream_s *st, bool until_empty)
{
	static uint8_t buf[READ_CHUNK];

	do {
		ssize_t n = read (st->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		ab_ring_append (&st->ring, buf, (size_t)n);
	} while (until_empty);
	return true;
}

static void
on_output (struct ab_watch_s *w, uint32_t events)
{
	struct ab_stream_s *st = w->ctx;
	struct ab_proc_s *p = st->p;

	if (!read_stream (st, false)) {
		close_stream (st);
		ab_proc_check_finished (p);
	}
	ab_proc_pump_followers (p);
	ab_proc_update_reading (p);
}

void
ab_proc_drain_now (struct ab_proc_s *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->out[i].fd < 0)
			continue;
		ab_set_nonblock (p->out[i].fd, 1);
		read_stream (&p->out[i], true);
		close_stream (&p->out[i]);
	}
}

void
ab_proc_io_start (struct ab_proc_s *p, int out_fd, int err_fd)
{
	int fds[2] = { out_fd, err_fd };

	for (int i = 0; i < 2; i++) {
		p->out[i].p = p;
		p->out[i].fd = fds[i];
		p->out[i].w.fd = -1;
		if (fds[i] < 0)
			continue;
		/* A fresh pipe's read end or pty dup has no status flag to
		 * keep: one F_SETFL instead of ab_set_nonblock's two calls. */
		fcntl (fds[i], F_SETFL, O_NONBLOCK);
		if (ab_loop_add (&p->out[i].w, fds[i], EPOLLIN, on_output, &p->out[i]) < 0)
			close_stream (&p->out[i]);
	}
}

/* ---- followers ----------------------------------------------------------- */

static void
send_exit (struct ab_follower_s *f)
{
	struct ab_proc_s *p = f->p;
	struct ab_msg_s m;

	ab_msg_init (&m, AB_MSG_PROC_EXIT);
	ab_msg_set (&m, wait_status, AB_TAG_WAIT_STATUS, (uint32_t)p->wait_status);
	ab_msg_set (&m, timed_out, AB_TAG_TIMED_OUT, p->timed_out);
	ab_msg_set (&m, exec_errno, AB_TAG_EXEC_ERRNO, (uint32_t)p->exec_errno);
	ab_session_send_msg (f->ch->s, f->ch->id, &m);
	ab_channel_finish (f->ch, NULL);
}

static void
follower_pump (struct ab_channel_s *ch)
{
	struct ab_follower_s *f = ch->ctx;
	struct ab_proc_s *p = f->p;

	for (int i = 0; i < 2; i++) {
		const struct ab_ring_s *r = &p->out[i].ring;
		if (f->pos[i] < r->start)
			f->pos[i] = r->start; /* older than what is kept (attach) */
		while (f->pos[i] < r->end && ab_channel_writable (ch)) {
			const uint8_t *data;
			size_t n = ab_ring_peek (r, f->pos[i], &data);
			size_t sent = ab_channel_send_data (ch, stream_type[i], data, n);
			f->pos[i] += sent;
			if (sent < n)
				break;
		}
	}
	if (p->finished && f->pos[0] == p->out[0].ring.end && f->pos[1] == p->out[1].ring.end)
		send_exit (f); /* frees f */
	else
		ab_proc_update_reading (p); /* caught up: the pipes may flow again */
}

void
ab_proc_pump_followers (struct ab_proc_s *p)
{
	struct ab_follower_s *f, *next;

	for (f = p->followers; f; f = next) {
		next = f->next;
		follower_pump (f->ch);
	}
}

static void
drop_channel_acks (struct ab_proc_s *p, struct ab_channel_s *ch)
{
	for (struct ab_stdin_ack_s *a = p->acks; a; a = a->next)
		if (a->ch == ch)
			a->ch = NULL;
}

static void
follower_destroy (struct ab_channel_s *ch)
{
	struct ab_follower_s *f = ch->ctx;
	struct ab_proc_s *p = f->p;

	for (struct ab_follower_s **pp = &p->followers; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	drop_channel_acks (p, ch);
	free (f);
	ab_proc_update_reading (p);
}

static void
follower_data (struct ab_channel_s *ch, const uint8_t *data, size_t n)
{
	struct ab_follower_s *f = ch->ctx;

	if (f->p->in_fd < 0 || f->p->stdin_close_pending) {
		ab_channel_grant (ch, n); /* nowhere to go: dropped, like a closed pipe */
		return;
	}
	ab_proc_stdin_push (f->p, data, n, NULL, 0, ch);
}

static void
follower_eof (struct ab_channel_s *ch)
{
	struct ab_follower_s *f = ch->ctx;
	ab_proc_stdin_close (f->p);
}

static const struct ab_channel_ops_s follower_ops = {
	.pump = follower_pump,
	.data = follower_data,
	.eof = follower_eof,
	.destroy = follower_destroy,
};

int
ab_proc_follow (struct ab_proc_s *p, struct ab_session_s *s, uint32_t channel, bool replay,
                ab_error_t *err)
{
	struct ab_follower_s *f = xcalloc (1, sizeof *f);

	f->p = p;
	f->ch = ab_channel_open (s, channel, &follower_ops, f, err);
	if (!f->ch) {
		free (f);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		f->pos[i] = replay ? p->out[i].ring.start : p->out[i].ring.end;
	f->next = p->followers;
	p->followers = f;
	return 0;
}

/* ---- stdin ---------------------------------------------------------------- */

static void
run_acks (struct ab_proc_s *p)
{
	while (p->acks && p->acks->end <= p->in_written) {
		struct ab_stdin_ack_s *a = p->acks;
		p->acks = a->next;
		if (a->ch)
			ab_channel_grant (a->ch, a->bytes);
		else if (a->s)
			ab_session_ok (a->s, a->req_id, NULL);
		free (a);
	}
	if (!p->acks)
		p->acks_tail = &p->acks;
}

static void
close_stdin_fd (struct ab_proc_s *p)
{
	if (p->in_fd < 0)
		return;
	ab_loop_del (&p->in_w);
	close (p->in_fd);
	p->in_fd = -1;
}

/* The process will take no more stdin: what was queued is answered with
 * FAIL (requests) or simply granted back (streams). */
void
ab_proc_stdin_abort (struct ab_proc_s *p, const char *why)
{
	ab_error_t err = AB_ERROR_INIT;

	ab_error (&err, 0, AB_E_CONFLICT, "%s", why);
	close_stdin_fd (p);
	while (p->acks) {
		struct ab_stdin_ack_s *a = p->acks;
		p->acks = a->next;
		if (a->ch)
			ab_channel_grant (a->ch, a->bytes);
		else if (a->s)
			ab_session_fail (a->s, a->req_id, &err);
		free (a);
	}
	p->acks_tail = &p->acks;
	p->in_q_off = p->in_q_len = 0;
	p->in_written = p->in_queued;
}

static void
write_stdin (struct ab_proc_s *p)
{
	while (p->in_q_len) {
		ssize_t n = write (p->in_fd, p->in_q + p->in_q_off, p->in_q_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			ab_proc_stdin_abort (p, "the process closed its stdin");
			return;
		}
		p->in_q_off += (size_t)n;
		p->in_q_len -= (size_t)n;
		p->in_written += (uint64_t)n;
	}
	if (!p->in_q_len)
		p->in_q_off = 0;
	run_acks (p);
	if (!p->in_q_len && p->stdin_close_pending) {
		/* A terminal has no half-close: end of input is the EOF character. */
		if (p->tty)
			ab_write_all (p->in_fd, "\x04", 1);
		close_stdin_fd (p);
		return;
	}
	ab_loop_set (&p->in_w, p->in_q_len ? EPOLLOUT : 0);
}

static void
on_stdin_writable (struct ab_watch_s *w, uint32_t events)
{
	write_stdin (w->ctx);
}

void
ab_proc_stdin_push (struct ab_proc_s *p, const uint8_t *data, size_t n, struct ab_session_s *s,
                    uint32_t req_id, struct ab_channel_s *ch)
{
	struct ab_stdin_ack_s *a = xcalloc (1, sizeof *a);

	if (p->in_q_off + p->in_q_len + n > p->in_q_cap) {
		memmove (p->in_q, p->in_q + p->in_q_off, p->in_q_len);
		p->in_q_off = 0;
		if (p->in_q_len + n > p->in_q_cap) {
			p->in_q_cap = p->in_q_len + n;
			p->in_q = xrealloc (p->in_q, p->in_q_cap);
		}
	}
	memcpy (p->in_q + p->in_q_off + p->in_q_len, data, n);
	p->in_q_len += n;
	p->in_queued += n;
	a->end = p->in_queued;
	a->s = s;
	a->req_id = req_id;
	a->ch = ch;
	a->bytes = n;
	*p->acks_tail = a;
	p->acks_tail = &a->next;
	if (p->in_w.fd < 0)
		ab_loop_add (&p->in_w, p->in_fd, 0, on_stdin_writable, p);
	write_stdin (p);
}

void
ab_proc_stdin_close (struct ab_proc_s *p)
{
	if (p->in_fd < 0 || p->stdin_close_pending)
		return;
	p->stdin_close_pending = true;
	if (p->in_w.fd < 0)
		ab_loop_add (&p->in_w, p->in_fd, 0, on_stdin_writable, p);
	write_stdin (p);
}
