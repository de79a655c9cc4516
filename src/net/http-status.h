/* Reason phrases for the statuses the daemon, the preview bridge and the
 * proxies answer with themselves (RFC 9110 15).  The phrase is advisory
 * (RFC 9112 4): clients act on the code, so one table serves every
 * server. */
#ifndef AB_NET_HTTP_STATUS_H
#define AB_NET_HTTP_STATUS_H

/* "Bad Request" for 400, ...; "Error" for a code not in the table. */
const char *ab_http_status_text (int status);

#endif
