/* The MCP tools: one table with each tool's input and output JSON Schema
 * (plain JSON Schema objects, no $schema keyword, so every client's
 * validator reads them) and annotations; tools/list and tools/call; the
 * lifecycle tools (sandbox_create, sandbox_list, sandbox_destroy) and
 * port_url.  On /v1/mcp every sandbox tool takes a `sandbox_id`; on
 * /v1/sandboxes/{id}/mcp there is no such argument and no lifecycle tool.
 *
 * A tool's own failure (bad arguments, a denied path, a sandbox that is
 * gone) is a result with isError and a message the model can act on; only
 * an unknown tool or malformed params are JSON-RPC errors (-32602). */
#include "daemon/mcp-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/websocket.h"

typedef json_t *(*tool_fn) (struct ab_mcp_call_s *call, ab_error_t *err);

static json_t *tool_create (struct ab_mcp_call_s *call, ab_error_t *err);
static json_t *tool_list (struct ab_mcp_call_s *call, ab_error_t *err);
static json_t *tool_destroy (struct ab_mcp_call_s *call, ab_error_t *err);
static json_t *tool_port_url (struct ab_mcp_call_s *call, ab_error_t *err);

/* Annotations: readOnly, destructive, idempotent, openWorld. */
#define RO                                                                                         \
	"{\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":true,"                \
	"\"openWorldHint\":false}"
#define WR(destructive, idempotent, open)                                                          \
	"{\"readOnlyHint\":false,\"destructiveHint\":" #destructive                                \
	",\"idempotentHint\":" #idempotent ",\"openWorldHint\":" #open "}"

enum { SANDBOX, LIFECYCLE };

/* The schemas are JSON text, parsed once (build_lists); a tool of kind
 * SANDBOX gets a required `sandbox_id` on the unbound endpoint. */
