#!/usr/bin/env bats
# The E2B-compatible API (docs/e2b.md) on the native backend: the
# unmodified `e2b` SDK, 2.45.0 and 2.51.0 (their routes differ), against
# one daemon; then a daemon SIGKILLed and restarted under the SDK.

load e2b-common.bash

setup_file() {
	e2b_setup_file
}

teardown_file() {
	e2b_teardown_file
}

setup() {
	e2b_need
}

@test "e2b: commands and pty (streams, exit codes, background, kill, stdin, timeoutMs, envs, cwd)" {
	run e2b_node commands
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b: files (text, 64 MiB binary, list, exists, getInfo, makeDir, rename, remove)" {
	run e2b_node files
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b: watchDir over inotify (every event type, recursive or not, renames, bounds)" {
	run e2b_node watch
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b: network (allowOut CIDR reached, others refused, no internet access, denyOut CIDRs refused)" {
	command -v curl >/dev/null || skip "curl is missing"
	run e2b_node network
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b: lifecycle (connect, getInfo, metadata list, setTimeout, expiry, kill, isolation)" {
	run e2b_node lifecycle
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b: keys, tokens, signatures, previews and bad Connect input refused" {
	run e2b_node security
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b: pause, state paused, connect resumes (201) and processes carry on" {
	e2b_node pause
}

@test "e2b: a client that stops reading blocks the command; the daemon's memory stays bounded" {
	run env E2B_PKG=e2b-2-51 DAEMON_PID="$DAEMON_PID" timeout 120 node "$ROOT_DIR/tests/e2b/flow.js"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^done '
}

@test "e2b: sandboxes are daemon sandboxes, labelled; tokens stay out of the REST API and state.json" {
	id="$(curl -sS --max-time 30 -H "X-API-KEY: $E2B_API_KEY" -H 'Content-Type: application/json' \
		-d '{"templateID":"base","metadata":{"who":"bats"}}' "$E2B_API_URL/sandboxes" | jq -er .sandboxID)"
	tok="$(curl -sS --max-time 30 -X POST -H "X-API-KEY: $E2B_API_KEY" -d '{}' \
		"$E2B_API_URL/sandboxes/$id/connect" | jq -er .envdAccessToken)"
	[ "${#tok}" -eq 64 ]
	api "/v1/sandboxes" | jq -e --arg id "$id" '.sandboxes[] | select(.id == $id) | .labels["e2b.template"] == "base" and .labels.who == "bats"'
	! api "/v1/sandboxes/$id" | grep -q "$tok"
	! api "/v1/sandboxes" | grep -q "$tok"
	! grep -q "$tok" "$STATE/sandboxes/$id/state.json"
	[ "$(stat -c %a "$STATE/sandboxes/$id/e2b.json")" = 600 ]
	# GET /sandboxes/{id} (SandboxDetail) does not carry it either.
	! curl -sS --max-time 30 -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$id" | grep -q "$tok"
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X DELETE -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$id")" = 204 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X DELETE -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$id")" = 404 ]
	# A sandbox made through the REST API is not an E2B one.
	rid="$(create '{}')"
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$rid")" = 404 ]
	api -X DELETE "/v1/sandboxes/$rid?force=1"
}

@test "e2b: base's home /home/user is its workspace bound read-write; a template's own workdir stays" {
	id="$(curl -sS --max-time 30 -H "X-API-KEY: $E2B_API_KEY" -H 'Content-Type: application/json' \
		-d '{"templateID":"base"}' "$E2B_API_URL/sandboxes" | jq -er .sandboxID)"
	api "/v1/sandboxes/$id" | jq -e '.spec as $s | $s.workdir == "/home/user"
		and ([$s.mounts[] | select(.destination == "/home/user" and .type == "rw" and .source == $s.workspace)] | length) == 1'
	# The daemon's chown of the workspace is the home's owner too.
	[ "$(stat -c %u:%g "$STATE/sandboxes/$id/workspace")" = 1000:1000 ]
	# A fork binds its own workspace at /home/user, not its parent's.
	[ "$(api_status "/v1/sandboxes/$id/fork" -d '{"count": 1}')" = 201 ]
	f="$(jq -r '.sandboxes[0].id' "$D/body")"
	api "/v1/sandboxes/$f" | jq -e --arg p "$STATE/sandboxes/$id" '.spec as $s | $s.workdir == "/home/user"
		and ([$s.mounts[] | select(.destination == "/home/user")] | length) == 1
		and ([$s.mounts[] | select(.destination == "/home/user" and .source == $s.workspace)] | length) == 1
		and ($s.workspace | startswith($p) | not)'
	api -X DELETE "/v1/sandboxes/$f?force=1"
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X DELETE -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$id")" = 204 ]
	id="$(curl -sS --max-time 30 -H "X-API-KEY: $E2B_API_KEY" -H 'Content-Type: application/json' \
		-d '{"templateID":"ownwd"}' "$E2B_API_URL/sandboxes" | jq -er .sandboxID)"
	api "/v1/sandboxes/$id" | jq -e '.spec.workdir == "/workspace" and ([.spec.mounts[]? | select(.destination == "/home/user")] | length) == 0'
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X DELETE -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$id")" = 204 ]
	# The REST API's sandboxes keep /workspace and get no such bind.
	rid="$(create '{}')"
	api "/v1/sandboxes/$rid" | jq -e '.spec.workdir == "/workspace" and ([.spec.mounts[]? | select(.destination == "/home/user")] | length) == 0'
	api -X DELETE "/v1/sandboxes/$rid?force=1"
	[ "$(api_status /v1/sandboxes -d '{"workspace_mounts": ["home/user"]}')" = 400 ]
	grep -q 'must be an absolute path' "$D/body"
	[ "$(api_status /v1/sandboxes -d '{"workspace": null, "workspace_mounts": ["/home/user"]}')" = 400 ]
	grep -q 'needs a workspace' "$D/body"
}

@test "e2b: a daemon SIGKILLed and restarted: the SDK keeps using its sandboxes" {
	for v in $E2B_VERSIONS; do
		E2B_PKG=$v E2B_STATE="$D/restart-$v.json" timeout 60 node "$ROOT_DIR/tests/e2b/restart.js" make
	done
	daemon_kill9
	daemon_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-api-key-file "$D/key" \
		--e2b-template "gvisor=$D/gvisor.json"
	echo "$DAEMON_PID" >"$D/daemon.pid"
	for v in $E2B_VERSIONS; do
		run env E2B_PKG=$v E2B_STATE="$D/restart-$v.json" timeout 60 node "$ROOT_DIR/tests/e2b/restart.js" use
		echo "$output"
		[ "$status" -eq 0 ]
		echo "$output" | grep -q '^done '
	done
}
