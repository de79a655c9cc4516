#!/usr/bin/env bats
# The agent's process service in a real service-mode sandbox (protocol v2),
# driven through the client library (agentctl).

load agent-common

setup() {
	ag_setup
	configure
}

teardown() {
	ag_teardown
}

@test "HELLO, PING and a command's stdout, stderr and exit status" {
	run -0 ctl ping
	run -3 --separate-stderr ctl exec -- sh -c 'echo out; echo err >&2; exit 3'
	[ "$output" = out ]
	[ "$stderr" = err ]
}

@test "output keeps its order within a stream and across streams over time" {
	run -0 ctl exec -- seq 1 20000
	[ "$output" = "$(seq 1 20000)" ]
	# The pauses order the writes in time (across two pipes nothing else
	# does); 0.5 s so that a loaded host's scheduling cannot swap them.
	run -0 ctl exec -E -- sh -c 'echo one; sleep 0.5; echo two >&2; sleep 0.5; echo three'
	[ "${lines[0]}" = "stdout one" ]
	[ "${lines[1]}" = "stderr two" ]
	[ "${lines[2]}" = "stdout three" ]
	[[ "${lines[3]}" == "exit status=0 "* ]]
}

@test "stdin streams in and EOF closes it" {
	run -0 bash -c "printf 'abc\ndef\n' | timeout 20 '$CTL' -s '$SOCK' exec -i -- cat"
	[ "$output" = "$(printf 'abc\ndef')" ]
	head -c 3000000 /dev/urandom >"$D/in"
	want="$(sha256sum <"$D/in" | cut -d' ' -f1)"
	run -0 bash -c "timeout 30 '$CTL' -s '$SOCK' exec -i -- sha256sum <'$D/in'"
	[ "${output%% *}" = "$want" ]
}

@test "stdin by pid from another connection; output read later by attach" {
	pid="$(ctl exec -d -i -- sh -c 'read a; echo "got $a"; read b; echo "then $b"; cat >/dev/null; echo eof')"
	[ -n "$pid" ]
	run -0 bash -c "echo first | timeout 10 '$CTL' -s '$SOCK' stdin $pid"
	run -0 bash -c "echo second | timeout 10 '$CTL' -s '$SOCK' stdin $pid"
	run -0 ctl closestdin "$pid"
	run -0 ctl attach "$pid"
	[ "${lines[0]}" = "got first" ]
	[ "${lines[1]}" = "then second" ]
	[ "${lines[2]}" = eof ]
	# A process without stdin says so.
	pid="$(ctl exec -d -- sleep 5)"
	run -1 ctl closestdin "$pid"
	[[ "$output" == *"conflict"* ]]
}

@test "a signal reaches the whole process group" {
	pid="$(ctl exec -d -- sh -c 'sleep 1000 & sleep 1000 & echo up; wait')"
	for i in $(seq 100); do
		[ "$(ctl exec -- sh -c 'ps -eo comm | grep -c "^sleep"')" = 2 ] && break
		sleep 0.1
	done
	run -0 ctl exec -- sh -c 'ps -eo comm | grep -c "^sleep"'
	[ "$output" = 2 ]
	run -0 ctl signal "$pid" 15
	run -143 ctl attach "$pid"
	# The sleeps got the signal too; wait (10 s at most) until they are reaped.
	for i in $(seq 100); do
		ctl exec -- sh -c 'ps -eo comm | grep -q "^sleep"' || break
		sleep 0.1
	done
	run -1 ctl exec -- sh -c 'ps -eo comm | grep "^sleep"'
	# Once it has ended, signalling it is refused (the pid may be reused).
	run -1 ctl signal "$pid" 15
	[[ "$output" == *"not_found"* ]]
}

@test "a timeout sends SIGTERM, then SIGKILL after the grace, to the whole group" {
	start=$(date +%s%N)
	run -124 ctl exec -T 300 -g 300 -- sh -c 'trap "" TERM; sleep 1000 & sleep 1000; echo never'
	ms=$((($(date +%s%N) - start) / 1000000))
	# The point: SIGKILL after the grace, not the end of `sleep 1000`;
	# 600 ms of timeout and grace, 10 s for a loaded host.
	[ "$ms" -lt 10000 ]
	[[ "$output" != *never* ]]
	run -1 ctl exec -- sh -c 'ps -eo comm | grep "^sleep"'
	# A command that ends on SIGTERM is reported timed out too.
	run -124 ctl exec -T 200 -- sleep 1000
}

@test "exec errors: not found, bad working directory, unconfigured sandbox" {
	run -127 ctl exec -- /no/such/command
	run -1 ctl exec -c /no/such/dir -- true
	[[ "$output" == *"invalid"*"working directory"* ]]
	run -1 ctl exec -c relative -- true
	[[ "$output" == *"invalid"* ]]
	# A second sandbox that was never configured refuses processes.
	timeout 20 "$CTL" launch "$D/b.sock" "$WS" >"$D/b.mon"
	run -1 timeout 10 "$CTL" -s "$D/b.sock" exec -- true
	[[ "$output" == *"conflict"*"not configured"* ]]
	timeout 10 "$CTL" -s "$D/b.sock" shutdown
}

@test "the configuration is set once: the same again is fine, a different one is refused" {
	run -0 configure
	run -1 configure -r /tmp
	[[ "$output" == *"conflict"* ]]
}

