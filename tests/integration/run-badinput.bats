#!/usr/bin/env bats
# agentbox run: bad input gives exit 125, exactly one clear line on stderr,
# nothing on stdout, the command never runs, and nothing is left behind.

load run-common

setup() {
	ab_setup
	BEFORE="$BATS_TEST_TMPDIR/before"
	host_snapshot >"$BEFORE"
	export TMPDIR="$BATS_TEST_TMPDIR/tmpdir"
	mkdir -p "$TMPDIR"
	RAN="$WS/ran-$MARK"
	# What each bad invocation would run if agentbox let it through.
	RUN_CMD=(-- sh -c "touch /workspace/ran-$MARK")
}

teardown() {
	ab_teardown
}

# bad WORD ARGS...: agentbox run ARGS must fail with 125 and one stderr line
# that names WORD (the offending value; "" to skip that check).
bad() {
	local word="$1"
	shift
	run -125 --separate-stderr "$AGENTBOX" run "$@" </dev/null
	echo "stderr: $stderr"
	echo "stdout: $output"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ -n "${stderr_lines[0]}" ]
	[ "${#stderr_lines[0]}" -le 300 ]
	if [ -n "$word" ]; then
		[[ "${stderr_lines[0]}" == *"$word"* ]]
	fi
	[ ! -e "$RAN" ]
	assert_nothing_left "$BEFORE"
	[ -z "$(ls -A "$TMPDIR")" ]
}


@test "unknown flag" {
	bad --bogus-flag --workspace "$WS" --bogus-flag "${RUN_CMD[@]}"
}

@test "--memory lots" {
	bad lots --workspace "$WS" --memory lots "${RUN_CMD[@]}"
}

@test "other malformed limits: --pids, --cpus, --timeout, --kill-grace, --nofile" {
	bad many --workspace "$WS" --pids many "${RUN_CMD[@]}"
	bad fast --workspace "$WS" --cpus fast "${RUN_CMD[@]}"
	bad forever --workspace "$WS" --timeout forever "${RUN_CMD[@]}"
	bad soon --workspace "$WS" --kill-grace soon "${RUN_CMD[@]}"
	bad -5 --workspace "$WS" --nofile -5 "${RUN_CMD[@]}"
	bad 0x --workspace "$WS" --memory 0x "${RUN_CMD[@]}"
}

@test "an option missing its value" {
	bad --memory --workspace "$WS" --memory
	# It is a known option: "unknown option" would send the user astray.
	[[ "$stderr" != *unknown* ]]
}

@test "missing CMD" {
	bad "" --workspace "$WS"
	bad "" --workspace "$WS" --
}

@test "missing rootfs" {
	bad "/nonexistent-$MARK" --workspace "$WS" --rootfs "/nonexistent-$MARK" "${RUN_CMD[@]}"
}

@test "a rootfs that is a file" {
	touch "$BATS_TEST_TMPDIR/afile"
	bad "$BATS_TEST_TMPDIR/afile" --workspace "$WS" --rootfs "$BATS_TEST_TMPDIR/afile" "${RUN_CMD[@]}"
}

@test "a workspace that is a file" {
	touch "$BATS_TEST_TMPDIR/afile"
	bad "$BATS_TEST_TMPDIR/afile" --workspace "$BATS_TEST_TMPDIR/afile" -- true
}

@test "a workspace that does not exist" {
	bad "/nonexistent-$MARK" --workspace "/nonexistent-$MARK" -- true
	[ ! -e "/nonexistent-$MARK" ]
}

@test "--ro and --rw with a missing source; relative destinations" {
	bad "/nonexistent-$MARK" --workspace "$WS" --ro "/nonexistent-$MARK:/x" "${RUN_CMD[@]}"
	bad "/nonexistent-$MARK" --workspace "$WS" --rw "/nonexistent-$MARK:/x" "${RUN_CMD[@]}"
	bad relative --workspace "$WS" --ro "$BATS_TEST_TMPDIR:relative" "${RUN_CMD[@]}"
	bad relative --workspace "$WS" --tmpfs relative "${RUN_CMD[@]}"
	bad "" --workspace "$WS" --tmpfs /x:huge "${RUN_CMD[@]}"
}

@test "two mounts on the same destination" {
	bad /dup --workspace "$WS" --tmpfs /dup --tmpfs /dup "${RUN_CMD[@]}"
}

@test "--env-file that does not exist" {
	bad "/nonexistent-$MARK" --workspace "$WS" --env-file "/nonexistent-$MARK" "${RUN_CMD[@]}"
}

@test "malformed -u, --hostname, -w, --backend, --network" {
	bad abc --workspace "$WS" -u abc "${RUN_CMD[@]}"
	bad 1:x --workspace "$WS" -u 1:x "${RUN_CMD[@]}"
	bad "" --workspace "$WS" --hostname "$(printf 'h%.0s' {1..100})" "${RUN_CMD[@]}"
	bad "" --workspace "$WS" --hostname 'bad/name' "${RUN_CMD[@]}"
	bad relative --workspace "$WS" -w relative "${RUN_CMD[@]}"
	bad nosuch --workspace "$WS" --backend nosuch "${RUN_CMD[@]}"
	bad host --workspace "$WS" --network host "${RUN_CMD[@]}"
}

# The issue names "an unwritable state dir", but `agentbox run` has no state
# directory (the option table lists none): the one place run writes on the
# host is --json-result, so that is what is tested.  A serious user expects
# this checked before the command runs, not after its side effects.
@test "--json-result into a directory that does not exist" {
	bad "/nonexistent-$MARK" --workspace "$WS" --json-result "/nonexistent-$MARK/r.json" "${RUN_CMD[@]}"
}

@test "--json-result into a read-only directory" {
	local dir="$BATS_TEST_TMPDIR/rodir"
	mkdir "$dir"
	# A read-only bind in a private mount namespace this test creates.
	run -0 --separate-stderr unshare -m --propagation private sh -c '
		mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" || exit 99
		"$0" run --workspace "$2" --json-result "$1/r.json" -- sh -c "touch /workspace/ran-$3" </dev/null
		echo "rc=$?"' "$AGENTBOX" "$dir" "$WS" "$MARK"
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$output" = rc=125 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ ! -e "$RAN" ]
}
