# Shared helpers for the daemon's integration tests (daemon-*.bats): each
# test runs its own `agentbox serve` with its own --socket and --state-dir
# under BATS_TEST_TMPDIR, talks to it with curl --unix-socket and the CLI,
# and in teardown removes the sandboxes it made and stops its daemon (by
# pid; nothing else is touched).

# Before run-common.bash, which would set a shorter default.
: "${BATS_TEST_TIMEOUT:=300}"
load run-common.bash

daemon_setup() {
	if [ ! -x "$AGENTBOX" ]; then
		echo "AGENTBOX=$AGENTBOX is not an executable (run make first)" >&2
		return 1
	fi
	D="$BATS_TEST_TMPDIR/d"
	SOCK="$D/run/agentbox.sock"
	STATE="$D/state"
	mkdir -p "$D"
	export AGENTBOX_HOST="$SOCK"
	DAEMON_PID=""
	BG_PIDS=()
	HOST_FILES=()
	MARK="abtest-$$-${BATS_TEST_NUMBER}-$RANDOM$RANDOM"
	test_tmpdir
	SNAPSHOT="$BATS_TEST_TMPDIR/host-before"
	host_snapshot >"$SNAPSHOT"
}

# daemon_start [serve options...]: start and wait (at most 10 s) for the socket.
daemon_start() {
	setsid "$AGENTBOX" serve --socket "$SOCK" --state-dir "$STATE" "$@" \
		>>"$D/daemon.log" 2>&1 </dev/null &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		curl -s --max-time 2 --unix-socket "$SOCK" http://agentbox/v1/health >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "daemon did not start; its log:" >&2
	cat "$D/daemon.log" >&2
	return 1
}

daemon_kill9() {
	local i
	kill -KILL "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null || true
	# A daemon that setup_file started is not this shell's child: wait
	# cannot wait for it.  Wait (at most 10 s) for what a restart needs,
	# its state lock released (the kernel releases it as the process exits).
	for ((i = 0; i < 100; i++)); do
		[ -e "$STATE/daemon.lock" ] || break
		flock -n "$STATE/daemon.lock" true 2>/dev/null && break
		sleep 0.1
	done
	DAEMON_PID=""
}

# Monitors of this test's sandboxes, from their state files.
state_monitors() {
	local f
	for f in "$STATE"/sandboxes/*/state.json; do
		[ -f "$f" ] && jq -r '.monitor.pid' "$f"
	done
	true
}

daemon_teardown() {
	local id p
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		for id in $(api /v1/sandboxes 2>/dev/null | jq -r '.sandboxes[].id' 2>/dev/null); do
			api -X DELETE "/v1/sandboxes/$id?force=1" >/dev/null 2>&1 || true
		done
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	# A daemon that died: end its sandboxes' monitors (ours: comm agentbox-mon
	# and our state dir's id on the command line).
	for p in $(state_monitors); do
		if [ "$(cat /proc/$p/comm 2>/dev/null)" = agentbox-mon ] \
			&& tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "__create-sandbox"; then
			kill -TERM "$p" 2>/dev/null || true
		fi
	done
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# api PATH [curl options...]: the daemon's API, bounded in time.
api() {
	local path="$1"
	shift
	curl -sS --max-time "${API_TIMEOUT:-60}" --unix-socket "$SOCK" "$@" "http://agentbox$path"
}

# api_status PATH [curl options]: prints the HTTP status; the body goes to $D/body.
api_status() {
	local path="$1"
	shift
	curl -s -o "$D/body" -w '%{http_code}' --max-time "${API_TIMEOUT:-60}" --unix-socket "$SOCK" "$@" \
		"http://agentbox$path"
}

# create [JSON]: a sandbox (default: its own daemon-made workspace); prints the id.
create() {
	local body="${1:-}"
	[ -n "$body" ] || body='{}'
	api /v1/sandboxes -d "$body" | jq -er .id
}

# exec_wait ID JSON-CMD: runs it with "wait": true; prints the JSON answer.
exec_wait() {
	api "/v1/sandboxes/$1/exec" -d "{\"cmd\": $2, \"wait\": true}"
}

# use_backend BACKEND: what a test of BACKEND needs, or a failure that
# says what is missing (make check installs them all; docker follows
# require_dockerd: a skip unless AGENTBOX_REQUIRE_DOCKER=1).
# microvm: the guest built for this file and TCG's slower calls; docker:
# this file's private dockerd (dockerd.bash).
use_backend() {
	case "$1" in
	gvisor)
		command -v runsc >/dev/null 2>&1 \
			|| { echo "runsc is not installed (scripts/install-deps test)" >&2; return 1; }
		;;
	microvm)
		command -v qemu-system-x86_64 >/dev/null 2>&1 \
			|| { echo "qemu-system-x86_64 is not installed (scripts/install-deps microvm)" >&2; return 1; }
		microvm_guest "$BATS_FILE_TMPDIR/guest"
		export AB_CALL_TIMEOUT=120 # every exec is slow under TCG
		;;
	docker)
		load dockerd.bash
		require_dockerd
		;;
	esac
}

# microvm_guest DIR: build the microVM guest into DIR (scripts/build-guest,
# a few seconds; nothing when DIR holds the same build already) and export
# AGENTBOX_GUEST_DIR, where the daemon's monitors find it: call it before
# daemon_start.
microvm_guest() {
	export AGENTBOX_GUEST_DIR="$1"
	"$BATS_TEST_DIRNAME/../../scripts/build-guest" --agent "$(dirname "$AGENTBOX")/agentbox-agent" \
		--out "$AGENTBOX_GUEST_DIR" >&2
}

ab() {
	timeout -k 2 "${AB_CALL_TIMEOUT:-60}" "$AGENTBOX" "$@"
}

vm_hwm_kib() {
	awk '/^VmHWM/ { print $2 }' "/proc/$1/status"
}

vm_rss_kib() {
	awk '/^VmRSS/ { print $2 }' "/proc/$1/status"
}

# monitor_gone PID: the monitor ended (at most 10 s: a monitor tears its
# sandbox down first, and runsc's teardown is slow on a loaded host; a
# zombie waiting for init to reap it counts as ended).
monitor_gone() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ -e "/proc/$1" ] || return 0
		grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null && return 0
		[ "$(cat "/proc/$1/comm" 2>/dev/null)" = agentbox-mon ] || return 0
		sleep 0.1
	done
	return 1
}

# The agent (PID 1 of the sandbox) of sandbox ID, as a host pid.
agent_pid() {
	local mon
	mon="$(api "/v1/sandboxes/$1" | jq -r .monitor_pid)"
	pgrep -P "$mon" -x agentbox-agent
}
