#!/usr/bin/env bats
# The agent's file service in a real service-mode sandbox: reads see what
# the sandbox sees (resolved inside its root), writes go only to the file
# roots (here /workspace, the host directory $WS); streamed, atomic.

load agent-common

setup() {
	ag_setup
	configure
}

teardown() {
	ag_teardown
}

@test "a listing that comes in several parts (over 2048 entries) arrives whole, each name once" {
	mkdir "$WS/many"
	(cd "$WS/many" && seq -f 'f%05g' 1 5000 | xargs touch)
	run -0 ctl ls /workspace/many
	[ "$(grep -c ' file ' <<<"$output")" = 5000 ]
	[ "$(cut -d' ' -f1 <<<"$output" | sort -u | wc -l)" = 5000 ]
	[[ "$output" == *"f00001 file 0 "* && "$output" == *"f05000 file 0 "* ]]
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

@test "reads see what the sandbox sees: /etc, symlinks resolved inside the sandbox's root" {
	# What the sandbox's own processes read (the native sandbox binds the
	# host's /etc read-only, so /etc/os-release is the sandbox's file).
	run -0 ctl exec -- cat /etc/os-release
	want_os="$output"
	[ -n "$want_os" ]
	run -0 ctl cat /etc/os-release
	[ "$output" = "$want_os" ]
	run -0 ctl exec -- cat /etc/passwd
	want_pw="$output"
	[[ "$want_pw" == *"root:"* ]]
	run -0 ctl cat //etc/./passwd
	[ "$output" = "$want_pw" ]
	run -0 ctl stat /etc/passwd
	[[ "$output" == "/etc/passwd file "* ]]
	run -0 ctl ls /etc
	[[ "$output" == *"passwd file "* ]]
	run -0 ctl ls /
	[[ "$output" == *"workspace dir "* ]]
	# `..` is still refused in a client path.
	run -1 ctl cat /workspace/../etc/passwd
	[[ "$output" == *"denied"*".."* ]]
	run -1 ctl cat ../etc/passwd
	[[ "$output" == *"denied"* ]]
	# Symlinks resolve beneath the sandbox's root, as for a process:
	# absolute ones and ones that climb above / give the sandbox's file.
	ln -s /etc/passwd "$WS/abs"
	ln -s ../../../../../../etc/passwd "$WS/rel"
	mkdir "$WS/sub"
	ln -s .. "$WS/sub/up"
	for p in /workspace/abs rel /workspace/sub/up/rel; do
		run -0 ctl cat "$p"
		[ "$output" = "$want_pw" ]
	done
	run -1 ctl cat /workspace/sub/up/../etc/passwd
	[[ "$output" == *"denied"*".."* ]]
	# A host path the sandbox does not see stays unseen (the host's
	# /tmp is not the sandbox's), directly or through a symlink.
	echo secret >"$D/outside"
	ln -s "$D/outside" "$WS/hostonly"
	for p in "$D/outside" /workspace/hostonly; do
		run -1 ctl cat "$p"
		[[ "$output" == *"not_found"* ]]
		[[ "$output" != *secret* ]]
	done
	run -1 ctl exec -- cat "$D/outside"
	# A symlink that stays inside is followed.
	echo inside >"$WS/real"
	ln -s real "$WS/ok"
	run -0 ctl cat /workspace/ok
	[ "$output" = inside ]
}

@test "reads fail as they fail for the sandbox's processes: permissions, /proc, devices" {
	# /etc/shadow: unreadable by the sandbox's user, so by the file service
	# too (EACCES is "denied"), directly and through a symlink.
	[ -e /etc/shadow ]
	run -1 ctl exec -- cat /etc/shadow
	[[ "$output" == *"Permission denied"* ]]
	ln -s /etc/shadow "$WS/shadow"
	for p in /etc/shadow /workspace/shadow; do
		run -1 ctl cat "$p"
		[[ "$output" == *"denied"* ]]
		[[ "$output" != *"root:"* ]]
	done
	# The agent holds capabilities its commands do not: a file nobody may
	# read (mode 0000) is refused to both.
	echo locked >"$WS/locked"
	chmod 0000 "$WS/locked"
	run -1 ctl exec -- cat /workspace/locked
	run -1 ctl cat /workspace/locked
	[[ "$output" == *"denied"* ]]
	[[ "$output" != *locked*locked* ]]
	chmod 0600 "$WS/locked"
	# /proc is not served: refused by name, plain files, links and magic
	# links alike (through a link the lookup may end sooner, not found).
	ln -s /proc/self/root/etc/passwd "$WS/magic"
	ln -s /proc/1/root "$WS/p1root"
	ln -s /proc/self/environ "$WS/environ"
	for p in /proc/self/status /proc/1/environ /proc/self/environ /proc/self/mem \
		/proc/self/fd/3 /proc/1/root/etc/passwd /proc/thread-self/maps /proc/cpuinfo \
		/workspace/magic /workspace/p1root/etc/passwd /workspace/environ; do
		run -1 ctl cat "$p"
		if [[ $p == /proc/* ]]; then
			[[ "$output" == *"denied"*"/proc"* ]]
		else
			[[ "$output" == *"denied"* || "$output" == *"not_found"* ]]
		fi
		[[ "$output" != *"root:"* ]]
	done
	for p in /proc /proc/self /proc/1/fd /workspace/p1root; do
		run -1 ctl ls "$p"
		[[ "$output" == *"denied"* ]]
	done
	run -1 ctl stat /proc/self/exe
	[[ "$output" == *"denied"* ]]
	# Devices and FIFOs of the sandbox's view are never opened for reading.
	for p in /dev/null /dev/ptmx /dev/tty; do
		run -1 ctl cat "$p"
		[[ "$output" == *"invalid"*"not a regular file"* || "$output" == *"not_found"* ]]
	done
	# Hostile names: empty, too long, a trailing "..".
	run -1 ctl cat ""
	[[ "$output" == *"invalid"* ]]
	run -1 ctl cat "/$(head -c 5000 /dev/zero | tr '\0' a)"
	[[ "$output" == *"invalid"* || "$output" == *"limit"* ]]
	run -1 ctl cat "/$(head -c 4000 /dev/zero | tr '\0' a)"
	[[ "$output" == *"invalid"* ]]
	run -1 ctl cat "/etc/.."
	[[ "$output" == *"denied"* ]]
	run -0 ctl ping
}

@test "writes go only where the sandbox can write: refused in /etc, /usr and through links out" {
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /etc/x"
	[[ "$output" == *"denied"*"outside"* ]]
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /usr/bin/x"
	[[ "$output" == *"denied"* ]]
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /etc/passwd"
	[[ "$output" == *"denied"* ]]
	run -1 ctl mkdir /usr/y
	[[ "$output" == *"denied"* ]]
	run -1 ctl rm /etc/passwd
	[[ "$output" == *"denied"* ]]
	run -1 ctl mv /etc/passwd /workspace/passwd
	[[ "$output" == *"denied"* ]]
	[ ! -e "$WS/passwd" ]
	# Writes through a directory symlink that leads out are refused too.
	ln -s ../../../../etc "$WS/etcdir"
	ln -s /etc "$WS/etcabs"
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /workspace/etcdir/x"
	[[ "$output" == *"denied"* ]]
	run -1 bash -c "echo x | timeout 10 '$CTL' -s '$SOCK' put /workspace/etcabs/x"
	[[ "$output" == *"denied"* ]]
	run -1 ctl mkdir /workspace/etcdir/y
	ln -s ../../../../etc/passwd "$WS/rel"
	run -1 ctl mv /workspace/rel /workspace/etcdir/z
	run -1 ctl rm /workspace/etcabs/passwd
	run -1 ctl exec -- sh -c 'test -e /etc/x || test -e /etc/y || test -e /etc/z || test -e /usr/y'
	run -1 ctl ls /workspace/etcdir/..
	[[ "$output" == *"denied"* ]]
	run -1 ctl rm -r /workspace
	[[ "$output" == *"denied"*"file root"* ]]
	# The file itself is a symlink: rm removes the link, not the target;
	# a write replaces the link, not the target.
	ln -s /etc/passwd "$WS/abs"
	ln -s /proc/self/root/etc/passwd "$WS/magic"
	run -0 ctl rm /workspace/abs
	[ -f /etc/passwd ] && [ ! -L "$WS/abs" ]
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
	# Reads resolve inside the sandbox's root: through the link they give
	# either file, never the host's (the same here: the sandbox binds the
	# host's /etc; the other backends' conformance runs read the image's).
	sandbox_pw="$(ctl exec -- cat /etc/passwd)"
	ok=0 denied=0
	for i in $(seq 150); do
		if out="$(ctl cat /workspace/flip/passwd 2>&1)"; then
			[ "$out" = inside ] || [ "$out" = "$sandbox_pw" ]
			ok=$((ok + 1))
		else
			[[ "$out" == *"denied"* || "$out" == *"not_found"* ]]
			denied=$((denied + 1))
		fi
		echo x | ctl put /workspace/flip/written >/dev/null 2>&1 || true
	done
	kill "$flipper"
	wait "$flipper" || true
	echo "reads through the flipping link: $ok read, $denied refused" >&3
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

@test "a second file root (a read-write mount) is writable; the rest is read-only" {
	# Reconfiguring is refused, so use a fresh sandbox with two roots.
	timeout 20 "$CTL" launch "$D/b.sock" "$WS" >"$D/b.mon"
	timeout 10 "$CTL" -s "$D/b.sock" configure -r /workspace -r /tmp
	run -0 bash -c "echo t | timeout 10 '$CTL' -s '$D/b.sock' put /tmp/x"
	run -0 timeout 10 "$CTL" -s "$D/b.sock" cat /tmp/x
	[ "$output" = t ]
	run -0 timeout 10 "$CTL" -s "$D/b.sock" exec -- cat /etc/hostname
	want="$output"
	run -0 timeout 10 "$CTL" -s "$D/b.sock" cat /etc/hostname
	[ "$output" = "$want" ]
	run -1 bash -c "echo t | timeout 10 '$CTL' -s '$D/b.sock' put /etc/hostname"
	[[ "$output" == *"denied"* ]]
	run -1 bash -c "echo t | timeout 10 '$CTL' -s '$D/b.sock' put /var/x"
	[[ "$output" == *"denied"*"outside"* ]]
	timeout 10 "$CTL" -s "$D/b.sock" shutdown
}
