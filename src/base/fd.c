#include "base/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/sys.h"

#define AB_MAX_PASSED_FDS 8

int
ab_write_all (int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write (fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
ab_read_exact (int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read (fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
ab_send_with_fds (int sock, const void *buf, size_t len, const int *fds, size_t n_fds)
{
	union {
		char buf[CMSG_SPACE (sizeof (int) * AB_MAX_PASSED_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > AB_MAX_PASSED_FDS) {
		errno = EINVAL;
		return -1;
	}
	if (n_fds > 0) {
		struct cmsghdr *cmsg;
		memset (&u, 0, sizeof u);
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE (sizeof (int) * n_fds);
		cmsg = CMSG_FIRSTHDR (&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN (sizeof (int) * n_fds);
		memcpy (CMSG_DATA (cmsg), fds, sizeof (int) * n_fds);
	}
	for (;;) {
		ssize_t n = sendmsg (sock, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if ((size_t)n == len)
			return 0;
		/* Ancillary data went with the first byte; send the rest plainly. */
		return ab_write_all (sock, (const char *)buf + n, len - (size_t)n);
	}
}

ssize_t
ab_recv_with_fds (int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *n_fds)
{
	union {
		char buf[CMSG_SPACE (sizeof (int) * AB_MAX_PASSED_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov,
		              .msg_iovlen = 1,
		              .msg_control = u.buf,
		              .msg_controllen = sizeof u.buf };
	ssize_t n;

	*n_fds = 0;
	do
		n = recvmsg (sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c)) {
		size_t count;
		int tmp[AB_MAX_PASSED_FDS];
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		count = (c->cmsg_len - CMSG_LEN (0)) / sizeof (int);
		if (count > AB_MAX_PASSED_FDS)
			count = AB_MAX_PASSED_FDS;
		memcpy (tmp, CMSG_DATA (c), count * sizeof (int));
		for (size_t i = 0; i < count; i++) {
			if (*n_fds < max_fds)
				fds[(*n_fds)++] = tmp[i];
			else
				close (tmp[i]); /* never keep fds nobody asked for */
		}
	}
	return n;
}

int
ab_set_cloexec (int fd, int on)
{
	int flags = fcntl (fd, F_GETFD);
	if (flags < 0)
		return -1;
	flags = on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC;
	return fcntl (fd, F_SETFD, flags);
}

int
ab_set_nonblock (int fd, int on)
{
	int flags = fcntl (fd, F_GETFL);
	if (flags < 0)
		return -1;
	flags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	return fcntl (fd, F_SETFL, flags);
}

static int
cmp_int (const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int
ab_close_fds_except (const int *keep, size_t n)
{
	int sorted[16];
	unsigned int next = 3;
	size_t m = 0;

	if (n > sizeof sorted / sizeof *sorted) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (keep[i] > 2)
			sorted[m++] = keep[i];
	qsort (sorted, m, sizeof *sorted, cmp_int);
	for (size_t i = 0; i < m; i++) {
		if ((unsigned int)sorted[i] > next
		    && ab_sys_close_range (next, (unsigned int)sorted[i] - 1, 0) < 0)
			return -1;
		next = (unsigned int)sorted[i] + 1;
	}
	return ab_sys_close_range (next, ~0U, 0);
}

void
ab_iov_advance (struct iovec **iov, int *n, size_t done)
{
	while (*n > 0 && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*n)--;
	}
	if (*n > 0) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}
