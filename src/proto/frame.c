#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/xalloc.h"
#include "proto/proto.h"

int
ab_frame_send (int fd, uint16_t type, uint32_t channel, const void *payload, size_t len,
               const int *fds, size_t n_fds, ab_error_t *err)
{
	uint8_t *buf;
	int r;

	if (len > AB_PROTO_MAX_PAYLOAD)
		return ab_error (err, 0, AB_E_LIMIT, "message of %zu bytes exceeds the frame limit",
		                 len);
	buf = xmalloc (AB_PROTO_HEADER_SIZE + len);
	ab_proto_encode_header (buf, type, channel, (uint32_t)len);
	if (len)
		memcpy (buf + AB_PROTO_HEADER_SIZE, payload, len);
	if (n_fds)
		r = ab_send_with_fds (fd, buf, AB_PROTO_HEADER_SIZE + len, fds, n_fds);
	else
		r = ab_write_all (fd, buf, AB_PROTO_HEADER_SIZE + len);
	free (buf);
	if (r < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "send frame");
	return 0;
}

int
ab_frame_recv (int fd, struct ab_frame_s *frame, int *fds, size_t max_fds, size_t *n_fds,
               ab_error_t *err)
{
	uint8_t hdr[AB_PROTO_HEADER_SIZE];
	size_t got = 0, nf = 0;

	if (n_fds)
		*n_fds = 0;
	while (got < sizeof hdr) {
		ssize_t n;
		if (max_fds && n_fds && *n_fds == 0) {
			n = ab_recv_with_fds (fd, hdr + got, sizeof hdr - got, fds, max_fds, &nf);
			*n_fds = nf;
		} else {
			n = read (fd, hdr + got, sizeof hdr - got);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "receive frame");
		if (n == 0) {
			if (got == 0)
				return 0;
			return ab_error (err, 0, AB_E_INVALID,
			                 "connection closed inside a frame header");
		}
		got += (size_t)n;
	}
	if (ab_proto_decode_header (hdr, frame, err) < 0)
		return -1;
	frame->payload = xmalloc (frame->length);
	if (frame->length && ab_read_exact (fd, frame->payload, frame->length) < 0) {
		int e = errno;
		ab_frame_free (frame);
		if (e == 0)
			return ab_error (err, 0, AB_E_INVALID, "connection closed inside a frame");
		return ab_error (err, e, AB_E_SYSTEM, "receive frame payload");
	}
	return 1;
}

void
ab_frame_free (struct ab_frame_s *frame)
{
	free (frame->payload);
	frame->payload = NULL;
}
