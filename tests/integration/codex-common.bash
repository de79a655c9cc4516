# Shared helpers for the tests that drive the real Codex (codex-*.bats)
# against agentbox: Codex 0.171.0 from $AGENTBOX_NPM_DIR (default: the
# tree's build/npm, as scripts/install-deps installs it), a fake Responses
# API on 127.0.0.1 (tests/agent-tools/fake-responses.mjs) that scripts the
# model's tool calls and logs every request Codex makes, and a daemon with
# one sandbox whose hostname and /tmp tell its side from the host's.
#
# Nothing leaves the machine: the model is the fake on 127.0.0.1, CODEX_HOME
# is the test's own directory, and every proxy variable points at a closed
# local port so an HTTP request to anywhere else fails at once.
#
# Development switch (not for CI): CODEX_TEST_REFERENCE=1 runs the same
# flows against the real `codex exec-server` on the host and a stub MCP
# server (tests/agent-tools/codex-stub-mcp.mjs) instead of agentbox, to
# check the harness itself.  It says so on every test; the default target,
# and the only one these tests exist for, is agentbox.

# shellcheck disable=SC2034 # ES_PID, ES_URL, TAP_URL... are for the .bats files
: "${BATS_TEST_TIMEOUT:=240}"
load daemon-common.bash

: "${AGENTBOX_NPM_DIR:=$ROOT_DIR/build/npm}"
export AGENTBOX_NPM_DIR
# The npm package's bin/codex is a node wrapper that, on Node < 23, spawns
# the native binary and does not pass SIGKILL on: a killed wrapper would
# leave Codex running.  So the tests run the native binary it would run.
CODEX_WRAPPER="$AGENTBOX_NPM_DIR/codex/node_modules/.bin/codex"
codex_native() {
	local f
	for f in "$AGENTBOX_NPM_DIR"/codex/node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do
		[ -x "$f" ] && echo "$f" && return 0
	done
	echo "$CODEX_WRAPPER"
}
CODEX="$(codex_native)"
AGENT_TOOLS="$ROOT_DIR/tests/agent-tools"
# Bound on each Codex run (the scripted turns take a few seconds).
: "${CODEX_RUN_TIMEOUT:=120}"
REFERENCE="${CODEX_TEST_REFERENCE:-0}"
# The environment of every Codex process: no API key, and every proxy
# variable at a closed local port (port 9), so a request to anywhere but
# 127.0.0.1 fails at once.
OFFLINE_ENV=(OPENAI_API_KEY= CODEX_API_KEY=
	HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9
	http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9
	"NO_PROXY=127.0.0.1,localhost" "no_proxy=127.0.0.1,localhost")

# A 4x4 PNG, for view_image.
TEST_PNG_B64='iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg=='

# codex_setup: the tools, a daemon and a sandbox (agentbox), the fake
# model's directories.  Sets T, WS (the sandbox's workspace, on the host),
# SBX (its id), SBX_HOSTNAME, CODEX_HOME, MARK.  The daemon also listens on
# loopback TCP (DAEMON_PORT) with a bearer token (in DAEMON_TOKEN_FILE).
codex_setup() {
	daemon_setup
	T="$BATS_TEST_TMPDIR"
	command -v node >/dev/null || { echo "node is not installed" >&2; return 1; }
	if [ ! -x "$CODEX" ] || [ ! -d "$AGENTBOX_NPM_DIR/sdk/node_modules/ws" ]; then
		echo "Codex or ws missing under AGENTBOX_NPM_DIR=$AGENTBOX_NPM_DIR (run scripts/install-deps)" >&2
		return 1
	fi
	export CODEX_HOME="$T/codex-home"
	WS="$T/ws"
	mkdir -p "$CODEX_HOME" "$WS" "$T/codex-tmp"
	SBX_HOSTNAME="cxbox${RANDOM}"
	if [ "$REFERENCE" = 1 ]; then
		echo "# REFERENCE MODE: the real codex exec-server / a stub MCP server on the host, NOT agentbox" >&3
		SBX_HOSTNAME="$(hostname)"
		return 0
	fi
	DAEMON_TOKEN_FILE="$D/token"
	printf 'codex-test-token-%s%s\n' "$RANDOM$RANDOM" "$RANDOM$RANDOM" >"$DAEMON_TOKEN_FILE"
	chmod 600 "$DAEMON_TOKEN_FILE"
	DAEMON_PORT="$(free_port)"
	daemon_start --listen "127.0.0.1:$DAEMON_PORT" --token-file "$DAEMON_TOKEN_FILE"
	# shellcheck disable=SC2086 # CODEX_CREATE_ARGS: extra create options, word-split on purpose
	SBX="$(ab create --workspace "$WS" --hostname "$SBX_HOSTNAME" ${CODEX_CREATE_ARGS:-})"
	[ -n "$SBX" ]
}

