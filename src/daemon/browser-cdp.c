/* The daemon's DevTools streams: one agent port stream to Chromium's
 * listener on the sandbox's loopback (never a host port into the sandbox),
 * spoken over by the one CDP client (net/cdp.c). */
#include "daemon/browser.h"

static int
port_stream (struct ab_daemon_s *d, struct ab_box_s *b, uint16_t port, ab_error_t *err)
{
	ab_agent_conn_t *c = ab_box_connect (d, b, err);
	int fd = c ? ab_agent_port_open (&c, port, err) : -1;

	ab_agent_close (c);
	return fd;
}

json_t *
ab_browser_http_json (struct ab_daemon_s *d, struct ab_box_s *b, uint16_t port, const char *path,
                      ab_error_t *err)
{
	int fd = port_stream (d, b, port, err);

	return fd < 0 ? NULL : ab_cdp_http_json (fd, port, path, err);
}

int
ab_browser_cdp_open (struct ab_daemon_s *d, struct ab_box_s *b, uint16_t port, const char *path,
                     struct ab_cdp_s *c, ab_error_t *err)
{
	int fd = port_stream (d, b, port, err);

	c->fd = -1;
	return fd < 0 ? -1 : ab_cdp_attach (c, fd, port, path, err);
}
