/* `preview-bridge request`: one JSON document in, one HTTP/1.1 request to
 * a server in the sandbox, one JSON document out.
 *
 *   in:  {target: {hostname, port}, method="GET", path="/", headers={},
 *         bodyBase64="", maxResponseBytes=8 MiB, timeoutMs=30000}
 *   out: {status, headers, bodyBase64}
 *
 * Failures are documents of the same shape with a text/plain body:
 *   400 "malformed request document"      not JSON, or a field of the wrong
 *                                         type or out of range
 *   400 "invalid preview target"          target missing or invalid
 *   502 "upstream connection failed"      resolve or connect failed
 *   502 "upstream response failed"        send/receive error, malformed response
 *   502 "upstream response exceeded limit" body over maxResponseBytes
 *   504 "upstream timed out"              timeoutMs passed (whole exchange) */
#ifndef AB_NET_PREVIEW_REQUEST_H
#define AB_NET_PREVIEW_REQUEST_H

#include <jansson.h>
#include <stddef.h>

/* Documents larger than this (a body of ~48 MiB) are malformed. */
#define AB_PREVIEW_REQUEST_DOC_MAX      (64u << 20)
#define AB_PREVIEW_DEFAULT_MAX_RESPONSE (8u << 20)
#define AB_PREVIEW_DEFAULT_TIMEOUT_MS   30000u
/* Upper bounds for the caller's numbers. */
#define AB_PREVIEW_MAX_RESPONSE_LIMIT (1u << 30)
#define AB_PREVIEW_MAX_TIMEOUT_MS     (24u * 3600 * 1000)

/* Run one request described by doc[0..len) (NULL = the document could not
 * be read); returns the answer document. */
json_t *ab_preview_request_run (const char *doc, size_t len);

/* An error answer: {status, headers: {content-type: text/plain}, bodyBase64}. */
json_t *ab_preview_error_document (int status, const char *message);

#endif
