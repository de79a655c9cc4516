#include "net/preview-signal-client.h"

#include <jansson.h>
#include <string.h>

#include "base/xalloc.h"
#include "net/http-head.h"
#include "net/preview-buf.h"
#include "net/preview-dial.h"
#include "net/preview-doc.h"
#include "net/preview-http.h"
#include "policy/hostname.h"

int
ab_preview_endpoint_parse (const char *url, struct ab_preview_endpoint_s *ep, ab_error_t *err)
{
	struct ab_http_uri_s u;
	struct ab_hostport_s hp;
	char *authority;
	size_t plen;
	int rc;

	memset (ep, 0, sizeof *ep);
	if (ab_http_split_uri (url, strlen (url), &u) != AB_URI_HTTP)
		return ab_error (err, 0, AB_E_INVALID, "endpoint '%s' is not an http:// URL", url);
	authority = xstrndup (u.authority, u.authority_len);
	rc = ab_hostport_parse (authority, 80, &hp, err);
	if (rc < 0 || hp.port == 0) {
		free (authority);
		return ab_error (err, 0, AB_E_INVALID, "endpoint '%s': invalid host or port", url);
	}
	/* The prefix ends before any query; a trailing '/' is not doubled. */
	plen = strcspn (u.path, "?");
	if (plen > u.path_len)
		plen = u.path_len;
	while (plen > 0 && u.path[plen - 1] == '/')
		plen--;
	ep->dial_host = xstrdup (hp.host);
	ep->port = hp.port;
	ep->host_header = authority;
	ep->path = xasprintf ("%.*s/signal", (int)plen, u.path);
	if (!ab_preview_path_valid (ep->path)) {
		ab_preview_endpoint_free (ep);
		return ab_error (err, 0, AB_E_INVALID, "endpoint '%s': invalid path", url);
	}
	return 0;
}

void
ab_preview_endpoint_free (struct ab_preview_endpoint_s *ep)
{
	free (ep->dial_host);
	free (ep->host_header);
	free (ep->path);
	memset (ep, 0, sizeof *ep);
}

static char *
error_line (const char *message)
{
	json_t *doc = json_pack ("{s:s}", "error", message);
	char *text = json_dumps (doc, JSON_COMPACT);

	json_decref (doc);
	return text;
}

char *
ab_preview_signal_send (const struct ab_preview_endpoint_s *ep, const void *body, size_t len,
                        uint64_t timeout_ms)
{
	struct ab_preview_header_s ct = { (char *)"Content-Type", (char *)"application/json" };
	struct ab_preview_headers_s headers = { &ct, 1 };
	struct ab_preview_http_req_s req = {
		.method = "POST",
		.path = ep->path,
		.host_header = ep->host_header,
		.headers = &headers,
		.body = body,
		.body_len = len,
	};
	struct ab_preview_http_resp_s resp;
	ab_preview_outcome o;
	json_t *answer = NULL;
	char *line;

	o = ab_preview_http_exchange (ep->dial_host, ep->port, &req, AB_PREVIEW_SIGNAL_ANSWER_MAX,
	                              ab_mono_ms () + timeout_ms, &resp);
	if (o == AB_PREVIEW_OK)
		answer = json_loadb (ab_preview_bytes (&resp.body), ab_iobuf_len (&resp.body), 0,
		                     NULL);
	ab_preview_http_resp_free (&resp);
	if (o == AB_PREVIEW_TIMED_OUT)
		return error_line ("signaling relay timed out");
	if (o != AB_PREVIEW_OK)
		return error_line ("signaling relay unavailable");
	if (answer == NULL)
		return error_line ("signaling relay returned malformed JSON");
	line = json_dumps (answer, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref (answer);
	return line;
}