# CODEX_TEST_LOG_DIR=DIR keeps each test's logs (the model requests, the
# exec-server traffic, Codex's output) in DIR/<test number>/.
codex_teardown() {
	local f
	if [ -n "${CODEX_TEST_LOG_DIR:-}" ] && [ -n "${T:-}" ]; then
		mkdir -p "$CODEX_TEST_LOG_DIR/$BATS_TEST_NUMBER"
		for f in requests.jsonl tap.jsonl app.jsonl app-result.json codex.out es.out.err script.json; do
			[ -f "$T/$f" ] && cp "$T/$f" "$CODEX_TEST_LOG_DIR/$BATS_TEST_NUMBER/"
		done
		[ -f "${D:-/nonexistent}/daemon.log" ] && cp "$D/daemon.log" "$CODEX_TEST_LOG_DIR/$BATS_TEST_NUMBER/"
	fi
	for f in "${HOST_FILES[@]}"; do
		case "$f" in /tmp/abtest-*) rm -f -- "$f" ;; esac
	done
	daemon_teardown
}

# require_agentbox_command NAME: agentbox must have this subcommand (issue
# 12); a clear failure, never a skip, when it does not.  Whether --help
# exits 0 or prints a usage error does not matter; "unknown command" does.
require_agentbox_command() {
	[ "$REFERENCE" = 1 ] && return 0
	local out rc=0
	out="$(timeout 10 "$AGENTBOX" "$1" --help 2>&1)" || rc=$?
	if [ "$rc" -ge 124 ] || [[ "$out" == *"unknown command"* ]]; then
		echo "FAIL: agentbox has no '$1' command (issue 12): '$AGENTBOX $1 --help' said: $out" >&2
		return 1
	fi
}

# bg_start LOG CMD...: a background process of this test, stdout to LOG;
# its pid in BG_PID (and BG_PIDS, for teardown).
bg_start() {
	local log="$1"
	shift
	"$@" >"$log" 2>>"$log.err" </dev/null &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# first_line_matching FILE REGEX [TENTHS]: wait for it, print it.
first_line_matching() {
	wait_for "$1" "$2" "${3:-100}" >&2 || return 1
	grep -Em1 -- "$2" "$1"
}

# fake_model_start SCRIPT-JSON: the fake Responses API with this script;
# writes $CODEX_HOME/config.toml for it.  Requests go to $T/requests.jsonl.
fake_model_start() {
	printf '%s\n' "$1" >"$T/script.json"
	: >"$T/requests.jsonl"
	bg_start "$T/fake.out" node "$AGENT_TOOLS/fake-responses.mjs" \
		--script "$T/script.json" --log "$T/requests.jsonl"
	FAKE_URL="$(first_line_matching "$T/fake.out" '^http://127\.0\.0\.1:[0-9]+/v1$')" || return 1
	codex_write_config
}

# The model catalog entry that makes Codex offer the tools a real coding
# model gets: unified exec (exec_command/write_stdin), the freeform
# apply_patch, images (view_image) and tool_search (MCP tools are deferred
# behind it).
codex_write_config() {
	jq -n '{models: [{slug: "fake-model", display_name: "fake-model", description: "scripted",
		priority: 1, additional_speed_tiers: [], service_tiers: [], availability_nux: null,
		upgrade: null, default_reasoning_level: "low",
		supported_reasoning_levels: [{effort: "low", description: "low"}],
		shell_type: "unified_exec", visibility: "list", supported_in_api: true,
		supports_reasoning_summaries: false, support_verbosity: false,
		apply_patch_tool_type: "freeform", web_search_tool_type: "text",
		supports_parallel_tool_calls: false, supports_image_detail_original: false,
		experimental_supported_tools: [], supports_search_tool: true,
		context_window: 200000, max_context_window: 200000,
		effective_context_window_percent: 95,
		truncation_policy: {mode: "tokens", limit: 10000},
		input_modalities: ["text", "image"],
		base_instructions: "You are a scripted test model."}]}' >"$CODEX_HOME/catalog.json"
	cat >"$CODEX_HOME/config.toml" <<EOF
model = "fake-model"
model_provider = "fake"
model_catalog_json = "$CODEX_HOME/catalog.json"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = "$FAKE_URL"
wire_api = "responses"
requires_openai_auth = false
EOF
}

