/* What a proxy writes when it relays an HTTP/1.1 message, shared by the
 * egress and the credential proxies: field lines copied from a parsed
 * head, framing regenerated from what the parser understood (never
 * copied: request smuggling, RFC 9112 11.2), and how many bytes of a body
 * belong to the message being relayed. */
#ifndef AB_NET_HTTP_RELAY_H
#define AB_NET_HTTP_RELAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/http-head.h"
#include "net/iobuf.h"

/* "Name: value\r\n" */
void ab_http_append_field (struct ab_iobuf_s *b, const struct ab_http_field_s *f);
/* Every field of h except those with a flag in drop (AB_HTTP_F_*). */
void ab_http_append_fields (struct ab_iobuf_s *b, const struct ab_http_head_s *h, unsigned drop);
/* Transfer-Encoding: chunked, or Content-Length when the head had one. */
void ab_http_append_framing (struct ab_iobuf_s *b, ab_http_body_kind body, bool has_cl,
                             uint64_t cl);
/* The status line, fields (minus hop-by-hop and framing), regenerated
 * framing and, for a final response, "Connection: close" when asked. */
void ab_http_append_response_head (struct ab_iobuf_s *b, const struct ab_http_head_s *h,
                                   bool conn_close);
/* How many of the n bytes at p belong to the message being relayed; *done
 * when its end is among them; -1 with *e on a bad chunked framing. */
ssize_t ab_http_frame_take (ab_http_body_kind kind, uint64_t *remaining,
                            struct ab_http_chunked_s *ch, const char *p, size_t n, bool *done,
                            struct ab_http_error_s *e);

#endif
