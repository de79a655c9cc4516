#!/usr/bin/env bats
# Issue 19 item 1 (SECURITY.md 17): the agent is invisible to commands on
# every backend.  As root inside, a command tries every way to the agent's
# descriptors (its sockets, the pipes that are other commands' stdio),
# ptrace, and SIGKILL of PID 1; each is refused, the agent lives on and
# serves the next exec.  On gVisor, which ignores non-dumpable and lets
# uid 0 signal PID 1, commands live in a pid namespace of their own whose
# /proc lists no agent process (agent/cmdns.c); on native and Docker the
# kernel's ptrace access checks and init's signal protection hold, and in
# the microVM the guest kernel's.

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
	export AGENTBOX_CACHE_DIR="$BATS_FILE_TMPDIR/cache"
}

teardown() {
	[ -n "${D:-}" ] && daemon_teardown
	true
}

# The attack, as root: prints a line per success (READLINK-OK, SOCKET,
# PIPE-OPENED, ENVIRON, PTRACED) and "done".  Every process named
# agentbox-agent is the agent's (the agent, an exec's keeper, the commands'
# init); a command's own descriptors are not the agent's.
ATTACK='
	echo "fd: $(ls /proc/1/fd 2>&1 | tr "\n" " ")"
	for f in /proc/1/fd/*; do readlink "$f" >/dev/null 2>&1 && echo "READLINK-OK $f"; done
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = agentbox-agent ] || continue
		tr -d "\0" <"$p/environ" 2>/dev/null | grep -q . && echo "ENVIRON $p"
		for f in "$p"/fd/*; do
			l=$(readlink "$f" 2>/dev/null) || continue
			case "$l" in
			socket:*) echo "SOCKET $f $l" ;;
			pipe:*) timeout 1 head -c 1 "$f" >/dev/null 2>&1 </dev/null && echo "PIPE-OPENED $f $l" ;;
			esac
		done
	done
	python3 -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for pid in [1] + [int(p) for p in os.listdir(\"/proc\") if p.isdigit()]:
    if pid != os.getpid() and libc.ptrace(16, pid, 0, 0) == 0:
        print(\"PTRACED\", pid)
" 2>&1
	echo done'

# agent_is_invisible BACKEND [CREATE-OPTION...]
agent_is_invisible() {
	local backend="$1" id other
	daemon_start
	id="$(ab create --backend "$backend" "${@:2}" --workspace "$WS")"
	[ -n "$id" ]
	# Another command, whose stdout is a pipe the agent reads.
	other="$(ab exec -d "$id" -- sh -c "echo other-$MARK; exec sleep 1000")"
	[ -n "$other" ]
	run ab exec -u 0:0 "$id" -- sh -c "$ATTACK"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *done* ]]
	[[ "$output" != *READLINK-OK* ]]
	[[ "$output" != *SOCKET* ]]
	[[ "$output" != *PIPE-OPENED* ]]
	[[ "$output" != *ENVIRON* ]]
	[[ "$output" != *PTRACED* ]]
	# The other command's output is still the agent's alone (its live
	# stream stays open while it runs: 3 s of it).
	output="$(API_TIMEOUT=3 api "/v1/sandboxes/$id/processes/$other/output" 2>/dev/null || true)"
	[[ "$output" == *"other-$MARK"* ]]
	# SIGKILL of PID 1 from inside, as root: refused, or (gVisor) it ends
	# the commands' init and every command with it, never the agent.
	run ab exec -u 0:0 "$id" -- sh -c 'kill -KILL 1; kill -STOP 1; sleep 0.3; echo after'
	echo "kill 1: $status $output"
	run ab exec -u 0:0 "$id" -- sh -c 'kill -KILL -1; echo after'
	run ab exec "$id" -- echo "still-$MARK"
	[ "$status" -eq 0 ]
	[ "$output" = "still-$MARK" ]
	# What commands see of PID 1 (gVisor: the commands' init, nobody with
	# no capability and no fd).
	run ab exec "$id" -- sh -c 'grep -E "^(Uid|CapEff):" /proc/1/status; echo "$$"'
	echo "$output"
	if [ "$backend" = gvisor ]; then
		[[ "$output" == *"Uid:	65534	65534	65534	65534"* ]]
		[[ "$output" == *"CapEff:	0000000000000000"* ]]
	fi
	run ab rm -f "$id"
	[ "$status" -eq 0 ]
}

@test "native: a root command cannot open, trace or kill the agent" {
	agent_is_invisible native
}

@test "gvisor: a root command cannot open, trace or kill the agent (commands' own pid namespace)" {
	use_backend gvisor
	agent_is_invisible gvisor
}

@test "docker: a root command cannot open, trace or kill the agent" {
	use_backend docker
	agent_is_invisible docker
}

@test "microvm (tcg): a root command cannot open, trace or kill the agent" {
	use_backend microvm
	agent_is_invisible microvm --microvm-accel tcg
}
