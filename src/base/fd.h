/* Small fd helpers: whole reads and writes, fd passing. */
#ifndef AB_BASE_FD_H
#define AB_BASE_FD_H

#include <stddef.h>
#include <sys/uio.h>
#include <sys/types.h>

/* Write all of buf, retrying on EINTR and short writes; -1 with errno. */
int ab_write_all (int fd, const void *buf, size_t len);
/* Past the first done bytes of an iovec array (after a short writev or
 * sendmsg): *iov and *n move to what is still to write. */
void ab_iov_advance (struct iovec **iov, int *n, size_t done);
/* Read exactly len bytes; 0 on success, -1 with errno (EPIPE-like: errno=0 on EOF). */
int ab_read_exact (int fd, void *buf, size_t len);
/* Send bytes plus optional fds (SCM_RIGHTS) on a unix socket. */
int ab_send_with_fds (int sock, const void *buf, size_t len, const int *fds, size_t n_fds);
/* Receive up to len bytes and up to max_fds fds (each O_CLOEXEC). */
ssize_t ab_recv_with_fds (int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *n_fds);
int ab_set_cloexec (int fd, int on);
int ab_set_nonblock (int fd, int on);

/* Close every fd except 0, 1, 2 and those in keep[] (negative entries are
 * ignored): a forked helper must not hold the caller's pipe ends, or the
 * peers never see EOF. */
int ab_close_fds_except (const int *keep, size_t n);

#endif
