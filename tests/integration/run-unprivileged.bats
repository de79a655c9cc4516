#!/usr/bin/env bats
# agentbox run by an unprivileged user on a host whose cgroups it may not
# use (this one: the v1 memory and pids hierarchies belong to root): the
# default limits are rlimits then, and they hold against a real attempt;
# --json-result says which mechanism holds each limit.  Explicit limits
# still need cgroups (an rlimit is a weaker wall than the user asked for).

load run-common

setup() {
	ab_setup
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
	# nobody must reach the binaries and a TMPDIR of its own: copies in a
	# directory of this test, its ancestors up to the run's own made
	# traversable (they belong to this bats run).
	U="$BATS_TEST_TMPDIR/unpriv"
	mkdir -p "$U/tmp"
	cp "$AGENTBOX" "$U/agentbox"
	cp "$(dirname "$AGENTBOX")/agentbox-agent" "$U/agentbox-agent"
	cp "$(dirname "$AGENTBOX")/agentbox-full" "$U/agentbox-full"
	chmod 0755 "$U" "$U/agentbox" "$U/agentbox-agent" "$U/agentbox-full"
	chmod 0777 "$U/tmp"
	local d="$BATS_TEST_TMPDIR"
	while [ "$d" != / ] && [ "$d" != "$(dirname "$BATS_RUN_TMPDIR")" ]; do
		chmod o+x "$d"
		d="$(dirname "$d")"
	done
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$U/agentbox" ||
		skip "nobody cannot reach $U (an ancestor above the bats run is closed)"
	if setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'mkdir "$(sed -n "s/^[0-9]*:memory:/\/sys\/fs\/cgroup\/memory/p" /proc/self/cgroup)/agentbox-probe-$$" 2>/dev/null'; then
		skip "this host delegates its memory cgroup to nobody"
	fi
}

teardown() {
	ab_teardown
}

# as_nobody ARGS: agentbox run as uid 65534, no workspace.
as_nobody() {
	(cd "$U/tmp" && TMPDIR="$U/tmp" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$U/agentbox" run --no-workspace --backend native "$@")
}

@test "unprivileged without a cgroup: default limits are rlimits, and --json-result says so" {
	run as_nobody --json-result "$U/tmp/r.json" -- sh -c 'grep -E "^Max (processes|data size)" /proc/self/limits'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"limits are rlimits instead"* ]]
	[[ "$output" =~ Max\ data\ size\ +2147483648\ +2147483648 ]]
	[[ "$output" =~ Max\ processes\ +512\ +512 ]]
	[ "$(jq -c .limits "$U/tmp/r.json")" = '{"memory":"rlimit","pids":"rlimit","cpu":"off"}' ]
	# As root the same defaults are cgroups.
	"$AGENTBOX" run --no-workspace --json-result "$BATS_TEST_TMPDIR/root.json" -- true
	[ "$(jq -c .limits "$BATS_TEST_TMPDIR/root.json")" = '{"memory":"cgroup","pids":"cgroup","cpu":"off"}' ]
}

@test "unprivileged without a cgroup: a fork flood stops at the pids default, a huge allocation fails" {
	# 600 children against the default 512 (the agent counts too); each
	# child waits for its parent to go, so the flood ends with the test.
	run as_nobody --timeout 60s -- python3 -c '
import os, sys, time
n = 0
try:
    for _ in range(600):
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
except OSError as e:
    print("fork refused:", e.strerror)
print("forked", n)
try:
    bytearray(3 << 30)
    print("allocated 3 GiB")
except MemoryError:
    print("MemoryError")
sys.stdout.flush(); os._exit(0)'
	echo "$output"
	[[ "$output" =~ forked\ ([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -lt 512 ]
	[[ "$output" == *"fork refused: Resource temporarily unavailable"* ]]
	[[ "$output" == *MemoryError* ]]
}

@test "unprivileged: explicit limits still need a cgroup (a clear error, exit 125)" {
	run as_nobody --pids 64 -- true
	echo "$output"
	[ "$status" -eq 125 ]
	[[ "$output" == *"cgroup limits"*"Permission denied"* ]]
}
