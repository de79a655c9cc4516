#!/usr/bin/env bats
# The agent's file service in a real service-mode sandbox: confined to the
# file roots (here /workspace, the host directory $WS), streamed, atomic.

load agent-common

setup() {
	ag_setup
	configure
}

teardown() {
	ag_teardown
}

@test "put, cat, stat, ls, mkdir -p, mv, rm -r" {
	run -0 bash -c "printf 'hello\n' | timeout 10 '$CTL' -s '$SOCK' put /workspace/a.txt 0600"
	[ "$output" = 6 ]
	[ "$(cat "$WS/a.txt")" = hello ]
	[ "$(stat -c %a "$WS/a.txt")" = 600 ]
	run -0 ctl cat /workspace/a.txt
	[ "$output" = hello ]
	run -0 ctl stat a.txt
	[ "$output" = "a.txt file 6 0600" ]
	run -0 ctl mkdir /workspace/d/e/f
	[ -d "$WS/d/e/f" ]
	run -0 ctl mkdir /workspace/d/e/f
	run -0 ctl mv /workspace/a.txt /workspace/d/e/b.txt
	[ -f "$WS/d/e/b.txt" ] && [ ! -e "$WS/a.txt" ]
	run -0 ctl ls /workspace/d/e
	[[ "$output" == *"b.txt file 6 0600"* ]]
	[[ "$output" == *"f dir "* ]]
	run -0 ctl stat /workspace
	[[ "$output" == "/workspace dir "* ]]
	run -1 ctl rm /workspace/d
	[[ "$output" == *"conflict"* ]]
	run -0 ctl rm -r /workspace/d
	[ ! -e "$WS/d" ]
	# The upload left no temporary file behind.
	[ -z "$(ls -A "$WS")" ]
}

@test "a write replaces the target atomically and a cancelled one changes nothing" {
	echo old >"$WS/t"
	head -c 300000 /dev/zero | tr '\0' x >"$D/new"
	# A reader running during the uploads only ever sees a whole file.
	(for i in $(seq 300); do n=$(wc -c <"$WS/t"); [ "$n" = 4 ] || [ "$n" = 300000 ] || echo "torn: $n"; done) >"$D/reader" 2>&1 &
	reader=$!
	for i in $(seq 20); do ctl put /workspace/t <"$D/new" >/dev/null; done
	wait "$reader"
	[ ! -s "$D/reader" ]
	cmp "$WS/t" "$D/new"
	# An upload whose client dies half-way leaves the target and no temporary file.
	mkfifo "$D/fifo"
	(head -c 100000 /dev/zero; sleep 10) >"$D/fifo" &
	writer=$!
	"$CTL" -s "$SOCK" put /workspace/t <"$D/fifo" &
	client=$!
	# Half-way: the agent has its temporary file (10 s at most).
	for i in $(seq 100); do
		ls -A "$WS" | grep -q agentbox-upload && break
		sleep 0.1
	done
	kill -9 "$client"
	wait "$client" || true
	kill "$writer"
	wait "$writer" || true
	# The agent sees the session end and removes it (10 s at most).
	for i in $(seq 100); do
		ls -A "$WS" | grep -q agentbox-upload || break
		sleep 0.1
	done
	cmp "$WS/t" "$D/new"
	[ -z "$(ls -A "$WS" | grep agentbox-upload)" ]
	# Writing over a directory is refused; the parent must exist.
	mkdir "$WS/dir"
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /workspace/dir"
	[[ "$output" == *"conflict"* ]]
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /workspace/nodir/f"
	[[ "$output" == *"not_found"* ]]
	[ "$(ls -A "$WS" | sort | tr '\n' ' ')" = "dir t " ]
}

@test "1 GiB upload and download stream with bounded memory" {
	[ -n "$AGENT_PID" ]
	start=$(date +%s)
	run -0 bash -c "head -c 1073741824 /dev/zero | timeout 120 '$CTL' -s '$SOCK' put /workspace/big"
	[ "$output" = 1073741824 ]
	[ "$(stat -c %s "$WS/big")" = 1073741824 ]
	run -0 bash -c "timeout 120 '$CTL' -s '$SOCK' cat /workspace/big | wc -c"
	[ "$output" = 1073741824 ]
	# Content, not just size: a random 64 MiB file both ways.
	head -c 67108864 /dev/urandom >"$D/r"
	want="$(sha256sum <"$D/r" | cut -d' ' -f1)"
	run -0 bash -c "timeout 60 '$CTL' -s '$SOCK' put /workspace/r <'$D/r'"
	run -0 bash -c "timeout 60 '$CTL' -s '$SOCK' cat /workspace/r | sha256sum"
	[ "${output%% *}" = "$want" ]
	echo "agent VmHWM $(hwm_kb "$AGENT_PID") kB after $(($(date +%s) - start)) s" >&3
	[ "$(hwm_kb "$AGENT_PID")" -lt 16384 ]
	rm -f "$WS/big" "$WS/r"
}

