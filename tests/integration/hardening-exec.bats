#!/usr/bin/env bats
# Issue 19 item 4: an exec's timeout and an explicit kill reach every
# process of that exec, also one that called setsid and whose parents have
# ended, on every backend (native, Docker and the microVM: the exec's keeper, a child
# subreaper; gVisor: the exec's cgroup mark).  Each case makes the escape
# for real: `setsid sh -c 'SLEEPER &'` leaves a process in a session of
# its own whose parent is gone, and the test looks for it afterwards by
# its executable, from inside the sandbox and, where sandbox processes are
# host processes (native, Docker), by pid from the host.

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
	daemon_setup
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	chmod 0777 "$WS"
	# The sleeper: sleep under a name of this test's own.
	cp /bin/sleep "$WS/$MARK"
	chmod 0755 "$WS/$MARK"
	export AGENTBOX_CACHE_DIR="$BATS_FILE_TMPDIR/cache"
}

teardown() {
	[ -n "${D:-}" ] && daemon_teardown
	true
}

# Pids (inside) of the sandbox's processes running the sleeper, by their
# command line (world-readable; /proc/PID/exe of another exec is not: each
# exec has a Landlock domain of its own).  The pattern is built from $1, so
# this shell's own command line does not match it.
sleepers_inside() {
	ab exec "$ID" -- sh -c 'for p in /proc/[0-9]*; do
		case "$(tr "\0" " " <"$p/cmdline" 2>/dev/null)" in
		"/workspace/$1 "*) echo "${p#/proc/}" ;;
		esac
	done; true' sh "$MARK"
}

# Host pids of processes running the sleeper (native and Docker).
sleepers_on_host() {
	pgrep -f "^/workspace/$MARK " || true
}

# Whether BACKEND's sandbox processes are host processes.
host_pids() {
	[ "$1" = native ] || [ "$1" = docker ]
}

# wait_gone BACKEND: poll (10 s at most) until no sleeper is left.
wait_gone() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ -z "$(sleepers_inside)" ] && break
		sleep 0.2
	done
	[ -z "$(sleepers_inside)" ]
	if host_pids "$1"; then
		[ -z "$(sleepers_on_host)" ]
	fi
}

# wait_there BACKEND N: poll (10 s at most) until N sleepers run.
wait_there() {
	local i n
	for ((i = 0; i < 50; i++)); do
		n="$(sleepers_inside | wc -l)"
		[ "$n" -ge "$2" ] && break
		sleep 0.2
	done
	[ "$(sleepers_inside | wc -l)" -eq "$2" ]
	if host_pids "$1"; then
		[ "$(sleepers_on_host | wc -l)" -eq "$2" ]
	fi
}

# The escape, then a timeout and a kill that must reach it.
# escapes_are_reached BACKEND [CREATE-OPTION...]
escapes_are_reached() {
	local backend="$1" pid
	daemon_start
	ID="$(ab create --backend "$backend" "${@:2}" --workspace "$WS" --kill-grace 1s)"
	[ -n "$ID" ]

	# 1. The leader ends at once; its setsid grandchild (parents gone,
	#    a session of its own, SIGTERM ignored) still ends with the exec's
	#    timeout: SIGTERM, then SIGKILL after the grace.  The exit status
	#    reported is the leader's own, not a timeout.
	#    "started" comes from the leader itself: what a process left behind
	#    writes after the leader's end is read for 50 ms only
	#    (AB_PROC_DRAIN_MS), which a TCG guest can miss.
	run ab exec --timeout 1s "$ID" -- sh -c "setsid sh -c 'trap \"\" TERM; exec /workspace/$MARK 1000' & echo started"
	echo "exec: $status $output"
	[ "$status" -eq 0 ]
	[ "$output" = started ]
	wait_there "$backend" 1
	wait_gone "$backend"

	# 2. A kill of a running exec reaches a setsid grandchild of it, and
	#    the exec ends killed.
	pid="$(ab exec -d "$ID" -- sh -c "setsid sh -c '/workspace/$MARK 1001 &'; exec sleep 1000")"
	[ -n "$pid" ]
	wait_there "$backend" 1
	run api "/v1/sandboxes/$ID/processes/$pid/signal" -d '{"signal": "KILL"}'
	echo "signal: $output"
	wait_gone "$backend"
	run api "/v1/sandboxes/$ID/processes"
	echo "$output"
	[ "$(echo "$output" | jq -r --argjson p "$pid" '.processes[] | select(.pid == $p) | .signal')" = 9 ] \
		|| [ "$(echo "$output" | jq -r --argjson p "$pid" '.processes[] | select(.pid == $p) | .exit_code')" = 137 ]

	# 3. Without a timeout or a kill, what an exec leaves running lives on
	#    (a server started in the background).
	run ab exec "$ID" -- setsid sh -c "/workspace/$MARK 1002 & echo started"
	[ "$status" -eq 0 ]
	wait_there "$backend" 1
	sleep 1
	wait_there "$backend" 1
}

@test "native: a timeout and a kill reach a setsid grandchild of the exec; nothing of it is left" {
	escapes_are_reached native
}

@test "gvisor: a timeout and a kill reach a setsid grandchild of the exec; nothing of it is left" {
	use_backend gvisor
	escapes_are_reached gvisor
}

@test "docker: a timeout and a kill reach a setsid grandchild of the exec; nothing of it is left" {
	use_backend docker
	escapes_are_reached docker
}

@test "microvm (tcg): a timeout and a kill reach a setsid grandchild of the exec; nothing of it is left" {
	use_backend microvm
	escapes_are_reached microvm --microvm-accel tcg
}