static const struct tool_s {
	const char *name, *title, *description;
	int kind;
	const char *input, *output, *annotations;
	tool_fn fn;
} tools[] = {
	{ "sandbox_exec", "Run a command in the sandbox",
	  "Run a shell command (or an argv) inside the sandbox. Returns exit_code, stdout "
	  "and stderr (each capped at 1 MiB; truncated says so) when it finishes within "
	  "yield_ms (default 10000). A command still running then, or started with "
	  "background, returns status running and a session_id: follow it with "
	  "sandbox_process. timeout (seconds) kills the whole process group. pty gives it a "
	  "real terminal (stdout and stderr merge).",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\","
	  "\"description\":\"A shell command, run with /bin/sh -c\"},\"argv\":{\"type\":\"array\","
	  "\"items\":{\"type\":\"string\"},\"minItems\":1,"
	  "\"description\":\"The program and its arguments (instead of command)\"},\"workdir\":{"
	  "\"type\":\"string\","
	  "\"description\":\"Working directory inside the sandbox (default: the sandbox's)\"},"
	  "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
	  "\"description\":\"Variables added to the sandbox's environment\"},\"timeout\":{"
	  "\"type\":\"number\",\"exclusiveMinimum\":0,"
	  "\"description\":\"Seconds before the process group is killed (default: the sandbox's "
	  "limit)\"},"
	  "\"pty\":{\"type\":\"boolean\",\"description\":\"Run in a pseudo-terminal\"},"
	  "\"background\":{\"type\":\"boolean\","
	  "\"description\":\"Return at once with a session_id\"},\"yield_ms\":{"
	  "\"type\":\"integer\",\"minimum\":0,\"maximum\":120000,"
	  "\"description\":\"How long to wait before returning a session_id (default 10000)\"},"
	  "\"stdin\":{\"type\":\"string\","
	  "\"description\":\"Text written to the process's stdin (closed after it unless pty or "
	  "background)\"}},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\",\"enum\":["
	  "\"exited\",\"timed_out\",\"running\"]},\"exit_code\":{\"type\":\"integer\"},\"signal\":{"
	  "\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"},\"stdout\":{"
	  "\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},\"truncated\":{"
	  "\"type\":\"boolean\"},\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{"
	  "\"type\":\"integer\"},\"duration_ms\":{\"type\":\"integer\"},\"exec_error\":{"
	  "\"type\":\"string\"},\"session_id\":{\"type\":\"string\"},\"pid\":{"
	  "\"type\":\"integer\"},\"tail\":{\"type\":\"string\"}},\"required\":[\"status\"]}",
	  WR (true, false, true), ab_mcp_tool_exec },
	{ "sandbox_process", "Manage a running command",
	  "Follow and drive commands that sandbox_exec left running. action: list (this "
	  "session's processes), poll (output since the last poll, or from offset; wait_ms "
	  "waits for more), log (output from offset, limit bytes), write (data to stdin; "
	  "eof closes it), send_keys (keys like Enter, Tab, Escape, Up, Down, Left, Right, "
	  "C-c, C-d, M-x, F1; other strings are typed as they are), kill (signal, default "
	  "KILL, to the process group), remove (kill if running and forget).",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string\",\"enum\":[\"list\","
	  "\"poll\",\"log\",\"write\",\"send_keys\",\"kill\",\"remove\"]},\"session_id\":{"
	  "\"type\":\"string\",\"description\":\"The session_id sandbox_exec returned\"},\"data\":{"
	  "\"type\":\"string\",\"description\":\"write: the text for stdin\"},\"eof\":{"
	  "\"type\":\"boolean\",\"description\":\"write: close stdin afterwards\"},\"keys\":{"
	  "\"type\":\"array\",\"items\":{\"type\":\"string\"},"
	  "\"description\":\"send_keys: key names or literal text\"},\"offset\":{"
	  "\"type\":\"integer\",\"minimum\":0,"
	  "\"description\":\"poll/log: byte offset in the output\"},\"limit\":{"
	  "\"type\":\"integer\",\"minimum\":1,"
	  "\"description\":\"poll/log: at most this many bytes (default 1 MiB)\"},\"wait_ms\":{"
	  "\"type\":\"integer\",\"minimum\":0,\"maximum\":30000,"
	  "\"description\":\"poll: wait this long for output or the exit\"},\"signal\":{"
	  "\"type\":\"string\","
	  "\"description\":\"kill: the signal name or number (default KILL)\"}},\"required\":["
	  "\"action\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string\"},\"session_id\":{"
	  "\"type\":\"string\"},\"status\":{\"type\":\"string\",\"enum\":[\"running\",\"exited\","
	  "\"timed_out\",\"failed\"]},\"exit_code\":{\"type\":\"integer\"},\"signal\":{"
	  "\"type\":\"integer\"},\"output\":{\"type\":\"string\"},\"offset\":{"
	  "\"type\":\"integer\"},\"next_offset\":{\"type\":\"integer\"},\"dropped\":{"
	  "\"type\":\"integer\"},\"more\":{\"type\":\"boolean\"},\"written\":{"
	  "\"type\":\"integer\"},\"removed\":{\"type\":\"boolean\"},\"sessions\":{"
	  "\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"session_id\":{"
	  "\"type\":\"string\"},\"pid\":{\"type\":\"integer\"},\"command\":{\"type\":\"string\"},"
	  "\"status\":{\"type\":\"string\"},\"exit_code\":{\"type\":\"integer\"},\"pty\":{"
	  "\"type\":\"boolean\"},\"output_bytes\":{\"type\":\"integer\"},\"runtime_ms\":{"
	  "\"type\":\"integer\"}},\"required\":[\"session_id\",\"status\"]}}},\"required\":["
	  "\"action\"]}",
	  WR (true, false, false), ab_mcp_tool_process },
	{ "read_file", "Read a file in the sandbox",
	  "Read a file inside the sandbox: text (UTF-8) or base64. At most 4 MiB per call "
	  "(offset and limit read a range; truncated says there is more).",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	  "\"description\":\"Absolute path inside the sandbox (relative: to the workspace)\"},"
	  "\"encoding\":{\"type\":\"string\",\"enum\":[\"text\",\"base64\"],\"default\":\"text\"},"
	  "\"offset\":{\"type\":\"integer\",\"minimum\":0},\"limit\":{\"type\":\"integer\","
	  "\"minimum\":1,\"maximum\":4194304}},\"required\":[\"path\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"encoding\":{"
	  "\"type\":\"string\"},\"content\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	  "\"offset\":{\"type\":\"integer\"},\"length\":{\"type\":\"integer\"},\"truncated\":{"
	  "\"type\":\"boolean\"}},\"required\":[\"path\",\"content\",\"encoding\"]}",
	  RO, ab_mcp_tool_read_file },
	{ "write_file", "Write a file in the sandbox",
	  "Create or replace a file inside the sandbox (atomically: readers see the old or "
	  "the new file). Missing parent directories are created unless create_dirs is "
	  "false.",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	  "\"description\":\"Absolute path inside the sandbox (relative: to the workspace)\"},"
	  "\"content\":{\"type\":\"string\",\"description\":\"The file's content (text,"
	  " or base64 with encoding base64)\"},\"encoding\":{\"type\":\"string\",\"enum\":["
	  "\"text\",\"base64\"],\"default\":\"text\"},\"mode\":{\"type\":\"string\","
	  "\"description\":\"Octal permission bits, e.g. 0755 (default 0644)\"},\"create_dirs\":{"
	  "\"type\":\"boolean\","
	  "\"description\":\"Create missing parent directories (default true)\"}},\"required\":["
	  "\"path\",\"content\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"size\":{"
	  "\"type\":\"integer\"}},\"required\":[\"path\",\"size\"]}",
	  WR (true, true, false), ab_mcp_tool_write_file },
	{ "list_dir", "List a directory in the sandbox",
	  "The entries of a directory inside the sandbox (name, type, size, mode, "
	  "mtime_ms).",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	  "\"description\":\"Directory inside the sandbox (default: the workspace)\"}},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{"
	  "\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{"
	  "\"type\":\"string\"},\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"dir\","
	  "\"symlink\",\"other\"]},\"size\":{\"type\":\"integer\"},\"mode\":{\"type\":\"string\"},"
	  "\"mtime_ms\":{\"type\":\"integer\"}},\"required\":[\"name\",\"type\"]}},\"truncated\":{"
	  "\"type\":\"boolean\"}},\"required\":[\"path\",\"entries\"]}",
	  RO, ab_mcp_tool_list_dir },
	{ "stat", "Stat a path in the sandbox",
	  "Type, size, permission bits and modification time of a path inside the sandbox "
	  "(a symlink is not followed).",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	  "\"description\":\"Path inside the sandbox\"}},\"required\":[\"path\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"type\":{"
	  "\"type\":\"string\",\"enum\":[\"file\",\"dir\",\"symlink\",\"other\"]},\"size\":{"
	  "\"type\":\"integer\"},\"mode\":{\"type\":\"string\"},\"mtime_ms\":{"
	  "\"type\":\"integer\"}},\"required\":[\"path\",\"type\"]}",
	  RO, ab_mcp_tool_stat },
	{ "remove", "Remove a path in the sandbox",
	  "Remove a file, a symlink (not its target) or, with recursive, a directory tree "
	  "inside the sandbox.",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	  "\"description\":\"Path inside the sandbox\"},\"recursive\":{\"type\":\"boolean\","
	  "\"description\":\"Remove a directory and everything in it\"}},\"required\":[\"path\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"removed\":{"
	  "\"type\":\"boolean\"}},\"required\":[\"path\",\"removed\"]}",
	  WR (true, true, false), ab_mcp_tool_remove },
	{ "move", "Move or rename a path in the sandbox",
	  "Rename a file or directory inside the sandbox (replacing the target).", SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"from\":{\"type\":\"string\","
	  "\"description\":\"Path inside the sandbox\"},\"to\":{\"type\":\"string\","
	  "\"description\":\"New path inside the sandbox\"}},\"required\":[\"from\",\"to\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"from\":{\"type\":\"string\"},\"to\":{"
	  "\"type\":\"string\"}},\"required\":[\"from\",\"to\"]}",
	  WR (true, false, false), ab_mcp_tool_move },
	{ "port_url", "Preview URL of a port",
	  "A URL that reaches a server listening on 127.0.0.1:port inside the sandbox, "
	  "through the daemon's port proxy (authorised by the sandbox's own port token). "
	  "url is null when the daemon has no TCP listener (agentbox serve --listen).",
	  SANDBOX,
	  "{\"type\":\"object\",\"properties\":{\"port\":{\"type\":\"integer\",\"minimum\":1,"
	  "\"maximum\":65535}},\"required\":[\"port\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"port\":{\"type\":\"integer\"},\"url\":{\"type\":["
	  "\"string\",\"null\"]},\"path\":{\"type\":\"string\"},\"token\":{\"type\":\"string\"},"
	  "\"listening\":{\"type\":\"boolean\"}},\"required\":[\"port\",\"path\",\"listening\"]}",
	  RO, tool_port_url },
	{ "sandbox_create", "Create a sandbox",
	  "Start a new sandbox in the daemon. It is destroyed when this MCP session ends "
	  "unless keep is true. image is a root filesystem directory on the host (default: "
	  "the host's root, read-only).",
	  LIFECYCLE,
	  "{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\","
	  "\"description\":\"Root filesystem: a directory on the host\"},\"backend\":{"
	  "\"type\":\"string\",\"enum\":[\"auto\",\"native\",\"gvisor\",\"microvm\",\"docker\"]},"
	  "\"limits\":{\"type\":\"object\",\"description\":\"memory, pids, cpus, timeout,"
	  " kill_grace, nofile (as POST /v1/sandboxes)\"},\"network\":{\"type\":\"string\","
	  "\"enum\":[\"none\",\"proxy\"]},\"egress\":{\"type\":\"object\","
	  "\"description\":\"allow_hosts, deny_hosts, allow_cidrs (with network proxy)\"},\"env\":{"
	  "\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},\"ttl\":{"
	  "\"type\":\"string\",\"description\":\"Lifetime, e.g. 1h\"},\"labels\":{"
	  "\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},\"keep\":{"
	  "\"type\":\"boolean\",\"description\":\"Keep it after this MCP session ends\"}},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"state\":{"
	  "\"type\":\"string\"},\"backend\":{\"type\":\"string\"},\"keep\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"sandbox_id\",\"state\"]}",
	  WR (false, false, false), tool_create },
	{ "sandbox_list", "List sandboxes", "The daemon's sandboxes.", LIFECYCLE,
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\",\"items\":{"
	  "\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"state\":{"
	  "\"type\":\"string\"},\"backend\":{\"type\":\"string\"},\"created_at\":{"
	  "\"type\":\"string\"},\"labels\":{\"type\":\"object\"}},\"required\":[\"sandbox_id\","
	  "\"state\"]}}},\"required\":[\"sandboxes\"]}",
	  RO, tool_list },
	{ "sandbox_destroy", "Destroy a sandbox", "Destroy a sandbox and everything running in it.",
	  LIFECYCLE,
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\","
	  "\"description\":\"The sandbox\"}},\"required\":[\"sandbox_id\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"destroyed\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"destroyed\"]}",
	  WR (true, true, false), tool_destroy },
};

