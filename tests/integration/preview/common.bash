# Shared helpers for the preview bridge's integration tests (preview-*.bats).
#
# Every test runs the bridge and its peers inside a network namespace of its
# own holding only `lo`, so ports never clash with the host's and a port
# nobody listens on is really closed.  The peers are real: Node's http
# module and the `ws` package (tests/helpers/preview-peers.js), from the
# `sdk` group of scripts/install-deps npm (tests/npm/sdk, pinned).
#
#   AGENTBOX  path to agentbox (default build/agentbox)
#   HELPERS   build/tests of the same build (the npm cache goes beside it)

bats_require_minimum_version 1.5.0

ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
: "${HELPERS:=$ROOT_DIR/build/tests}"
PEERS="$ROOT_DIR/tests/helpers/preview-peers.js"
NODE_DIR="${AGENTBOX_NPM_DIR:-$ROOT_DIR/build/npm}/sdk"
export NODE_PATH="$NODE_DIR/node_modules"

# Once per file: the ws package must be installed.
pv_setup_file() {
	if [ ! -f "$NODE_DIR/node_modules/ws/package.json" ]; then
		echo "the ws package is not installed in $NODE_DIR (scripts/install-deps npm)" >&2
		return 1
	fi
}

pv_setup() {
	if [ ! -x "$AGENTBOX" ]; then
		echo "$AGENTBOX is not an executable (make all)" >&2
		return 1
	fi
	BG_PIDS=()
	T="$BATS_TEST_TMPDIR"
	unshare --net sleep 600 </dev/null >/dev/null 2>&1 &
	NS_PID=$!
	BG_PIDS+=("$NS_PID")
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(readlink "/proc/$NS_PID/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.05
	done
	if [ "$(readlink "/proc/$NS_PID/ns/net")" = "$(readlink /proc/self/ns/net)" ]; then
		echo "could not create a test network namespace" >&2
		return 1
	fi
	inns ip link set lo up
}

# Everything the test started runs in its namespace: kill exactly those
# processes (the namespace holds nothing else), then the holder.
pv_teardown() {
	local ns p
	ns="$(readlink "/proc/$NS_PID/ns/net" 2>/dev/null)" || ns=""
	if [ -n "$ns" ] && [ "$ns" != "$(readlink /proc/self/ns/net)" ]; then
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/ns/net" 2>/dev/null)" = "$ns" ] && kill -KILL "${p#/proc/}" 2>/dev/null
		done
	fi
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# inns CMD...: run CMD in the test's network namespace.
inns() {
	nsenter -t "$NS_PID" -n -- "$@"
}

# inns_bg CMD...: the same in the background; nsenter execs CMD, so BG_LAST
# (also added to BG_PIDS) is CMD's own pid, not a subshell's.
inns_bg() {
	nsenter -t "$NS_PID" -n -- "$@" &
	BG_LAST=$!
	BG_PIDS+=("$BG_LAST")
}

# wait_for FILE REGEX [TENTHS]: until FILE has a line matching REGEX (5 s).
wait_for() {
	local file="$1" re="$2" n="${3:-50}" i
	for ((i = 0; i < n; i++)); do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for /$re/ in $file; it holds:" >&2
	cat "$file" >&2 2>/dev/null || true
	return 1
}

# start_peer NAME MODE: a preview-peers.js server (http or ws) in the
# namespace; sets ${NAME}_PORT and ${NAME}_LOG.
start_peer() {
	local name="$1" mode="$2"
	inns_bg node "$PEERS" "$mode" >"$T/peer-$name.log" 2>&1
	wait_for "$T/peer-$name.log" '^PORT [0-9]+$' 100
	printf -v "${name}_PORT" '%s' "$(sed -n 's/^PORT //p' "$T/peer-$name.log" | head -1)"
	printf -v "${name}_LOG" '%s' "$T/peer-$name.log"
}

# start_serve [ARGS]: `preview-bridge serve` on 127.0.0.1:0; sets SERVE_PORT,
# SERVE_PID and SERVE (its base URL).
start_serve() {
	inns_bg "$AGENTBOX" preview-bridge serve --listen 127.0.0.1:0 "$@" 2>"$T/serve.err" </dev/null
	SERVE_PID=$BG_LAST
	wait_for "$T/serve.err" '^agentbox preview-bridge listening on 127\.0\.0\.1:[0-9]+$'
	SERVE_PORT="$(sed -n 's/.* listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/serve.err")"
	SERVE="http://127.0.0.1:$SERVE_PORT"
}

# request JSON: `preview-bridge request` with JSON on stdin; the answer in
# $T/answer.json and on stdout.
request() {
	printf '%s' "$1" | inns timeout 60 "$AGENTBOX" preview-bridge request >"$T/answer.json"
	cat "$T/answer.json"
}

# body: the last answer's body, decoded.
body() {
	jq -r .bodyBase64 "$T/answer.json" | base64 -d
}

# assert_error STATUS MESSAGE: the last answer is that error document.
assert_error() {
	local status="$1" message="$2"
	jq -e --argjson s "$status" '.status == $s and
		(.headers | keys == ["content-type"]) and
		(.headers["content-type"] | startswith("text/plain"))' "$T/answer.json" >/dev/null ||
		{ echo "not a $status error document: $(cat "$T/answer.json")" >&2; return 1; }
	[ "$(body)" = "$message" ] || { echo "body '$(body)' != '$message'" >&2; return 1; }
}

# drive SPEC: websocket-framed under preview-peers.js drive; the JSON
# result in $T/drive.json and on stdout.
drive() {
	inns timeout 60 node "$PEERS" drive "$1" "$AGENTBOX" preview-bridge websocket-framed >"$T/drive.json"
	cat "$T/drive.json"
}

# signal JSON [ARGS]: `preview-bridge signal` with JSON on stdin.
signal() {
	local doc="$1"
	shift
	printf '%s' "$doc" | inns timeout 60 "$AGENTBOX" preview-bridge signal "$@"
}
