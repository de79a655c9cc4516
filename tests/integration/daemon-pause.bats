#!/usr/bin/env bats
# Pause and resume of daemon sandboxes (docs/snapshots.md) on native,
# gVisor and Docker (a private dockerd, dockerd.bash): a busy loop's CPU
# time does not grow while paused and grows again after resume; exec and
# file calls answer 409 "paused" (or resume first with auto_resume);
# pause and resume are idempotent, shown by `agentbox ls`, survive a
# daemon SIGKILL and restart, and stop the TTL clock.

load daemon-common.bash

setup_file() {
	load dockerd.bash
	start_dockerd || true
}

teardown_file() {
	load dockerd.bash
	stop_dockerd
}

setup() {
	# The microVM test's guest (scripts/build-guest, a few seconds), before
	# the daemon starts: its monitors find it through the environment.
	if [[ "$BATS_TEST_DESCRIPTION" == microvm* ]] && command -v qemu-system-x86_64 >/dev/null; then
		microvm_guest "$BATS_TEST_TMPDIR/guest"
	fi
	daemon_setup
	export AGENTBOX_CACHE_DIR="$BATS_TEST_TMPDIR/cache"
	daemon_start
}

teardown() {
	daemon_teardown
}

# CPU time (µs) the host accounts to sandbox ID: its cgroup's usage
# (native, gVisor: "agentbox-<backend id>"; Docker: the container's group).
cpu_usec() {
	local bid g pid path
	bid="$(jq -r .backend_id "$STATE/sandboxes/$1/state.json")"
	if [ "$2" = docker ]; then
		pid="$("$DOCKER" inspect -f '{{.State.Pid}}' "agentbox-$bid")"
		path="$(awk -F: '$2 ~ /cpuacct/ { print $3 }' "/proc/$pid/cgroup")"
		if [ -n "$path" ] && [ -r "/sys/fs/cgroup/cpuacct$path/cpuacct.usage" ]; then
			echo $(($(cat "/sys/fs/cgroup/cpuacct$path/cpuacct.usage") / 1000))
			return
		fi
		path="$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup")"
		g="$(ls -d /sys/fs/cgroup/unified"$path" /sys/fs/cgroup"$path" 2>/dev/null | head -1)"
	else
		g="$(find /sys/fs/cgroup/unified /sys/fs/cgroup -maxdepth 4 -type d -name "agentbox-$bid" 2>/dev/null | head -1)"
	fi
	awk '$1 == "usage_usec" { print $2 }' "$g/cpu.stat"
}

# pause_cycle BACKEND: the whole check on one backend.
pause_cycle() {
	local be="$1" id c0 c1 c2 c3
	id="$(create "{\"backend\": \"$be\"}")"
	api "/v1/sandboxes/$id/exec" -d '{"cmd": "while :; do :; done", "detach": true}' >/dev/null
	sleep 0.5
	[ "$(api_status "/v1/sandboxes/$id/pause" -X POST)" = 200 ]
	[ "$(jq -r .state "$D/body")" = paused ]
	echo "$be pause: $(jq -c '{backend_us, took_us}' "$D/body")" >&3
	# Idempotent.
	[ "$(api_status "/v1/sandboxes/$id/pause" -X POST)" = 200 ]
	c0="$(cpu_usec "$id" "$be")"
	sleep 1
	c1="$(cpu_usec "$id" "$be")"
	echo "$be cpu while paused: $c0 -> $c1 us" >&3
	# A frozen group accrues nothing (20 ms of slack for the freeze's edge).
	[ $((c1 - c0)) -lt 20000 ]
	# The agent is frozen too: the daemon answers for it.
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"], "wait": true}')" = 409 ]
	[ "$(jq -r .error.code "$D/body")" = paused ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/x")" = 409 ]
	run ab ls
	echo "$output" | grep -E "^$id +paused"
	[ "$(api_status "/v1/sandboxes/$id/resume" -X POST)" = 200 ]
	[ "$(api_status "/v1/sandboxes/$id/resume" -X POST)" = 200 ]
	[ "$(jq -r .state "$D/body")" = running ]
	c2="$(cpu_usec "$id" "$be")"
	sleep 1
	c3="$(cpu_usec "$id" "$be")"
	echo "$be cpu after resume: $c2 -> $c3 us" >&3
	[ $((c3 - c2)) -gt 300000 ]
	run exec_wait "$id" '["echo", "back"]'
	[ "$(echo "$output" | jq -r .stdout)" = back ]
	[ "$(api_status "/v1/sandboxes/$id?force=1" -X DELETE)" = 204 ]
}

@test "native: paused uses no CPU, exec and files are 409, resume continues" {
	pause_cycle native
	assert_nothing_left "$SNAPSHOT"
}