@test "paths outside the roots are refused: absolute, .., symlinks out, magic links" {
	echo secret >"$D/outside"
	run -1 ctl cat /etc/passwd
	[[ "$output" == *"denied"*"outside"* ]]
	run -1 ctl cat /workspace/../etc/passwd
	[[ "$output" == *"denied"*".."* ]]
	run -1 ctl cat ../etc/passwd
	[[ "$output" == *"denied"* ]]
	ln -s /etc/passwd "$WS/abs"
	ln -s ../../../../../../etc/passwd "$WS/rel"
	ln -s /proc/self/root/etc/passwd "$WS/magic"
	mkdir "$WS/sub"
	ln -s .. "$WS/sub/up"
	for p in /workspace/abs rel /workspace/magic /workspace/sub/up/../etc/passwd /workspace/sub/up/rel; do
		run -1 ctl cat "$p"
		[[ "$output" == *"denied"* ]]
		[[ "$output" != *"root:"* ]]
	done
	# Writes through a directory symlink that leads out are refused too.
	ln -s ../../../../etc "$WS/etcdir"
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /workspace/etcdir/x"
	[[ "$output" == *"denied"* ]]
	run -1 ctl mkdir /workspace/etcdir/y
	run -1 ctl mv /workspace/rel /workspace/etcdir/z
	run -1 ctl exec -- sh -c 'test -e /etc/x || test -e /etc/y || test -e /etc/z'
	run -1 ctl ls /workspace/sub/up/..
	[[ "$output" == *"denied"* ]]
	run -1 ctl rm -r /workspace
	[[ "$output" == *"denied"*"file root"* ]]
	# A symlink that stays inside is followed.
	echo inside >"$WS/real"
	ln -s real "$WS/ok"
	run -0 ctl cat /workspace/ok
	[ "$output" = inside ]
	# The file itself is a symlink: rm removes the link, not the target;
	# a write replaces the link, not the target.
	run -0 ctl rm /workspace/abs
	[ -f /etc/passwd ]
	run -0 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /workspace/magic"
	[ -f "$WS/magic" ] && [ ! -L "$WS/magic" ]
	run -0 ctl exec -- sh -c 'grep -c "^root:" /etc/passwd'
}

@test "a symlink swapped in while calls run never leads out" {
	mkdir "$WS/real"
	echo inside >"$WS/real/passwd"
	ln -s real "$WS/flip"
	# Flip flip between real (inside) and ../../etc (the sandbox's /etc)
	# as fast as possible while the client reads and writes through it,
	# until killed below (however long the 150 calls take on a loaded
	# host; 100 s only so that it cannot outlive a failed test for long).
	(end=$((SECONDS + 100)); while [ $SECONDS -lt $end ]; do
		ln -sfn ../../../../etc "$WS/flip.new" && mv -T "$WS/flip.new" "$WS/flip"
		ln -sfn real "$WS/flip.new" && mv -T "$WS/flip.new" "$WS/flip"
	done) &
	flipper=$!
	ok=0 denied=0
	for i in $(seq 150); do
		if out="$(ctl cat /workspace/flip/passwd 2>&1)"; then
			[ "$out" = inside ]
			ok=$((ok + 1))
		else
			[[ "$out" == *"denied"* || "$out" == *"not_found"* ]]
			[[ "$out" != *"root:"* ]]
			denied=$((denied + 1))
		fi
		echo x | ctl put /workspace/flip/written >/dev/null 2>&1 || true
	done
	kill "$flipper"
	wait "$flipper" || true
	echo "reads through the flipping link: $ok inside, $denied refused" >&3
	[ $((ok + denied)) -eq 150 ]
	# Nothing was ever written outside the root.
	run -1 ctl exec -- test -e /etc/written
	# A directory swapped for a symlink under rm -r: the link goes, not its target.
	run -0 ctl exec -- sh -c 'mkdir -p /tmp/keep && echo keep >/tmp/keep/f'
	mkdir -p "$WS/tree/a"
	ln -s /tmp/keep "$WS/tree/a/link"
	ln -s ../../../../tmp/keep "$WS/tree/rel"
	run -0 ctl rm -r /workspace/tree
	[ ! -e "$WS/tree" ]
	run -0 ctl exec -- cat /tmp/keep/f
	[ "$output" = keep ]
}

@test "file errors carry their kind" {
	mkdir "$WS/d"
	echo x >"$WS/f"
	run -1 ctl cat /workspace/d
	[[ "$output" == *"conflict"* ]]
	run -1 ctl cat /workspace/missing
	[[ "$output" == *"not_found"* ]]
	run -1 ctl ls /workspace/f
	[[ "$output" == *"invalid"* ]]
	run -1 ctl mkdir /workspace/f/sub
	[[ "$output" == *"invalid"* ]]
	run -1 ctl mv /workspace/f /etc/f
	[[ "$output" == *"denied"* ]]
	mkfifo "$WS/fifo"
	run -1 ctl cat /workspace/fifo
	[[ "$output" == *"invalid"*"not a regular file"* ]]
	run -0 ctl ping
}

@test "a second file root (a read-write mount) is reachable; others are not" {
	# Reconfiguring is refused, so use a fresh sandbox with two roots.
	timeout 20 "$CTL" launch "$D/b.sock" "$WS" >"$D/b.mon"
	timeout 10 "$CTL" -s "$D/b.sock" configure -r /workspace -r /tmp
	run -0 bash -c "echo t | timeout 10 '$CTL' -s '$D/b.sock' put /tmp/x"
	run -0 timeout 10 "$CTL" -s "$D/b.sock" cat /tmp/x
	[ "$output" = t ]
	run -1 timeout 10 "$CTL" -s "$D/b.sock" cat /etc/hostname
	[[ "$output" == *"denied"* ]]
	timeout 10 "$CTL" -s "$D/b.sock" shutdown
}