#define N_TOOLS (sizeof tools / sizeof *tools)

static json_t *lists[2]; /* tools/list results: unbound, bound */
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

static json_t *
load (const char *text)
{
	json_error_t je;
	json_t *j = json_loads (text, 0, &je);

	if (!j)
		abort (); /* a schema in this file is malformed: a build-time bug */
	return j;
}

static json_t *
describe (const struct tool_s *t, bool bound)
{
	json_t *in = load (t->input);

	if (t->kind == SANDBOX && !bound) {
		json_t *req = json_object_get (in, "required");
		json_object_set_new (
		        json_object_get (in, "properties"), "sandbox_id",
		        json_pack ("{s:s, s:s}", "type", "string", "description",
		                   "The sandbox (from sandbox_create or sandbox_list)"));
		if (!req)
			json_object_set_new (in, "required", req = json_array ());
		json_array_insert_new (req, 0, json_string ("sandbox_id"));
	}
	return json_pack ("{s:s, s:s, s:s, s:o, s:o, s:o}", "name", t->name, "title", t->title,
	                  "description", t->description, "inputSchema", in, "outputSchema",
	                  load (t->output), "annotations", load (t->annotations));
}

static void
build_lists (void)
{
	for (int bound = 0; bound < 2; bound++) {
		json_t *arr = json_array ();
		for (size_t i = 0; i < N_TOOLS; i++)
			if (!(bound && tools[i].kind == LIFECYCLE))
				json_array_append_new (arr, describe (&tools[i], bound));
		lists[bound] = json_pack ("{s:o}", "tools", arr);
	}
}

