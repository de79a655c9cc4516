/* The REST API's routes (docs/daemon.md), as a table: method, path pattern
 * ('*' is one path segment, handed to the handler as a parameter). */
#include "daemon/daemon-internal.h"

#include <string.h>

#include "base/xalloc.h"
#include "daemon/browser.h"

typedef void (*handler_fn) (struct ab_req_s *r);

static const struct {
	const char *method, *pattern;
	handler_fn fn;
} routes[] = {
	{ "GET", "/v1/health", ab_api_health },
	{ "GET", "/v1/metrics", ab_api_metrics },
	{ "POST", "/v1/sandboxes", ab_api_sandbox_create },
	{ "GET", "/v1/sandboxes", ab_api_sandbox_list },
	{ "GET", "/v1/sandboxes/*", ab_api_sandbox_get },
	{ "DELETE", "/v1/sandboxes/*", ab_api_sandbox_delete },
	{ "POST", "/v1/sandboxes/*/exec", ab_api_exec },
	{ "POST", "/v1/sandboxes/*/pause", ab_api_sandbox_pause },
	{ "POST", "/v1/sandboxes/*/resume", ab_api_sandbox_resume },
	{ "POST", "/v1/sandboxes/*/snapshots", ab_api_snapshot_create },
	{ "GET", "/v1/sandboxes/*/snapshots", ab_api_snapshot_list },
	{ "POST", "/v1/sandboxes/*/fork", ab_api_sandbox_fork },
	{ "GET", "/v1/snapshots", ab_api_snapshot_list },
	{ "GET", "/v1/snapshots/*", ab_api_snapshot_get },
	{ "DELETE", "/v1/snapshots/*", ab_api_snapshot_delete },
	{ "GET", "/v1/sandboxes/*/exec/ws", ab_api_exec_ws },
	{ "GET", "/v1/sandboxes/*/exec-server", ab_api_exec_server },
	{ "POST", "/v1/sandboxes/*/tcp/*", ab_api_port_connect },
	{ "GET", "/v1/sandboxes/*/processes", ab_api_proc_list },
	{ "POST", "/v1/sandboxes/*/processes/*/stdin", ab_api_proc_stdin },
	{ "POST", "/v1/sandboxes/*/processes/*/close-stdin", ab_api_proc_close_stdin },
	{ "POST", "/v1/sandboxes/*/processes/*/signal", ab_api_proc_signal },
	{ "POST", "/v1/sandboxes/*/processes/*/resize", ab_api_proc_resize },
	{ "GET", "/v1/sandboxes/*/processes/*/output", ab_api_proc_output },
	{ "GET", "/v1/sandboxes/*/files", ab_api_files_get },
	{ "PUT", "/v1/sandboxes/*/files", ab_api_files_put },
	{ "DELETE", "/v1/sandboxes/*/files", ab_api_files_delete },
	{ "GET", "/v1/sandboxes/*/files/stat", ab_api_files_stat },
	{ "POST", "/v1/sandboxes/*/files/mkdir", ab_api_files_mkdir },
	{ "POST", "/v1/sandboxes/*/files/move", ab_api_files_move },
	{ "POST", "/v1/mcp", ab_api_mcp_post },
	{ "DELETE", "/v1/mcp", ab_api_mcp_delete },
	{ "GET", "/v1/mcp", ab_api_mcp_get },
	{ "POST", "/v1/pools", ab_api_pool_create },
	{ "GET", "/v1/pools", ab_api_pool_list },
	{ "GET", "/v1/pools/*", ab_api_pool_get },
	{ "DELETE", "/v1/pools/*", ab_api_pool_delete },
	{ "POST", "/v1/sandboxes/*/mcp", ab_api_mcp_post },
	{ "DELETE", "/v1/sandboxes/*/mcp", ab_api_mcp_delete },
	{ "GET", "/v1/sandboxes/*/mcp", ab_api_mcp_get },
	{ "POST", "/v1/sandboxes/*/browser", ab_api_browser_launch },
	{ "GET", "/v1/sandboxes/*/browser", ab_api_browser_list },
	{ "GET", "/v1/sandboxes/*/browser/*/cdp", ab_api_browser_cdp },
	{ "POST", "/v1/sandboxes/*/browser/*/*", ab_api_browser_op },
	{ "DELETE", "/v1/sandboxes/*/browser/*", ab_api_browser_close },
	{ "GET", "/v1/sandboxes/*/desktop", ab_api_desktop },
	{ "GET", "/v1/sandboxes/*/vnc", ab_api_vnc },
};

/* 1 when path matches pattern; the '*' segments are copied to params. */
static int
match (const char *pattern, const char *path, char *params[AB_MAX_PARAMS])
{
	int n = 0;

	while (*pattern && *path) {
		if (*pattern == '*') {
			size_t len = strcspn (path, "/");
			if (len == 0 || n == AB_MAX_PARAMS)
				return 0;
			params[n++] = xstrndup (path, len);
			path += len;
			pattern++;
			continue;
		}
		if (*pattern++ != *path++)
			return 0;
	}
	return *pattern == '\0' && *path == '\0';
}

static void
clear_params (struct ab_req_s *r)
{
	for (int i = 0; i < AB_MAX_PARAMS; i++) {
		free (r->params[i]);
		r->params[i] = NULL;
	}
}

void
ab_route (struct ab_req_s *r)
{
	bool path_known = false;

	for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
		int m = match (routes[i].pattern, r->path, r->params);
		if (m && strcmp (routes[i].method, r->method) == 0) {
			routes[i].fn (r);
			clear_params (r);
			return;
		}
		path_known |= m;
		clear_params (r);
	}
	if (path_known)
		ab_resp_fail (r, 405, NULL, "%s is not allowed on %s", r->method, r->path);
	else
		ab_resp_fail (r, 404, "not_found", "no such endpoint: %s", r->path);
}
