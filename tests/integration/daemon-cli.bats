#!/usr/bin/env bats
# The CLI client against a real daemon: create, exec (streams, status,
# stdin, pty, detached), cp both ways, ls, ps, inspect, rm.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
}

teardown() {
	daemon_teardown
}

@test "no daemon: one clear line saying how to start it" {
	run env AGENTBOX_HOST="$D/none.sock" "$AGENTBOX" ls
	[ "$status" -eq 125 ]
	[ "${#lines[@]}" -eq 1 ]
	echo "$output" | grep -q 'no agentbox daemon at .*agentbox serve'
	run "$AGENTBOX" ls --host "$D/none.sock"
	[ "$status" -eq 125 ]
}

@test "create with run options prints the id; inspect shows them" {
	run ab create --workspace "$WS" --memory 256m --env FOO=bar --label team=t1 --ttl 10m
	[ "$status" -eq 0 ]
	id="$output"
	[[ "$id" =~ ^[0-9a-f]{16}$ ]]
	run ab inspect "$id"
	[ "$(echo "$output" | jq -r .spec.workspace)" = "$WS" ]
	[ "$(echo "$output" | jq -r .spec.limits.memory)" = 268435456 ]
	[ "$(echo "$output" | jq -r .labels.team)" = t1 ]
	run ab exec "$id" -- sh -c 'echo $FOO; touch /workspace/made'
	[ "$output" = bar ]
	[ -e "$WS/made" ]
	run ab create --bogus-option
	[ "$status" -eq 125 ]
	run ab create -- echo hi
	[ "$status" -eq 125 ]
}

@test "exec streams stdout and stderr and exits with the command's status" {
	id="$(ab create --no-workspace)"
	run --separate-stderr ab exec "$id" -- sh -c 'echo out; echo err >&2; exit 42'
	[ "$status" -eq 42 ]
	[ "$output" = out ]
	[ "$stderr" = err ]
	run ab exec -e X=1 -w /tmp "$id" -- sh -c 'echo $X $(pwd)'
	[ "$output" = "1 /tmp" ]
	run ab exec --timeout 1s "$id" -- sleep 100
	[ "$status" -eq 124 ]
	run ab exec "$id" -- sh -c 'kill -KILL $$'
	[ "$status" -eq 137 ]
	run -127 ab exec "$id" -- /no/such/command
	[ "$status" -eq 127 ]
}

@test "exec -i passes stdin; exec -t gives a pty" {
	id="$(ab create --no-workspace)"
	run bash -c "printf 'one\ntwo\n' | timeout 20 '$AGENTBOX' exec -i '$id' -- sh -c 'wc -l; exit 3'"
	[ "$status" -eq 3 ]
	[ "$(echo "$output" | tr -d ' ')" = 2 ]
	run timeout 20 script -qec "'$AGENTBOX' exec -t '$id' -- sh -c 'tty; stty size'" /dev/null </dev/null
	echo "$output"
	echo "$output" | grep -q '^/dev/pts/'
}

@test "exec -d prints the pid; ps lists it; rm refuses without -f" {
	id="$(ab create --no-workspace)"
	run ab exec -d "$id" -- sleep 60
	[ "$status" -eq 0 ]
	pid="$output"
	[[ "$pid" =~ ^[0-9]+$ ]]
	run ab ps "$id"
	echo "$output" | grep -E "^$pid +running +sleep 60"
	run ab rm "$id"
	[ "$status" -ne 0 ]
	run ab rm -f "$id"
	[ "$status" -eq 0 ]
	[ "$output" = "$id" ]
	run ab ls --json
	[ "$(echo "$output" | jq length)" = 0 ]
	assert_nothing_left "$SNAPSHOT"
}

@test "cp copies files in and out" {
	id="$(ab create --workspace "$WS")"
	head -c 3000000 /dev/urandom >"$D/src.bin"
	run ab cp "$D/src.bin" "$id:/workspace/"
	[ "$status" -eq 0 ]
	cmp "$D/src.bin" "$WS/src.bin"
	run ab cp "$id:/workspace/src.bin" "$D/back.bin"
	[ "$status" -eq 0 ]
	cmp "$D/src.bin" "$D/back.bin"
	echo piped | ab cp - "$id:/workspace/p.txt"
	[ "$(ab cp "$id:/workspace/p.txt" -)" = piped ]
	# Reads see what the sandbox sees (its /etc/passwd, as cat prints it
	# inside); writes go only to its writable file roots.
	ab cp "$id:/etc/passwd" "$D/passwd"
	[ "$(cat "$D/passwd")" = "$(ab exec "$id" -- cat /etc/passwd)" ]
	run ab cp "$D/src.bin" "$id:/etc/x"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q outside
	run ab cp "$id:/etc/shadow" "$D/x"
	[ "$status" -ne 0 ]
	[ ! -s "$D/x" ]
	run ab cp "$D/src.bin" "$D/other"
	[ "$status" -ne 0 ]
}

@test "ls shows state and labels" {
	id="$(ab create --no-workspace --label app=web)"
	run ab ls
	echo "$output" | grep -E "^$id +running .*app=web"
	run ab ls --json
	[ "$(echo "$output" | jq -r '.[0].labels.app')" = web ]
}