# codex_run [ENV=VALUE...] -- CODEX-ARGS...: the real Codex, offline and
# bounded in time, in the sandbox's workspace directory (codex exec sends
# its own working directory as the thread's cwd).  Output in $T/codex.out.
codex_run() {
	local envs=()
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	(cd "$WS" && timeout -k 5 "$CODEX_RUN_TIMEOUT" env "${envs[@]}" TMPDIR="$T/codex-tmp" \
		"${OFFLINE_ENV[@]}" "$CODEX" "$@" </dev/null) >"$T/codex.out" 2>&1
}

# free_port: a loopback TCP port that was free a moment ago.
free_port() {
	node -e 'const s = require("net").createServer().listen(0, "127.0.0.1",
  () => { console.log(s.address().port); s.close(); })'
}

# exec_server_listen: a WebSocket exec-server for the sandbox (agentbox
# exec-server --listen ws://127.0.0.1:PORT --sandbox ID); the URL it
# prints (with its credential) in ES_URL.
exec_server_listen() {
	local port
	port="$(free_port)"
	if [ "$REFERENCE" = 1 ]; then
		mkdir -p "$T/es-home"
		bg_start "$T/es.out" env CODEX_HOME="$T/es-home" "$CODEX" exec-server --listen "ws://127.0.0.1:$port"
	else
		bg_start "$T/es.out" "$AGENTBOX" exec-server --listen "ws://127.0.0.1:$port" --sandbox "$SBX"
	fi
	ES_PID="$BG_PID"
	# The URL as printed (on stdout or stderr, wherever it sits on its
	# line); its path may hold the credential.
	local i
	ES_URL=""
	for ((i = 0; i < 100; i++)); do
		ES_URL="$(cat "$T/es.out" "$T/es.out.err" 2>/dev/null \
			| grep -Eom1 "wss?://127\.0\.0\.1:${port}[^[:space:]\"']*" || true)"
		[ -n "$ES_URL" ] && return 0
		kill -0 "$ES_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "the exec-server printed no ws://127.0.0.1:$port URL; it wrote:" >&2
	cat "$T/es.out" "$T/es.out.err" >&2
	return 1
}

# tap_ws UPSTREAM: a logging relay in front of UPSTREAM; its URL in
# TAP_URL, what went through in $T/tap.jsonl.
tap_ws() {
	: >>"$T/tap.jsonl"
	bg_start "$T/tap.out" node "$AGENT_TOOLS/codex-tap.mjs" ws --upstream "$1" --log "$T/tap.jsonl"
	TAP_URL="$(first_line_matching "$T/tap.out" '^ws://127\.0\.0\.1:[0-9]+$')"
}

# The script every exec-server flow runs, one model turn per step:
#   0 exec_command: hostname, pwd, a file in the workspace, a file in /tmp
#   1 apply_patch: add patched-new.txt, change edit.txt
#   2 view_image img.png
#   3 exec_command with tty (reads a line, checks it is on a tty),
#   4 write_stdin into it
#   5 the final message
# The workspace gets edit.txt and img.png first.
exec_flow_script() {
	printf 'line one\nline two\n' >"$WS/edit.txt"
	printf '%s' "$TEST_PNG_B64" | base64 -d >"$WS/img.png"
	HOST_FILES+=("/tmp/$MARK-exec")
	jq -n --arg mark "$MARK" '{steps: [
	  [{type: "function_call", name: "exec_command", arguments: {
	     cmd: ("echo host=$(cat /proc/sys/kernel/hostname); echo cwd=$(pwd); echo \($mark) > exec.txt; echo \($mark) > /tmp/\($mark)-exec"),
	     yield_time_ms: 10000}}],
	  [{type: "custom_tool_call", name: "apply_patch", input:
	     "*** Begin Patch\n*** Add File: patched-new.txt\n+created by apply_patch\n*** Update File: edit.txt\n@@\n line one\n-line two\n+line TWO patched\n*** End Patch\n"}],
	  [{type: "function_call", name: "view_image", arguments: {path: "img.png"}}],
	  [{type: "function_call", name: "exec_command", arguments: {
	     cmd: "read -r line; echo got:$line; [ -t 0 ] && [ -t 1 ] && echo on-a-tty", tty: true, yield_time_ms: 1000}}],
	  {capture: {SESSION_ID: "session ID (\\d+)"}, items: [{type: "function_call", name: "write_stdin",
	     arguments: {session_id: "$SESSION_ID", chars: "hello-tty\n", yield_time_ms: 5000}}]},
	  [{type: "message", text: "exec flow done"}]
	]}'
}