json_t *
ab_mcp_tools_list (bool bound)
{
	pthread_once (&lists_once, build_lists);
	return json_deep_copy (lists[bound]);
}

/* --- results ------------------------------------------------------------ */

json_t *
ab_mcp_result (json_t *structured, const char *text)
{
	if (!structured) /* a json_pack that failed: a bug, but never a crash */
		return json_pack ("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
		                  "internal error: the result could not be built", "isError", true);
	return json_pack ("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
	                  "structuredContent", structured, "isError", false);
}

json_t *
ab_mcp_result_json (json_t *structured)
{
	cleanup_free char *text = json_dumps (structured, JSON_COMPACT);
	return ab_mcp_result (structured, text);
}

json_t *
ab_mcp_tool_error (const ab_error_t *err)
{
	return json_pack ("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
	                  err->msg[0] ? err->msg : "the tool failed", "isError", true);
}

/* Length of the well-formed UTF-8 sequence at p (0 if malformed). */
static size_t
seq_len (const uint8_t *p, size_t left)
{
	size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
	return n && n <= left && ab_ws_utf8_valid (p, n) ? n : 0;
}

char *
ab_mcp_utf8 (const void *buf, size_t len, size_t *out_len)
{
	const uint8_t *p = buf;
	char *out, *o;

	*out_len = 0;
	if (len == 0)
		return xstrdup ("");
	if (ab_ws_utf8_valid (p, len)) {
		out = xmalloc (len + 1);
		memcpy (out, p, len);
		out[len] = '\0';
		*out_len = len;
		return out;
	}
	out = o = xmalloc (len * 3 + 1);
	for (size_t i = 0; i < len;) {
		size_t n = seq_len (p + i, len - i);
		if (n == 0) {
			memcpy (o, "\xef\xbf\xbd", 3); /* U+FFFD */
			o += 3;
			i++;
			continue;
		}
		memcpy (o, p + i, n);
		o += n;
		i += n;
	}
	*o = '\0';
	*out_len = (size_t)(o - out);
	return out;
}

