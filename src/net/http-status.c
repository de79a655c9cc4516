/* Reason phrases: see http-status.h. */
#include <stddef.h>

#include "net/http-status.h"

static const struct {
	int status;
	const char *text;
} status_texts[] = {
	{ 100, "Continue" },
	{ 101, "Switching Protocols" },
	{ 200, "OK" },
	{ 201, "Created" },
	{ 204, "No Content" },
	{ 400, "Bad Request" },
	{ 401, "Unauthorized" },
	{ 403, "Forbidden" },
	{ 404, "Not Found" },
	{ 405, "Method Not Allowed" },
	{ 408, "Request Timeout" },
	{ 409, "Conflict" },
	{ 413, "Content Too Large" },
	{ 429, "Too Many Requests" },
	{ 431, "Request Header Fields Too Large" },
	{ 500, "Internal Server Error" },
	{ 501, "Not Implemented" },
	{ 502, "Bad Gateway" },
	{ 503, "Service Unavailable" },
	{ 504, "Gateway Timeout" },
	{ 505, "HTTP Version Not Supported" },
};

const char *
ab_http_status_text (int status)
{
	for (size_t i = 0; i < sizeof status_texts / sizeof status_texts[0]; i++)
		if (status_texts[i].status == status)
			return status_texts[i].text;
	return "Error";
}