# tool_output CALL-ID: what Codex sent the model back for that call (the
# output field, as JSON text), from the last request that holds it.
tool_output() {
	jq -c --arg id "$1" '.body.input[]? | select(.call_id == $id and (.type | test("output$"))) | .output' \
		"$T/requests.jsonl" | tail -n1
}

# sbx_sh CMD: run CMD where the exec-server runs (in the sandbox).
sbx_sh() {
	if [ "$REFERENCE" = 1 ]; then
		bash -c "$1"
	else
		ab exec "$SBX" -- sh -c "$1"
	fi
}

# assert_exec_flow_effects: what exec_flow_script did happened in the
# sandbox and came back to the model.  The ws-tap log (if any) must show
# the requests Codex sent for it.
assert_exec_flow_effects() {
	local out
	grep -qs 'exec flow done' "$T/codex.out" "$T/app-result.json" || {
		cat "$T/codex.out" >&2
		return 1
	}
	# 0: ran in the sandbox: its hostname, its workspace; the host's /tmp
	# untouched while the sandbox's /tmp has the file.
	out="$(tool_output call_s0_0)"
	echo "exec_command output: $out" >&2
	[[ "$out" == *"host=$SBX_HOSTNAME\\n"* ]]
	[[ "$out" == *"cwd=/workspace\\n"* || "$out" == *"cwd=$WS\\n"* ]]
	[[ "$out" == *"Process exited with code 0"* ]]
	[ "$(cat "$WS/exec.txt")" = "$MARK" ]
	[ "$(sbx_sh "cat /tmp/$MARK-exec")" = "$MARK" ]
	if [ "$REFERENCE" != 1 ]; then
		[ ! -e "/tmp/$MARK-exec" ]
	fi
	# 1: apply_patch through the exec-server's filesystem.
	out="$(tool_output call_s1_0)"
	echo "apply_patch output: $out" >&2
	[[ "$out" == *"A patched-new.txt"* && "$out" == *"M edit.txt"* ]]
	[ "$(cat "$WS/patched-new.txt")" = "created by apply_patch" ]
	[ "$(cat "$WS/edit.txt")" = "$(printf 'line one\nline TWO patched')" ]
	# 2: the image came back as an input_image data URL.
	out="$(tool_output call_s2_0)"
	[[ "$out" == *"data:image/png;base64,$TEST_PNG_B64"* ]]
	# 3, 4: a tty session, then a line typed into it.
	out="$(tool_output call_s3_0)"
	echo "tty exec_command output: $out" >&2
	[[ "$out" == *"Process running with session ID"* ]]
	out="$(tool_output call_s4_0)"
	echo "write_stdin output: $out" >&2
	[[ "$out" == *"got:hello-tty"* ]]
	[[ "$out" == *"on-a-tty"* ]]
}

# tap_methods: the methods Codex sent through the tap, one per line.
tap_methods() {
	jq -r 'select(.dir == "c2s") | .msg.method // empty' "$T/tap.jsonl"
}

# assert_tap_saw_exec_flow: the exec flow's requests went through the
# exec-server (not a local fallback): the commands, the patch's writes,
# the image read, the typed line.
assert_tap_saw_exec_flow() {
	local m
	m="$(tap_methods)"
	echo "$m" | sort | uniq -c >&2
	for want in initialize process/start process/write fs/readFile fs/writeFile fs/getMetadata; do
		echo "$m" | grep -qx "$want" || {
			echo "the exec-server never got $want" >&2
			return 1
		}
	done
	# shellcheck disable=SC2016 # $mark is jq's
	tap_any --arg mark "$MARK" '.method == "process/start" and (.params.argv | join(" ") | contains($mark))'
	tap_any '.method == "process/start" and .params.tty == true'
	tap_any '.method == "fs/writeFile" and (.params.path | endswith("/patched-new.txt"))'
	tap_any '.method == "fs/readFile" and (.params.path | endswith("/img.png"))'
}

# tap_any [JQ-OPTIONS] FILTER: some message Codex sent through the tap
# matches FILTER (applied to the message).
tap_any() {
	local filter="${*: -1}"
	jq -se "${@:1:$#-1}" "[.[] | select(.dir == \"c2s\") | .msg | select($filter)] | length > 0" \
		"$T/tap.jsonl" >/dev/null || {
		echo "no request through the exec-server matches: $filter" >&2
		return 1
	}
}