/* --- dispatch ----------------------------------------------------------- */

/* The sandbox a sandbox tool works on: the bound one, or sandbox_id. */
static struct ab_box_s *
call_box (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *id = call->s->box_id;
	json_t *v = json_object_get (call->args, "sandbox_id");
	struct ab_box_s *b;
	ab_box_state st;

	if (!id[0]) {
		if (!json_is_string (v))
			return ab_error (err, 0, AB_E_INVALID,
			                 "'sandbox_id' (a string) is required"),
			       NULL;
		id = json_string_value (v);
	}
	if (!(b = ab_registry_get (call->d, id, err)))
		return NULL;
	st = ab_box_get_state (call->d, b);
	if (st != AB_BOX_RUNNING) {
		ab_error (err, 0, AB_E_CONFLICT, "sandbox %s is %s", b->id, ab_box_state_name (st));
		ab_box_unref (call->d, b);
		return NULL;
	}
	if (!call->s->box_id[0])
		json_object_del (call->args, "sandbox_id");
	return b;
}

json_t *
ab_mcp_tools_call (struct ab_daemon_s *d, struct ab_mcp_session_s *s, const json_t *id,
                   const json_t *params, ab_error_t *err)
{
	const char *name = json_string_value (json_object_get (params, "name"));
	json_t *args = json_object_get (params, "arguments");
	struct ab_mcp_call_s call = { .d = d, .s = s, .rpc_id = id };
	const struct tool_s *t = NULL;
	ab_error_t terr = AB_ERROR_INIT;
	json_t *res;

	if (!name)
		return ab_error (err, 0, AB_E_INVALID, "tools/call needs params.name"), NULL;
	for (size_t i = 0; i < N_TOOLS && !t; i++)
		if (strcmp (tools[i].name, name) == 0
		    && !(s->box_id[0] && tools[i].kind == LIFECYCLE))
			t = &tools[i];
	if (!t)
		return ab_error (err, 0, AB_E_NOT_FOUND, "unknown tool: %s", name), NULL;
	if (args && !json_is_object (args))
		return ab_error (err, 0, AB_E_INVALID, "params.arguments must be an object"), NULL;
	call.args = args ? json_deep_copy (args) : json_object ();
	if (t->kind == SANDBOX && !(call.b = call_box (&call, &terr)))
		res = ab_mcp_tool_error (&terr);
	else if (!(res = t->fn (&call, &terr)))
		res = ab_mcp_tool_error (&terr);
	if (call.b)
		ab_box_unref (d, call.b);
	json_decref (call.args);
	return res;
}

/* --- lifecycle tools and port_url ---------------------------------------- */

