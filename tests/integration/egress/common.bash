# Shared helpers for the egress proxy's integration tests (egress-*.bats).
#
# Every test runs the proxy, its origins and its clients inside a network
# namespace of its own that holds only `lo` (and a private mount namespace,
# for tests that bind-mount their own /etc/hosts): whatever the proxy is
# asked for (private, metadata, public addresses), no packet can leave the
# machine even if the policy had a bug.  The namespaces die with the test.
#
#   AGENTBOX  path to agentbox (default build/agentbox); the proxy runs as
#             "$AGENTBOX egress-proxy serve ..."
#   HELPERS   dir holding egress-origin and egress-client (default build/tests)

bats_require_minimum_version 1.5.0

ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
: "${HELPERS:=$ROOT_DIR/build/tests}"
ORIGIN="$HELPERS/egress-origin"
CLIENT="$HELPERS/egress-client"

eg_setup() {
	local f
	for f in "$AGENTBOX" "$ORIGIN" "$CLIENT"; do
		if [ ! -x "$f" ]; then
			echo "$f is not an executable (make all \$BUILD/tests/egress-origin \$BUILD/tests/egress-client)" >&2
			return 1
		fi
	done
	BG_PIDS=()
	T="$BATS_TEST_TMPDIR"
	unshare --net --mount sleep 600 </dev/null >/dev/null 2>&1 &
	NS_PID=$!
	BG_PIDS+=("$NS_PID")
	# Never act on the host's namespaces: wait until the holder is really in
	# new ones (unshare has exec'd), and refuse to go on otherwise.
	local i
	for ((i = 0; i < 50; i++)); do
		if [ "$(readlink "/proc/$NS_PID/ns/net")" != "$(readlink /proc/self/ns/net)" ] &&
			[ "$(readlink "/proc/$NS_PID/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]; then
			break
		fi
		sleep 0.05
	done
	if [ "$(readlink "/proc/$NS_PID/ns/net")" = "$(readlink /proc/self/ns/net)" ]; then
		echo "could not create a test network namespace" >&2
		return 1
	fi
	NS_NET="$(readlink "/proc/$NS_PID/ns/net")"
	INNS=(nsenter -t "$NS_PID" -n -m --)
	inns ip link set lo up
	# Only lo, nothing routed anywhere else.
	[ "$(inns ip -o link show | grep -vc ': lo:')" -eq 0 ]
}

eg_teardown() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	# Whatever still lives in this test's own network namespace was started
	# by this test (the namespace was created for it alone).
	[ -n "${NS_NET:-}" ] || return 0
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "$NS_NET" ] && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	return 0
}

# inns CMD...: run CMD in the test's network and mount namespaces.  For
# background processes use "${INNS[@]}" CMD & instead, so that $! is the
# process itself (nsenter execs it) and not a subshell.
inns() {
	nsenter -t "$NS_PID" -n -m -- "$@"
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

# start_origin NAME [ARGS]: an egress-origin in the namespace; sets
# ${NAME}_PORT (e.g. start_origin WEB -> WEB_PORT).
start_origin() {
	local name="$1"
	shift
	"${INNS[@]}" "$ORIGIN" "$@" >"$T/origin-$name.out" 2>&1 &
	BG_PIDS+=("$!")
	wait_for "$T/origin-$name.out" '^[0-9]+$'
	printf -v "${name}_PORT" '%s' "$(head -1 "$T/origin-$name.out")"
}

# start_proxy [FLAGS]: the proxy on 127.0.0.1:0 in the namespace, its
# decision lines in $T/proxy.err and audit lines in $T/audit.log; sets
# PROXY_PORT, PROXY_PID and PROXY (http://127.0.0.1:PORT).
start_proxy() {
	: >"$T/proxy.err"
	"${INNS[@]}" "$AGENTBOX" egress-proxy serve --listen 127.0.0.1:0 --audit-log "$T/audit.log" "$@" \
		2>"$T/proxy.err" </dev/null &
	PROXY_PID=$!
	BG_PIDS+=("$PROXY_PID")
	wait_for "$T/proxy.err" 'listening on 127\.0\.0\.1:[0-9]+'
	PROXY_PORT="$(sed -n 's/.* listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/proxy.err")"
	PROXY="http://127.0.0.1:$PROXY_PORT"
}

# pcurl ARGS: curl through the proxy, in the namespace, bounded in time.
pcurl() {
	inns curl -sS --max-time 20 --proxy "$PROXY" "$@"
}

# raw: stdin to the proxy as bytes, SHUT_WR, the whole answer on stdout.
raw() {
	inns "$CLIENT" raw "$PROXY_PORT" "$@"
}

# audit_last JQ: apply JQ to the last audit line.
audit_last() {
	tail -n 1 "$T/audit.log" | jq -r "$1"
}

# audit_wait N [TENTHS]: until the audit log has N lines at least (10 s):
# a line is written when its tunnel or response has ended.
audit_wait() {
	local i
	for ((i = 0; i < ${2:-100}; i++)); do
		[ "$(wc -l <"$T/audit.log" 2>/dev/null || echo 0)" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1 audit lines; the log holds:" >&2
	cat "$T/audit.log" >&2 2>/dev/null || true
	return 1
}

# proxy_fds: how many descriptors the proxy holds open.
proxy_fds() {
	ls "/proc/$PROXY_PID/fd" | wc -l
}

# rss_kib PID: resident memory of PID in KiB.
rss_kib() {
	awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}
