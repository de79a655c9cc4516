# Shared helpers for the service-mode agent tests (agent-*.bats): each test
# starts a real native sandbox whose agent serves protocol v2 on a unix
# socket (agentctl launch), drives it through the client library
# (tests/helpers/agentctl.c) and shuts it down in teardown.
#
#   HELPERS   dir holding agentctl      (default build/tests)
#   AGENTBOX  path to agentbox; its directory holds agentbox-agent
#
# The native backend executes the agentbox-agent that sits next to the
# running binary, so agentctl and the agent are copied side by side into
# the test's own directory.

bats_require_minimum_version 1.5.0

: "${BATS_TEST_TIMEOUT:=120}"
ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
: "${HELPERS:=$ROOT_DIR/build/tests}"
AGENT_BIN="$(dirname "$AGENTBOX")/agentbox-agent"

ag_setup() {
	if [ ! -x "$HELPERS/agentctl" ] || [ ! -x "$AGENT_BIN" ]; then
		echo "need $HELPERS/agentctl and $AGENT_BIN (make BUILD=... all \$BUILD/tests/agentctl)" >&2
		return 1
	fi
	# A short directory: unix socket paths are limited to 107 bytes.
	D="$(mktemp -d /tmp/abag.XXXXXX)"
	# The sandbox's init (mapped root, not host root) opens the agent binary.
	chmod 0755 "$D"
	mkdir -p "$D/bin" "$D/ws"
	cp "$HELPERS/agentctl" "$AGENT_BIN" "$D/bin/"
	CTL="$D/bin/agentctl"
	SOCK="$D/agent.sock"
	WS="$D/ws"
	MON="$(timeout 20 "$CTL" launch "$SOCK" "$WS")"
	[ -n "$MON" ] && [ -S "$SOCK" ]
	AGENT_PID="$(agent_pid)"
}

ag_teardown() {
	if [ -S "${SOCK:-}" ]; then
		timeout 10 "$CTL" -s "$SOCK" shutdown 200 >/dev/null 2>&1 || true
	fi
	# The monitor is ours: make sure it is gone before the files are.
	if [ -n "${MON:-}" ]; then
		local i
		for ((i = 0; i < 50; i++)); do
			kill -0 "$MON" 2>/dev/null || break
			sleep 0.1
		done
		kill -TERM "$MON" 2>/dev/null || true
	fi
	# An agent built with -fsanitize=address,undefined and
	# log_path=/workspace/asan-log (by __asan_default_options) leaves its
	# reports in the workspace: keep them when AGENT_LOG_DIR is set.
	if [ -n "${AGENT_LOG_DIR:-}" ] && ls "$WS"/*san-log* >/dev/null 2>&1; then
		mkdir -p "$AGENT_LOG_DIR" && cp "$WS"/*san-log* "$AGENT_LOG_DIR/"
	fi
	[ -n "${D:-}" ] && rm -rf "$D"
}

# The agent is the monitor's child named agentbox-agent (its host pid).
agent_pid() {
	local p
	for p in $(pgrep -P "$MON"); do
		if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = agentbox-agent ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# agentctl against this test's sandbox, bounded in time.
ctl() {
	timeout -k 2 "${CTL_TIMEOUT:-30}" "$CTL" -s "$SOCK" "$@"
}

configure() {
	ctl configure "$@"
}

rss_kb() {
	awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}

hwm_kb() {
	awk '/^VmHWM:/ {print $2}' "/proc/$1/status"
}

# Raw protocol bytes, for the malformed-input tests.
be32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)); }
be16() { printf '\\x%02x\\x%02x' $(($1 >> 8 & 255)) $(($1 & 255)); }
# frame TYPE CHANNEL PAYLOAD-ESCAPES [LENGTH]: a frame header (+ payload).
frame() {
	local len="${4:-$(printf "$3" | wc -c)}"
	printf "$(be32 "$len")$(be16 "$1")$(be16 0)$(be32 "$2")$3"
}
# tlv TAG VALUE-ESCAPES [LENGTH]
tlv() {
	local len="${3:-$(printf "$2" | wc -c)}"
	printf '%s' "$(be16 "$1")$(be32 "$len")$2"
}
u32() { be32 "$1"; }