static json_t *
tool_create (struct ab_mcp_call_s *call, ab_error_t *err)
{
	static const char *const pass[] = { "backend", "limits", "network", "egress",
		                            "env",     "ttl",    "labels" };
	json_t *req = json_object (), *a = call->args, *v;
	struct ab_box_s *b;
	int keep = 0;
	const char *k;

	json_object_foreach (a, k, v)
	{
		bool known = strcmp (k, "image") == 0 || strcmp (k, "keep") == 0;
		for (size_t i = 0; i < sizeof pass / sizeof *pass; i++)
			known |= strcmp (k, pass[i]) == 0;
		if (!known) {
			json_decref (req);
			return ab_error (err, 0, AB_E_INVALID,
			                 "sandbox_create: unknown argument '%s'", k),
			       NULL;
		}
	}
	for (size_t i = 0; i < sizeof pass / sizeof *pass; i++)
		if ((v = json_object_get (a, pass[i])))
			json_object_set (req, pass[i], v);
	if ((v = json_object_get (a, "image")))
		json_object_set (req, "rootfs", v);
	if ((v = json_object_get (a, "keep")) && !json_is_boolean (v)) {
		json_decref (req);
		return ab_error (err, 0, AB_E_INVALID, "'keep' must be a boolean"), NULL;
	}
	keep = json_is_true (v);
	if (ab_box_create (call->d, req, &b, err) < 0) {
		json_decref (req);
		return NULL;
	}
	json_decref (req);
	if (!keep)
		ab_mcp_session_own (call->s, b->id);
	json_t *out = json_pack ("{s:s, s:s, s:s, s:b}", "sandbox_id", b->id, "state",
	                         ab_box_state_name (ab_box_get_state (call->d, b)), "backend",
	                         b->backend, "keep", keep);
	ab_box_unref (call->d, b);
	return ab_mcp_result_json (out);
}

static json_t *
tool_list (struct ab_mcp_call_s *call, ab_error_t *err)
{
	json_t *arr = json_array ();
	size_t n;
	struct ab_box_s **v = ab_registry_all (call->d, &n);

	(void)err;
	for (size_t i = 0; i < n; i++) {
		json_t *j = ab_box_json (call->d, v[i]);
		if (ab_box_get_state (call->d, v[i]) == AB_BOX_CREATING) {
			json_decref (j);
			continue;
		}
		json_array_append_new (arr,
		                       json_pack ("{s:s, s:O, s:s, s:O, s:O}", "sandbox_id",
		                                  v[i]->id, "state", json_object_get (j, "state"),
		                                  "backend", v[i]->backend, "created_at",
		                                  json_object_get (j, "created_at"), "labels",
		                                  json_object_get (j, "labels")));
		json_decref (j);
	}
	ab_registry_release (call->d, v, n);
	return ab_mcp_result_json (json_pack ("{s:o}", "sandboxes", arr));
}

static json_t *
tool_destroy (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const char *id = NULL;
	json_error_t je;
	struct ab_box_s *b;
	int rc;

	if (json_unpack_ex (call->args, &je, JSON_STRICT, "{s:s}", "sandbox_id", &id) < 0)
		return ab_error (err, 0, AB_E_INVALID, "sandbox_destroy: %s", je.text), NULL;
	if (!(b = ab_registry_get (call->d, id, err)))
		return NULL;
	rc = ab_box_destroy (call->d, b, true, err);
	ab_box_unref (call->d, b);
	if (rc < 0)
		return NULL;
	ab_mcp_session_disown (call->s, id);
	return ab_mcp_result_json (json_pack ("{s:s, s:b}", "sandbox_id", id, "destroyed", true));
}

static json_t *
tool_port_url (struct ab_mcp_call_s *call, ab_error_t *err)
{
	const struct ab_box_s *b = call->b;
	const char *listen = call->d->cfg->listen;
	ab_error_t perr = AB_ERROR_INIT;
	json_int_t port = 0;
	json_error_t je;
	ab_agent_conn_t *c;
	int fd = -1;

	if (json_unpack_ex (call->args, &je, JSON_STRICT, "{s:I}", "port", &port) < 0)
		return ab_error (err, 0, AB_E_INVALID, "port_url: %s", je.text), NULL;
	if (port < 1 || port > 65535)
		return ab_error (err, 0, AB_E_INVALID, "'port' must be in [1, 65535]"), NULL;
	/* A stream that opens proves something listens; it is closed at once. */
	if (!(c = ab_box_connect (call->d, call->b, err)))
		return NULL;
	fd = ab_agent_port_open (&c, (uint16_t)port, &perr);
	ab_agent_close (c);
	if (fd >= 0)
		close (fd);
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/ports/%d/", b->id, (int)port);
	cleanup_free char *url =
	        listen ? xasprintf ("http://%s%s?token=%s", listen, path, b->port_token) : NULL;
	json_t *out = json_pack ("{s:I, s:s?, s:s, s:s, s:b}", "port", port, "url", url, "path",
	                         path, "token", b->port_token, "listening", fd >= 0);
	cleanup_free char *text = xasprintf (
	        "%s%s (token in the Authorization: Bearer header or ?token=)%s", url ? url : path,
	        url ? "" : " on the daemon's socket", fd >= 0 ? "" : "; nothing listens there yet");
	return ab_mcp_result (out, text);
}
