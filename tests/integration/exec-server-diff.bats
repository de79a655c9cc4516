#!/usr/bin/env bats
# Differential protocol tests: the same request sequences sent to the real
# `codex exec-server --listen ws://127.0.0.1:0` (Codex 0.171.0 from
# $AGENTBOX_NPM_DIR/codex, on the host, in a test directory) and to ours;
# results and error codes must match in shape (keys and types, error
# codes, a few values such as exit codes).  On a mismatch the check prints
# both answers.  The sequence is `diff` in tests/agent-tools/exec-server-check.mjs.

load daemon-common.bash

CHECK="$BATS_TEST_DIRNAME/../agent-tools/exec-server-check.mjs"

setup() {
	daemon_setup
	command -v node >/dev/null || skip "node is not installed"
	: "${AGENTBOX_NPM_DIR:=$BATS_TEST_DIRNAME/../../build/npm}"
	export AGENTBOX_NPM_DIR
	CODEX="$AGENTBOX_NPM_DIR/codex/node_modules/.bin/codex"
	[ -x "$CODEX" ] || skip "Codex is not installed in $AGENTBOX_NPM_DIR/codex"
	[ -d "$AGENTBOX_NPM_DIR/sdk/node_modules/ws" ] || skip "ws is not installed"
	WS="$BATS_TEST_TMPDIR/ws"
	REF="$BATS_TEST_TMPDIR/ref"
	mkdir -p "$WS" "$REF" "$BATS_TEST_TMPDIR/codex-home"
	local d
	for d in "$WS" "$REF"; do
		echo hi >"$d/a.txt"
		mkdir "$d/links"
		ln -s ../a.txt "$d/links/lf"
		ln -s ../x "$d/links/ld"
	done
	# the reference, on the host, its own CODEX_HOME, in its own directory
	# (setsid execs in place: $! leads the reference's process group)
	CODEX_HOME="$BATS_TEST_TMPDIR/codex-home" setsid env -C "$REF" "$CODEX" exec-server \
		--listen ws://127.0.0.1:0 >"$BATS_TEST_TMPDIR/ref.out" 2>&1 </dev/null &
	REF_PID=$!
	BG_PIDS+=("$REF_PID")
	wait_for "$BATS_TEST_TMPDIR/ref.out" "^ws://127\.0\.0\.1:[0-9]+" 100
	REF_URL="$(grep -Eo '^ws://127\.0\.0\.1:[0-9]+' "$BATS_TEST_TMPDIR/ref.out" | head -1)"
	daemon_start
	ID="$(ab create --workspace "$WS")"
}

teardown() {
	# the reference's children (setsid: its own group)
	if [ -n "${REF_PID:-}" ]; then
		kill -TERM -- "-$REF_PID" 2>/dev/null || true
		wait "$REF_PID" 2>/dev/null || true
	fi
	daemon_teardown
}

@test "exec-server differential: the daemon endpoint answers like codex exec-server" {
	XS_BASE="file://$REF" XS_BASE2=file:///workspace run timeout -k 2 200 node "$CHECK" diff \
		"$REF_URL" "unix:$SOCK:/v1/sandboxes/$ID/exec-server"
	echo "$output"
	[ "$status" -eq 0 ]
	# the reference worked in its directory, ours in the sandbox's workspace
	[ -f "$REF/c.txt" ] && [ -f "$WS/c.txt" ]
}

@test "exec-server differential: with host paths mapped onto /workspace, over --stdio" {
	XS_BASE="file://$REF" XS_BASE2="file://$WS" run timeout -k 2 200 node "$CHECK" diff \
		"$REF_URL" "stdio:[\"$AGENTBOX\",\"exec-server\",\"--sandbox\",\"$ID\",\"--stdio\"]"
	echo "$output"
	[ "$status" -eq 0 ]
}
