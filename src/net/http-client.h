/* Outbound HTTP/1.1 connections over TCP or TLS (OpenSSL), for the services
 * on the host side of the sandbox's door (credential proxy, preview bridge).
 *
 *   - TLS peers are verified against the system roots plus the files named
 *     by SSL_CERT_FILE and NODE_EXTRA_CA_CERTS (CA files operators already
 *     set for curl and Node); names with X509_VERIFY_PARAM_set1_host, IP
 *     literals against the certificate's IP SANs
 *     (X509_VERIFY_PARAM_set1_ip_asc).  SNI carries DNS names only, never
 *     an IP literal (RFC 6066 3).
 *   - The route comes from the environment (proxy-env.h): direct, or an
 *     http:// proxy, with CONNECT and TLS inside the tunnel for https
 *     targets and an absolute-URI request for http targets.
 *   - Names are resolved off the loop (resolve.h) and each answer dialed in
 *     turn; sockets are non-blocking and driven by the owner's event loop.
 *
 * The byte stream (ab_stream_s) hides TLS from the owner: read and write
 * behave like read(2)/write(2) on a non-blocking socket (EAGAIN when
 * blocked), and the stream tracks which readiness it waits for, so an
 * edge-triggered owner knows when to try again (TLS may need to write to
 * read, and read to write). */
#ifndef AB_NET_HTTP_CLIENT_H
#define AB_NET_HTTP_CLIENT_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/error.h"
#include "net/iobuf.h"
#include "net/proxy-env.h"
#include "policy/hostname.h"

struct event_base;
struct ab_resolver_s;

/* ---- TLS ------------------------------------------------------------------ */

/* A client context: TLS 1.2 or later, peer verification on, the trust
 * store loaded as described above.  A named extra CA file that cannot be
 * read is reported on warn (when not NULL) and skipped: it can only ever
 * add trust, so leaving it out fails closed.  Free with SSL_CTX_free. */
SSL_CTX *ab_tls_client_ctx_new (FILE *warn, ab_error_t *err);
/* A client session on fd for origin, verified as described above (host
 * name or IP literal, SNI for names only), in connect state; the caller
 * drives the handshake.  NULL with err filled. */
SSL *ab_tls_client_session (SSL_CTX *ctx, int fd, const struct ab_hostport_s *origin,
                            ab_error_t *err);

/* ---- URLs ----------------------------------------------------------------- */

/* An http(s) URL without userinfo, query or fragment: what a service is
 * configured to talk to (a credential upstream's baseUrl). */
struct ab_url_s {
	bool tls;
	struct ab_hostport_s hp; /* host normalised (hostname.h), port defaulted */
	char *path;              /* "" or "/..." without a trailing '/' */
};

int ab_url_parse (const char *text, struct ab_url_s *out, ab_error_t *err);
void ab_url_clear (struct ab_url_s *u);
/* The Host field value: "host", "host:port" or "[v6]:port" (the port only
 * when it is not the scheme's default, RFC 9110 7.2). */
void ab_url_host_field (const struct ab_url_s *u, char *buf, size_t len);

/* ---- streams -------------------------------------------------------------- */

enum { AB_WANT_READ = 1, AB_WANT_WRITE = 2 };

struct ab_stream_s {
	int fd;
	SSL *ssl;   /* NULL: plain TCP */
	bool rd;    /* the socket may be readable (edge seen, no EAGAIN since) */
	bool wr;    /* the socket may be writable */
	int r_want; /* what the last blocked read waits for (AB_WANT_*) */
	int w_want; /* what the last blocked write waits for */
	bool fatal; /* TLS failed: no close_notify may be sent (SSL_shutdown(3)) */
};

void ab_stream_init (struct ab_stream_s *s, int fd);
/* Whether a read (write) may make progress now. */
bool ab_stream_can_read (const struct ab_stream_s *s);
bool ab_stream_can_write (const struct ab_stream_s *s);
/* > 0 bytes, 0 at end of stream, -1 with errno (EAGAIN: wait, EPROTO: TLS
 * failure). */
ssize_t ab_stream_read (struct ab_stream_s *s, void *buf, size_t len);
/* Bytes written (possibly short), -1 with errno. */
ssize_t ab_stream_write (struct ab_stream_s *s, const void *buf, size_t len);
/* b's bytes and then [p, p+n), as one write where the transport allows;
 * returns the bytes taken in total (b's first). */
ssize_t ab_stream_writev2 (struct ab_stream_s *s, struct ab_iobuf_s *b, const char *p, size_t n);
/* Read into b (at most max_cap bytes held); as ab_stream_read. */
ssize_t ab_stream_read_buf (struct ab_stream_s *s, struct ab_iobuf_s *b, size_t chunk,
                            size_t max_cap);
/* Free the TLS state and close the fd. */
void ab_stream_close (struct ab_stream_s *s);

/* ---- outbound connections ------------------------------------------------- */

typedef struct ab_http_client_s ab_http_client_t;

/* Called (on the loop's thread) whenever the connection may have progress
 * to make: socket readiness or a finished name lookup.  It may free the
 * client. */
typedef void (*ab_http_client_notify_fn) (void *arg);

struct ab_http_client_config_s {
	struct event_base *base;
	struct ab_resolver_s *resolver;
	SSL_CTX *tls;                           /* needed for https targets */
	const struct ab_proxy_env_s *proxy_env; /* NULL: always direct */
	size_t max_head;                        /* of a proxy's CONNECT answer */
};

/* Start connecting to the origin of url (borrowed only for the call).
 * Returns NULL with err filled when the route cannot even be chosen (a
 * proxy variable that does not parse). */
ab_http_client_t *ab_http_client_new (const struct ab_http_client_config_s *cfg,
                                      const struct ab_url_s *url, ab_http_client_notify_fn notify,
                                      void *arg, ab_error_t *err);
void ab_http_client_free (ab_http_client_t *c);

/* Advance connection set-up: 1 when ready for the request, 0 to wait for
 * a notification, or a negative error (refused, unreachable proxy, proxy
 * answered non-2xx to CONNECT, TLS verification failed...). */
int ab_http_client_connect_step (ab_http_client_t *c, ab_error_t *err);

/* Once ready: the byte stream to the origin (through the tunnel, if any). */
struct ab_stream_s *ab_http_client_stream (ab_http_client_t *c);

/* Through an http proxy without a tunnel, requests use the absolute form
 * "http://host:port/path" and carry the proxy's credentials (*auth, a full
 * "Proxy-Authorization" value, or NULL). */
bool ab_http_client_absolute_form (const ab_http_client_t *c, const char **auth);

#endif
