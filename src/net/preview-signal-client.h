/* `preview-bridge signal [--endpoint URL]`: POST one signalling document
 * (stdin) to <endpoint>/signal and print the relay's JSON answer, whatever
 * its status.  Failures print one of three documents:
 *   {"error":"signaling relay unavailable"}       connect, send or receive failed
 *   {"error":"signaling relay timed out"}         no whole answer within 10 s
 *   {"error":"signaling relay returned malformed JSON"}
 * The endpoint is --endpoint, else $T3_PREVIEW_BRIDGE_ENDPOINT, else
 * http://127.0.0.1:8080; only http:// (the relay is on the sandbox's side
 * of the door). */
#ifndef AB_NET_PREVIEW_SIGNAL_CLIENT_H
#define AB_NET_PREVIEW_SIGNAL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_PREVIEW_SIGNAL_DEFAULT_ENDPOINT "http://127.0.0.1:8080"
#define AB_PREVIEW_SIGNAL_ENDPOINT_ENV     "T3_PREVIEW_BRIDGE_ENDPOINT"
#define AB_PREVIEW_SIGNAL_TIMEOUT_MS       10000u
/* A document larger than this is not read from stdin at all. */
#define AB_PREVIEW_SIGNAL_DOC_MAX (8u << 20)
/* Answers: a poll returns at most one session's window (8 MiB of documents). */
#define AB_PREVIEW_SIGNAL_ANSWER_MAX (64u << 20)

struct ab_preview_endpoint_s {
	char *dial_host; /* for getaddrinfo: no brackets */
	uint16_t port;
	char *host_header; /* the authority as given */
	char *path;        /* the endpoint's path + "/signal" */
};

/* Parse "http://host[:port][/prefix]"; AB_E_INVALID when it is not one. */
int ab_preview_endpoint_parse (const char *url, struct ab_preview_endpoint_s *ep, ab_error_t *err);
void ab_preview_endpoint_free (struct ab_preview_endpoint_s *ep);

/* POST body to the endpoint; returns the line to print (without '\n'). */
char *ab_preview_signal_send (const struct ab_preview_endpoint_s *ep, const void *body, size_t len,
                              uint64_t timeout_ms);

#endif
