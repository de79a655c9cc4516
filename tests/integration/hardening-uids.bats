#!/usr/bin/env bats
# Issue 19 item 2: a host uid range per sandbox (native backend as root;
# gVisor, Docker and the microVM map no sandbox ids onto host ids).  Two
# sandboxes run at once: their processes have host uids from disjoint
# ranges (read from the host's /proc/PID/status), a file one makes where
# no idmap applies (its /tmp) belongs to its own range and the other's
# uid cannot open it for writing, and files both write in a shared --rw
# directory belong to that directory's owner, as before.

load daemon-common.bash

setup() {
	[ "$(id -u)" -eq 0 ] || skip "host uid ranges are taken only by a root agentbox"
	daemon_setup
	SHARED="$BATS_TEST_TMPDIR/shared"
	mkdir -p "$SHARED" "$BATS_TEST_TMPDIR/wa" "$BATS_TEST_TMPDIR/wb"
	chown 1234:1234 "$SHARED"
	cp /bin/sleep "$SHARED/$MARK-a"
	cp /bin/sleep "$SHARED/$MARK-b"
	chmod 0755 "$SHARED/$MARK-a" "$SHARED/$MARK-b"
}

teardown() {
	[ -n "${D:-}" ] && daemon_teardown
	true
}

# host_pid NAME: the host pid of the sandbox process running NAME (5 s).
host_pid() {
	local i p
	for ((i = 0; i < 50; i++)); do
		p="$(pgrep -f "^/shared/$1 " || true)"
		[ -n "$p" ] && break
		sleep 0.1
	done
	echo "$p"
}

uid_of() {
	awk '/^Uid:/ { print $2 }' "/proc/$1/status"
}

@test "native: two sandboxes get disjoint host uid ranges; one's files are not the other's" {
	daemon_start
	a="$(ab create --backend native --workspace "$BATS_TEST_TMPDIR/wa" --rw "$SHARED:/shared")"
	b="$(ab create --backend native --workspace "$BATS_TEST_TMPDIR/wb" --rw "$SHARED:/shared")"
	[ -n "$a" ] && [ -n "$b" ]
	ab exec -d -u 0:0 "$a" -- sh -c "echo secret >/tmp/a; chmod 600 /tmp/a; exec /shared/$MARK-a 1000"
	ab exec -d -u 0:0 "$b" -- sh -c "exec /shared/$MARK-b 1000"
	pa="$(host_pid "$MARK-a")"
	pb="$(host_pid "$MARK-b")"
	[ -n "$pa" ] && [ -n "$pb" ]
	ua="$(uid_of "$pa")"
	ub="$(uid_of "$pb")"
	echo "host uids of root inside: $ua (a) $ub (b)"
	# Both unprivileged host ids, never host root; ranges of 65536 apart.
	[ "$ua" -ge 1610612736 ] && [ "$ub" -ge 1610612736 ]
	[ "$ua" -ne "$ub" ]
	[ $(((ua > ub ? ua - ub : ub - ua) % 65536)) -eq 0 ]
	# The maps say the same: a whole range each, starting at that id.
	[ "$(awk '{ print $2, $3 }' "/proc/$pa/uid_map")" = "$ua 65536" ]
	[ "$(awk '{ print $2, $3 }' "/proc/$pb/uid_map")" = "$ub 65536" ]

	# a's /tmp/a (a tmpfs of a's: no idmap) belongs to a's root on the host.
	f="/proc/$pa/root/tmp/a"
	[ "$(stat -c %u "$f")" = "$ua" ]
	# b's root uid cannot open it for writing: the reopen through
	# /proc/self/fd checks the inode's owner and mode (0600, a's).
	run setpriv --reuid "$ub" --regid "$ub" --clear-groups -- sh -c 'echo x >>/proc/self/fd/3' 3<"$f"
	echo "as b: $status $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	# a's own root uid can: the refusal above is ownership, not the path.
	run setpriv --reuid "$ua" --regid "$ua" --clear-groups -- sh -c 'echo x >>/proc/self/fd/3' 3<"$f"
	echo "as a: $status $output"
	[ "$status" -eq 0 ]

	# Files both write in the shared directory belong to its owner.
	ab exec -u 0:0 "$a" -- sh -c 'echo a >/shared/from-a'
	ab exec -u 0:0 "$b" -- sh -c 'echo b >/shared/from-b'
	[ "$(stat -c %u:%g "$SHARED/from-a")" = 1234:1234 ]
	[ "$(stat -c %u:%g "$SHARED/from-b")" = 1234:1234 ]

	# The ranges are freed with the sandboxes: their locks are not held.
	ab rm -f "$a"
	ab rm -f "$b"
}
