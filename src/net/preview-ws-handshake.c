#include "net/preview-ws-handshake.h"

#include <string.h>

void
ab_ws_format_request (struct ab_iobuf_s *out, const char *host_header, const char *path,
                      const char *key, const struct ab_preview_headers_s *extra)
{
	ab_iobuf_printf (out,
	                 "GET %s HTTP/1.1\r\n"
	                 "Host: %s\r\n"
	                 "Upgrade: websocket\r\n"
	                 "Connection: Upgrade\r\n"
	                 "Sec-WebSocket-Key: %s\r\n"
	                 "Sec-WebSocket-Version: 13\r\n",
	                 path, host_header, key);
	for (size_t i = 0; extra != NULL && i < extra->n; i++)
		ab_iobuf_printf (out, "%s: %s\r\n", extra->v[i].name, extra->v[i].value);
	ab_iobuf_append (out, "\r\n", 2);
}

/* Does a comma-separated list hold the token (case-insensitively)? */
static bool
list_has_token (const char *v, size_t len, const char *lower)
{
	size_t i = 0;

	while (i < len) {
		size_t start, end;

		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		start = i;
		while (i < len && v[i] != ',')
			i++;
		end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (end > start && ab_http_token_eq (v + start, end - start, lower))
			return true;
	}
	return false;
}

/* Fields of the response by lower-case name: how many, and the last one. */
static unsigned
find_field (const struct ab_http_head_s *h, const char *lower, const struct ab_http_field_s **last)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h->n_fields; i++)
		if (ab_http_token_eq (h->fields[i].name, h->fields[i].name_len, lower)) {
			*last = &h->fields[i];
			n++;
		}
	return n;
}

static int
refuse (const char **why, const char *reason)
{
	*why = reason;
	return -1;
}

int
ab_ws_check_response (const struct ab_http_head_s *h, const char *key, const char **why)
{
	const struct ab_http_field_s *f = NULL;
	char want[AB_WS_ACCEPT_LEN + 1];
	bool conn_upgrade = false;

	if (h->status != 101)
		return refuse (why, "server did not switch protocols");
	if (find_field (h, "upgrade", &f) != 1
	    || !ab_http_token_eq (f->value, f->value_len, "websocket"))
		return refuse (why, "missing or wrong Upgrade field");
	for (unsigned i = 0; i < h->n_fields; i++)
		if (ab_http_token_eq (h->fields[i].name, h->fields[i].name_len, "connection")
		    && list_has_token (h->fields[i].value, h->fields[i].value_len, "upgrade"))
			conn_upgrade = true;
	if (!conn_upgrade)
		return refuse (why, "missing Connection: upgrade");
	ab_ws_accept_key (key, strlen (key), want);
	if (find_field (h, "sec-websocket-accept", &f) != 1 || f->value_len != AB_WS_ACCEPT_LEN
	    || memcmp (f->value, want, AB_WS_ACCEPT_LEN) != 0)
		return refuse (why, "wrong Sec-WebSocket-Accept");
	/* 4.1 (5) and (6): we offered no extension and no subprotocol. */
	if (find_field (h, "sec-websocket-extensions", &f) != 0)
		return refuse (why, "server chose an extension we did not offer");
	if (find_field (h, "sec-websocket-protocol", &f) != 0)
		return refuse (why, "server chose a subprotocol we did not offer");
	return 0;
}
