#!/usr/bin/env bats
# Sandboxes outlive the daemon: SIGKILL it, start it again, and every
# sandbox (with its running processes and files) is still there and
# usable; one whose agent died meanwhile is reported dead and cleaned up.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
}

teardown() {
	daemon_teardown
}

@test "daemon SIGKILLed and restarted: sandboxes, processes and files are all still there" {
	a="$(create '{"labels": {"n": "a"}}')"
	b="$(create '{"labels": {"n": "b"}}')"
	pa="$(api "/v1/sandboxes/$a/exec" -d '{"cmd": "trap \"exit 9\" TERM; while :; do sleep 0.1; done", "detach": true}' | jq .pid)"
	pb="$(api "/v1/sandboxes/$b/exec" -d '{"cmd": ["sleep", "300"], "detach": true}' | jq .pid)"
	# A stream in flight when the daemon dies: it finishes only once the
	# next daemon has written /workspace/go (20 s at most).
	api "/v1/sandboxes/$b/exec" -N -d '{"cmd": "echo started; for i in $(seq 200); do [ -e /workspace/go ] && break; sleep 0.1; done; echo after-restart > /workspace/late"}' >"$D/ev" &
	BG_PIDS+=($!)
	wait_for "$D/ev" started
	printf 'kept' | api "/v1/sandboxes/$a/files?path=/workspace/f" -T - >/dev/null
	mon_a="$(api "/v1/sandboxes/$a" | jq .monitor_pid)"

	daemon_kill9
	kill -0 "$mon_a"
	daemon_start
	printf go | api "/v1/sandboxes/$b/files?path=/workspace/go" -T - >/dev/null

	run api /v1/sandboxes
	[ "$(echo "$output" | jq -r '[.sandboxes[] | .state] | join(",")')" = running,running ]
	[ "$(api "/v1/sandboxes/$a" | jq .monitor_pid)" = "$mon_a" ]
	[ "$(api "/v1/sandboxes/$a/processes" | jq ".processes[] | select(.pid == $pa) | .running")" = true ]
	[ "$(api "/v1/sandboxes/$b/processes" | jq ".processes[] | select(.pid == $pb) | .running")" = true ]
	[ "$(api "/v1/sandboxes/$a/files?path=/workspace/f")" = kept ]
	run exec_wait "$a" '["echo", "new exec"]'
	[ "$(echo "$output" | jq -r .stdout)" = "new exec" ]
	# The process whose stream was cut finished its work in the sandbox.
	for ((i = 0; i < 150; i++)); do
		[ "$(api_status "/v1/sandboxes/$b/files?path=/workspace/late")" = 200 ] && break
		sleep 0.1
	done
	[ "$(cat "$D/body")" = after-restart ]
	# Old processes are reachable: signal and read their output.
	[ "$(api_status "/v1/sandboxes/$a/processes/$pa/signal" -d '{"signal": "TERM"}')" = 204 ]
	run api "/v1/sandboxes/$a/processes/$pa/output"
	[ "$(echo "$output" | tail -1 | jq .exit_code)" = 9 ]
	# And removal leaves nothing.
	[ "$(api_status "/v1/sandboxes/$a?force=1" -X DELETE)" = 204 ]
	[ "$(api_status "/v1/sandboxes/$b?force=1" -X DELETE)" = 204 ]
	monitor_gone "$mon_a"
	[ -z "$(ls "$STATE/sandboxes")" ]
	assert_nothing_left "$SNAPSHOT"
}

@test "an agent that died while the daemon was down: reported dead and cleaned up" {
	a="$(create)"
	b="$(create)"
	apid="$(agent_pid "$a")"
	daemon_kill9
	kill -KILL "$apid"
	wait_until 100 pid_gone "$apid"
	daemon_start
	[ "$(api "/v1/sandboxes/$a" | jq -r .state)" = dead ]
	[ "$(api "/v1/sandboxes/$b" | jq -r .state)" = running ]
	[ ! -e "$STATE/sandboxes/$a/agent.sock" ]
	[ "$(api_status "/v1/sandboxes/$a" -X DELETE)" = 204 ]
	[ ! -e "$STATE/sandboxes/$a" ]
}

@test "a second daemon on the same state directory is refused" {
	run "$AGENTBOX" serve --socket "$D/other/a.sock" --state-dir "$STATE"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q 'another agentbox serve'
	run "$AGENTBOX" serve --socket "$SOCK" --state-dir "$D/state2"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q 'another agentbox serve is listening'
}
