#!/usr/bin/env bats
# The real Codex (0.171.0) runs its tools through agentbox's exec-server,
# registered all three ways Codex knows, with a scripted fake model
# (exec_command, apply_patch, view_image, a tty exec_command then
# write_stdin): the effects must happen inside the sandbox (its hostname,
# its /tmp, its /workspace) and the outputs come back to the model.
#
# Needs: node, Codex and ws under AGENTBOX_NPM_DIR (scripts/install-deps),
# agentbox with `exec-server` (issue 12) — without it every test fails.

load codex-common.bash

setup() {
	codex_setup
}

teardown() {
	codex_teardown
}

@test "codex exec with CODEX_EXEC_SERVER_URL=agentbox exec-server --listen: tools run in the sandbox" {
	require_agentbox_command exec-server
	fake_model_start "$(exec_flow_script)"
	exec_server_listen
	tap_ws "$ES_URL"
	codex_run CODEX_EXEC_SERVER_URL="$TAP_URL" -- exec --skip-git-repo-check "run the scripted steps" || {
		cat "$T/codex.out" >&2
		return 1
	}
	assert_exec_flow_effects
	assert_tap_saw_exec_flow
	# The exec-server outlives its client and keeps serving.
	kill -0 "$ES_PID"
}

@test "codex exec with environments.toml program = agentbox exec-server --stdio: tools run in the sandbox" {
	require_agentbox_command exec-server
	fake_model_start "$(exec_flow_script)"
	if [ "$REFERENCE" = 1 ]; then
		mkdir -p "$T/es-home"
		cat >"$CODEX_HOME/environments.toml" <<EOF2
default = "agentbox"
include_local = false

[[environments]]
id = "agentbox"
program = "node"
args = ["$AGENT_TOOLS/codex-tap.mjs", "stdio", "--log", "$T/tap.jsonl", "--", "$CODEX", "exec-server", "--listen", "stdio"]
env = { CODEX_HOME = "$T/es-home" }
EOF2
	else
		cat >"$CODEX_HOME/environments.toml" <<EOF2
default = "agentbox"
include_local = false

[[environments]]
id = "agentbox"
program = "$AGENTBOX"
args = ["exec-server", "--stdio", "--sandbox", "$SBX"]
env = { AGENTBOX_HOST = "$SOCK" }
EOF2
	fi
	codex_run -- exec --skip-git-repo-check "run the scripted steps" || {
		cat "$T/codex.out" >&2
		return 1
	}
	assert_exec_flow_effects
	if [ "$REFERENCE" = 1 ]; then
		assert_tap_saw_exec_flow
	fi
	# Codex ended the stdio exec-server it spawned.
	if [ "$REFERENCE" != 1 ]; then
		wait_gone pgrep -f -- "exec-server --stdio --sandbox $SBX"
	fi
}

@test "codex app-server environment/add with the daemon's exec-server endpoint and bearer token: tools run in the sandbox" {
	require_agentbox_command exec-server
	local url cwd token_args=()
	if [ "$REFERENCE" = 1 ]; then
		exec_server_listen
		url="$ES_URL"
		cwd="$WS"
	else
		# The daemon's own endpoint, on its TCP listener, behind its token.
		url="ws://127.0.0.1:$DAEMON_PORT/v1/sandboxes/$SBX/exec-server"
		cwd=/workspace
		token_args=(--token-file "$DAEMON_TOKEN_FILE")
	fi
	tap_ws "$url"
	fake_model_start "$(exec_flow_script)"
	mkdir -p "$T/app-cwd"
	(cd "$T/app-cwd" && timeout -k 5 "$CODEX_RUN_TIMEOUT" env TMPDIR="$T/codex-tmp" "${OFFLINE_ENV[@]}" \
		node "$AGENT_TOOLS/codex-app-server.mjs" --codex "$CODEX" --url "$TAP_URL" "${token_args[@]}" \
		--env-id agentbox-sbx --cwd "$cwd" --prompt "run the scripted steps" --log "$T/app.jsonl" \
		--timeout-ms $((CODEX_RUN_TIMEOUT * 1000 - 5000)) </dev/null) >"$T/app-result.json" 2>"$T/codex.out" || {
		cat "$T/codex.out" >&2
		return 1
	}
	jq -e '.turn.turn.status == "completed"' "$T/app-result.json" >/dev/null
	# The final message is in the turn's items, not on a terminal.
	grep -q 'exec flow done' "$T/app-result.json"
	assert_exec_flow_effects
	assert_tap_saw_exec_flow
	# The bearer token went to the exec-server endpoint, and only the right
	# one opens it.
	if [ "$REFERENCE" != 1 ]; then
		run curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
			-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
			-H 'Authorization: Bearer wrong-token-wrong-token-wrong' "http://127.0.0.1:$DAEMON_PORT/v1/sandboxes/$SBX/exec-server"
		[ "$output" = 401 ]
	fi
}
