#!/usr/bin/env bats
# A create that fails leaves nothing, on every backend: no process, VM,
# container, mount, cgroup or file.  Each failure here happens late, after
# the backend has made what a sandbox needs (its monitor, cgroup, run
# directory, door, bundle or container): a sandbox whose memory limit is
# too small to start its agent (native, gVisor), one that dockerd refuses
# (Docker).  The microVM's failures (a KVM that aborts or hangs, a caller
# gone mid-boot) are in backend-microvm.bats.
#
# "Nothing" is judged on what this test made: the processes whose command
# line names this test's directories, and host_snapshot (mounts below this
# run's directories, agentbox-* cgroups below our own, files in this test's
# TMPDIR); nothing that other programs on the host share.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	export AGENTBOX_CACHE_DIR="$BATS_FILE_TMPDIR/cache"
}

teardown() {
	daemon_teardown
	if [ -n "${DOCKERD_PID:-}" ]; then
		load dockerd.bash
		stop_dockerd
	fi
}

# Processes of this test other than its daemon: monitors of `agentbox run`
# (their command line holds --workspace $WS), runsc (--root under the state
# dir or TMPDIR), QEMU (its run directory in TMPDIR), docker clients.  The
# daemon's monitors are checked through its state: no sandbox is recorded.
our_processes() {
	pgrep -f -- "$BATS_TEST_TMPDIR" 2>/dev/null | grep -vx -e "$$" -e "${DAEMON_PID:-x}" || true
}

assert_no_process_left() {
	local i left
	for ((i = 0; i < 50; i++)); do
		left="$(our_processes)"
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "processes of this test still running:" >&2
	ps -o pid,ppid,comm,args -p "$(echo $left | tr ' ' ,)" >&2
	return 1
}

# run_fails BACKEND REGEX ARGS...: `agentbox run` refused with exit 125 and
# a reason matching REGEX.
run_fails() {
	local backend="$1" re="$2"
	shift 2
	run timeout -k 2 90 "$AGENTBOX" run --backend "$backend" --workspace "$WS" "$@" -- true </dev/null
	echo "run ${AGENTBOX_RUN_SERVICE:+(service mode) }$*: status $status: $output"
	[ "$status" -eq 125 ]
	[[ "$output" =~ $re ]]
}

# create_fails BACKEND ARGS...: the daemon refuses the create and keeps no
# record of it.
create_fails() {
	local backend="$1"
	shift
	run timeout -k 2 90 "$AGENTBOX" create --backend "$backend" --workspace "$WS" "$@"
	echo "create $*: status $status: $output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ -n "$output" ]
	[ "$(ab ls --json | jq length)" = 0 ]
	[ -z "$(ls -A "$STATE/sandboxes" 2>/dev/null)" ]
}

assert_left_nothing() {
	assert_no_process_left
	assert_nothing_left "$SNAPSHOT"
}

# Native: too little memory ends the agent before it answers; a pids limit
# of 1 stops the start-up's own fork (over protocol v2 the sandbox does
# start with 4k, and its command is OOM-killed: a run, not a failed start).
@test "native: failed starts (--memory 4k, --pids 1) leave nothing" {
	run_fails native 'agentbox: ' --memory 4k
	run_fails native 'agentbox: .*(fork|Resource temporarily unavailable)' --pids 1
	AGENTBOX_RUN_SERVICE=1 run_fails native 'agentbox: .*(fork|Resource temporarily unavailable)' --pids 1
	create_fails native --memory 4k
	assert_left_nothing
}

@test "gvisor: a sandbox that cannot start its agent (--memory 4k) leaves nothing" {
	command -v runsc >/dev/null || skip "runsc is not installed (scripts/install-deps test)"
	run_fails gvisor 'gvisor backend: ' --memory 4k
	create_fails gvisor --memory 4k
	assert_left_nothing
}

@test "docker: a container dockerd refuses (--memory 4k) leaves nothing, not even a stopped container" {
	load dockerd.bash
	start_dockerd || skip "no test dockerd: $DOCKERD_WHY"
	export DOCKER_HOST
	kill -TERM "$DAEMON_PID" && wait "$DAEMON_PID" || true
	daemon_start # with this DOCKER_HOST
	run_fails docker 'docker backend: ' --memory 4k
	create_fails docker --memory 4k
	[ -z "$("$DOCKER" ps -aq)" ]
	assert_left_nothing
}