@test "processes outlive their session; ps lists them; output is retained" {
	pid="$(ctl exec -d -- sh -c 'for i in 1 2 3; do echo line$i; done; touch /workspace/written; sleep 1000')"
	run -0 ctl ps
	[[ "$output" == *"$pid running sh -c"* ]]
	# All three lines are written before anyone attaches.
	for i in $(seq 100); do
		[ -e "$WS/written" ] && break
		sleep 0.1
	done
	[ -e "$WS/written" ]
	# attach replays what was written while nobody listened, then follows.
	ctl attach -E "$pid" >"$D/attach" &
	apid=$!
	for i in $(seq 50); do grep -q line3 "$D/attach" && break; sleep 0.1; done
	grep -q '^stdout line1' "$D/attach"
	run -0 ctl signal "$pid" 9
	wait "$apid" || true
	grep -q '^exit status=9 ' "$D/attach"
	run -0 ctl ps
	[[ "$output" == *"$pid exited code=137"* ]]
	# Retained output of a finished process, again.
	run -137 ctl attach "$pid"
	[ "${lines[0]}" = line1 ]
}

@test "retained output is the last 1 MiB per stream" {
	pid="$(ctl exec -d -- sh -c 'seq 1 400000')"
	for i in $(seq 100); do ctl ps | grep -q "^$pid exited" && break; sleep 0.1; done
	run -0 ctl attach "$pid"
	bytes=$(printf '%s\n' "$output" | wc -c)
	[ "$bytes" -le $((1024 * 1024 + 8)) ]
	[ "$bytes" -ge $((1024 * 1024 - 8)) ]
	[ "${lines[-1]}" = 400000 ]
}

@test "finished processes are kept until 64 newer ones finished" {
	first="$(ctl exec -d -- true)"
	for i in $(seq 50); do ctl ps | grep -q "^$first exited" && break; sleep 0.1; done
	for i in $(seq 64); do ctl exec -- true; done
	run -0 ctl ps
	[ "$(printf '%s\n' "$output" | grep -c exited)" -eq 64 ]
	run -1 ctl attach "$first"
	[[ "$output" == *"not_found"* ]]
}

@test "processes get every confinement layer: no capabilities, no_new_privs, seccomp" {
	run -0 ctl exec -- sh -c 'grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status'
	[[ "$output" == *"CapEff:	0000000000000000"* ]]
	[[ "$output" == *"CapPrm:	0000000000000000"* ]]
	[[ "$output" == *"CapBnd:	0000000000000000"* ]]
	[[ "$output" == *"NoNewPrivs:	1"* ]]
	[[ "$output" == *"Seccomp:	2"* ]]
	# Landlock: with /workspace the only read-write path, /tmp (a writable
	# tmpfs) refuses writes.
	timeout 20 "$CTL" launch "$D/b.sock" "$WS" >"$D/b.mon"
	timeout 10 "$CTL" -s "$D/b.sock" configure -w /workspace
	run -0 timeout 10 "$CTL" -s "$D/b.sock" exec -- sh -c 'touch /workspace/ok && ! touch /tmp/nope 2>/dev/null && echo walled'
	timeout 10 "$CTL" -s "$D/b.sock" shutdown
	[ "$output" = walled ]
	[ -f "$WS/ok" ]
	# The door is not reachable from inside: no fd beyond 0, 1, 2.
	run -0 ctl exec -- sh -c 'ls /proc/self/fd | sort -n | tr "\n" " "'
	[[ "$output" == "0 1 2 "* ]]
	[ "$(echo $output | wc -w)" -le 4 ]
}

@test "a process cannot kill or trace the agent; the agent keeps serving" {
	run ctl exec -- sh -c 'kill -9 1; kill -TERM 1; echo tried'
	[[ "$output" == *tried* ]]
	run -0 ctl exec -- sh -c 'cat /proc/1/environ 2>&1 | head -c 80; echo'
	[[ "$output" == *"denied"* || "$output" == *"ermission"* || -z "${output//[[:space:]]/}" ]]
	run -0 ctl ping
}

@test "a pty: the command sees a terminal of the given size; resize" {
	run -0 ctl exec -t -- sh -c 'tty; stty size'
	[[ "${lines[0]}" == /dev/pts/* ]]
	[[ "${lines[1]}" == "24 80"* ]]
	# The command waits (10 s at most) for its size to change, then prints it.
	pid="$(ctl exec -d -t -- sh -c 'for i in $(seq 100); do s="$(stty size)"; [ "$s" != "24 80" ] && break; sleep 0.1; done; echo "$s"')"
	run -0 ctl resize "$pid" 50 132
	run -0 ctl attach "$pid"
	[[ "$output" == *"50 132"* ]]
	run -1 ctl resize "$(ctl exec -d -- sleep 5)" 10 10
	[[ "$output" == *"conflict"* ]]
}

@test "100 MiB of output to a slow reader: the agent's memory stays bounded" {
	[ -n "$AGENT_PID" ]
	before=$(rss_kb "$AGENT_PID")
	# 25 MB/s: about 4 s, during which the process blocks on its pipe.
	ctl exec -S 25000000 -- head -c 104857600 /dev/zero | wc -c >"$D/count" &
	reader=$!
	max=0
	for i in $(seq 30); do
		sleep 0.2
		r=$(rss_kb "$AGENT_PID")
		[ "$r" -gt "$max" ] && max=$r
	done
	wait "$reader"
	[ "$(cat "$D/count")" -eq 104857600 ]
	echo "agent VmRSS before $before kB, max during $max kB, VmHWM $(hwm_kb "$AGENT_PID") kB" >&3
	[ "$max" -lt 16384 ]
	[ "$(hwm_kb "$AGENT_PID")" -lt 16384 ]
}

@test "SHUTDOWN ends every process and the sandbox" {
	ctl exec -d -- sh -c 'trap "" TERM; sleep 1000' >/dev/null
	ctl exec -d -- sleep 1000 >/dev/null
	run -0 ctl shutdown 300
	for i in $(seq 150); do kill -0 "$MON" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$MON" 2>/dev/null
	[ ! -S "$SOCK" ]
}
