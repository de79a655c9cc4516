/* bench/agent-tools/mcp-exec's timing helper: prints one duration in
 * microseconds per line.
 *
 *   mcp-exec-client SOCKET ID N   initialize on POST /v1/sandboxes/ID/mcp, then N
 *                                 sequential tools/call sandbox_exec {"argv":["true"]}
 *                                 on one keep-alive connection
 *
 * Standalone on purpose (libc only): it measures the daemon, not our client code. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../daemon-http.h"

int
main (int argc, char **argv)
{
	char path[256], out[8192], head[4096], extra[256], sid[64];
	const char *h;
	int fd, n;

	if (argc != 4) {
		fprintf (stderr, "usage: mcp-exec-client SOCKET ID N\n");
		return 2;
	}
	n = atoi (argv[3]);
	fd = dial (argv[1]);
	snprintf (path, sizeof path, "/v1/sandboxes/%s/mcp", argv[2]);
	if (call_with (fd, "POST", path, NULL,
	               "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
	               "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
	               "\"name\":\"bench\",\"version\":\"1\"}}}",
	               out, sizeof out, head, sizeof head)
	            != 200
	    || !(h = strcasestr (head, "\nmcp-session-id: "))
	    || sscanf (h + 17, "%63[0-9a-f]", sid) != 1) {
		fprintf (stderr, "initialize failed: %s\n%s\n", head, out);
		return 1;
	}
	snprintf (extra, sizeof extra, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n",
	          sid);
	if (call_with (fd, "POST", path, extra,
	               "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", out,
	               sizeof out, NULL, 0)
	    != 202) {
		fprintf (stderr, "notifications/initialized failed\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		long long t0 = now_us ();
		int st = call_with (
		        fd, "POST", path, extra,
		        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
		        "\"name\":\"sandbox_exec\",\"arguments\":{\"argv\":[\"true\"]}}}",
		        out, sizeof out, NULL, 0);
		long long t1 = now_us ();
		if (st != 200 || !strstr (out, "\"exit_code\":0")) {
			fprintf (stderr, "sandbox_exec failed: %d %s\n", st, out);
			return 1;
		}
		printf ("%lld\n", t1 - t0);
	}
	call_with (fd, "DELETE", path, extra, NULL, out, sizeof out, NULL, 0);
	return 0;
}
