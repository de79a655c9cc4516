#!/usr/bin/env bats
# The E2B SDK tests on gVisor (template "gvisor": {"backend": "gvisor"}):
# the commands and files scripts with both pinned SDKs (the control-plane
# and refusal scripts do not depend on the backend and run in e2b.bats).

load e2b-common.bash

setup_file() {
	e2b_setup_file
}

teardown_file() {
	e2b_teardown_file
}

setup() {
	e2b_need
	command -v runsc >/dev/null || skip "runsc is missing"
	export E2B_TEMPLATE=gvisor
}

@test "e2b on gVisor: commands and pty" {
	run e2b_node commands
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b on gVisor: files" {
	run e2b_node files
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}

@test "e2b on gVisor: watchDir (the bounds that take thousands of files run in e2b.bats)" {
	E2B_WATCH_LIGHT=1
	export E2B_WATCH_LIGHT
	run e2b_node watch
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^done ')" -eq 2 ]
}