@test "gvisor: runsc pause and resume" {
	command -v runsc >/dev/null || skip "runsc is not installed"
	pause_cycle gvisor
	assert_nothing_left "$SNAPSHOT"
}

@test "docker: docker pause and unpause" {
	load dockerd.bash
	dockerd_env || skip "docker: $DOCKERD_WHY"
	# This test's daemon must talk to the private dockerd.
	daemon_teardown
	daemon_start
	pause_cycle docker
}

@test "auto_resume; the pause survives a daemon SIGKILL and restart; the TTL clock stops" {
	a="$(create '{"backend": "native", "auto_resume": true}')"
	b="$(create '{"backend": "native", "ttl": "3s"}')"
	api "/v1/sandboxes/$a/pause" -X POST >/dev/null
	api "/v1/sandboxes/$b/pause" -X POST >/dev/null
	exp0="$(api "/v1/sandboxes/$b" | jq -r .expires_at)"
	daemon_kill9
	daemon_start
	[ "$(api "/v1/sandboxes/$a" | jq -r .state)" = paused ]
	[ "$(api "/v1/sandboxes/$b" | jq -r .state)" = paused ]
	# Past its TTL while paused, and still there.
	sleep 3.5
	[ "$(api "/v1/sandboxes/$b" | jq -r .state)" = paused ]
	# auto_resume: the exec thaws it first.
	run exec_wait "$a" '["echo", "thawed"]'
	[ "$(echo "$output" | jq -r .stdout)" = thawed ]
	[ "$(api "/v1/sandboxes/$a" | jq -r .state)" = running ]
	run ab resume "$b"
	[ "$status" -eq 0 ]
	exp1="$(api "/v1/sandboxes/$b" | jq -r .expires_at)"
	# The expiry moved by the time spent paused (>= 3 s).
	[ "$(date -d "$exp1" +%s)" -ge $(($(date -d "$exp0" +%s) + 3)) ]
	run ab pause "$a"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q paused
	# A paused sandbox goes only when forced (nobody can ask it whether
	# something still runs).
	[ "$(api_status "/v1/sandboxes/$a" -X DELETE)" = 409 ]
	grep -q paused "$D/body"
	[ "$(api_status "/v1/sandboxes/$a?force=1" -X DELETE)" = 204 ]
	[ "$(api_status "/v1/sandboxes/$b?force=1" -X DELETE)" = 204 ]
	[ -z "$(ls "$STATE/sandboxes")" ]
	assert_nothing_left "$SNAPSHOT"
}

# CPU time (µs) of a process: utime + stime from /proc/PID/stat.
proc_cpu_usec() {
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000000 / hz) }' "/proc/$1/stat"
}

@test "microvm (tcg): QMP stop and cont; the stopped VM uses no CPU" {
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
	local id mon qemu c0 c1 c2 c3
	API_TIMEOUT=90 id="$(create '{"backend": "microvm", "microvm_accel": "tcg"}')"
	mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
	qemu="$(pgrep -P "$mon" -x qemu-system-x86)"
	[ -n "$qemu" ]
	[ -S "$STATE/sandboxes/$id/agent.sock.qmp" ]
	api "/v1/sandboxes/$id/exec" -d '{"cmd": "while :; do :; done", "detach": true}' >/dev/null
	sleep 0.5
	[ "$(api_status "/v1/sandboxes/$id/pause" -X POST)" = 200 ]
	echo "microvm pause: $(jq -c '{backend_us, took_us}' "$D/body")" >&3
	[ "$(api_status "/v1/sandboxes/$id/pause" -X POST)" = 200 ] # idempotent
	c0="$(proc_cpu_usec "$qemu")"
	sleep 1
	c1="$(proc_cpu_usec "$qemu")"
	echo "microvm QEMU cpu while stopped: $c0 -> $c1 us" >&3
	# A stopped VM's QEMU only waits in its main loop (TCG: no vCPU thread runs).
	[ $((c1 - c0)) -lt 50000 ]
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"], "wait": true}')" = 409 ]
	[ "$(api_status "/v1/sandboxes/$id/resume" -X POST)" = 200 ]
	c2="$(proc_cpu_usec "$qemu")"
	sleep 1
	c3="$(proc_cpu_usec "$qemu")"
	echo "microvm QEMU cpu after cont: $c2 -> $c3 us" >&3
	# Running again (TCG on a loaded 2-CPU host gets a fraction of a CPU).
	[ $((c3 - c2)) -gt 100000 ]
	API_TIMEOUT=60 run exec_wait "$id" '["echo", "back"]'
	[ "$(echo "$output" | jq -r .stdout)" = back ]
	[ "$(api_status "/v1/sandboxes/$id?force=1" -X DELETE)" = 204 ]
	[ ! -e "$STATE/sandboxes/$id" ]
	monitor_gone "$mon"
}
