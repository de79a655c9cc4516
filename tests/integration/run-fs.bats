#!/usr/bin/env bats
# agentbox run: what the file system inside looks like, and who owns what.

load run-common

setup() {
	ab_setup
}

teardown() {
	ab_teardown
}

@test "the host root shows only /usr /bin /sbin /lib* /etc + /proc /dev /tmp /workspace" {
	run -0 abrun -- ls -A /
	echo "$output"
	local e
	for e in $output; do
		case "$e" in
		usr | bin | sbin | lib | lib32 | lib64 | libx32 | etc | proc | dev | tmp | workspace) ;;
		*)
			echo "unexpected entry in /: $e"
			false
			;;
		esac
	done
	for e in usr bin etc proc dev tmp workspace; do
		echo "$output" | grep -qx "$e"
	done
}

@test "no /root /home /var /run /srv /mnt /media /boot /opt /sys inside" {
	run -0 abrun -- sh -c 'for d in /root /home /var /run /srv /mnt /media /boot /opt /sys; do [ -e $d ] && echo "present: $d"; done; true'
	[ -z "$output" ]
}

@test "/usr and /etc are the host's" {
	run -0 abrun -- sh -c 'cat /etc/debian_version; sha256sum /usr/bin/dash | cut -d" " -f1'
	[ "${lines[0]}" = "$(cat /etc/debian_version)" ]
	[ "${lines[1]}" = "$(sha256sum /usr/bin/dash | cut -d' ' -f1)" ]
}

@test "/tmp is a private empty tmpfs" {
	run -0 abrun -- sh -c 'stat -f -c %T /tmp; ls -A /tmp | wc -l; echo x >/tmp/f && cat /tmp/f'
	[ "$output" = $'tmpfs\n0\nx' ]
}

@test "/proc is a fresh procfs whose PID 1 is agentbox-agent" {
	run -0 abrun -- sh -c 'stat -f -c %T /proc; cut -d "" -f1 /proc/1/cmdline | tr -d "\0"; echo; cat /proc/1/comm'
	echo "$output"
	[ "${lines[0]}" = proc ]
	[ "$(basename "${lines[1]}")" = agentbox-agent ]
}

@test "/dev is minimal: null zero full random urandom tty, pts, ptmx, shm" {
	run -0 abrun -- ls -A /dev
	echo "$output"
	local e
	for e in $output; do
		case "$e" in
		null | zero | full | random | urandom | tty | pts | ptmx | shm | fd | stdin | stdout | stderr | console | mqueue | core) ;;
		*)
			echo "unexpected device: $e"
			false
			;;
		esac
	done
	for e in null zero full random urandom tty pts ptmx shm; do
		echo "$output" | grep -qx "$e"
	done
	run -0 abrun -- sh -c 'stat -c %F:%t:%T /dev/null; echo x >/dev/null && echo writable; head -c 4 /dev/zero | od -An -tx1 | tr -d " "'
	[ "$output" = $'character special file:1:3\nwritable\n00000000' ]
}

@test "workspace files appear on the host owned by the workspace's owner (1234:1234)" {
	chown 1234:1234 "$WS"
	run -0 abrun -- sh -c 'echo hi >/workspace/made-inside && mkdir /workspace/dir-inside'
	[ "$(stat -c %u:%g "$WS/made-inside")" = 1234:1234 ]
	[ "$(stat -c %u:%g "$WS/dir-inside")" = 1234:1234 ]
}

@test "workspace files appear on the host owned by root when root owns it" {
	chown 0:0 "$WS"
	run -0 abrun -- sh -c 'echo hi >/workspace/made-inside'
	[ "$(stat -c %u:%g "$WS/made-inside")" = 0:0 ]
}

@test "the workspace owner's files are the sandbox root's files" {
	chown 1234:1234 "$WS"
	echo mine >"$WS/host-file"
	chown 1234:1234 "$WS/host-file"
	run -0 abrun -- sh -c 'stat -c %u:%g /workspace/host-file; echo more >>/workspace/host-file'
	[ "$output" = 0:0 ]
	[ "$(cat "$WS/host-file")" = $'mine\nmore' ]
}

@test "the sandbox's processes never run as host uid 0" {
	local out="$BATS_TEST_TMPDIR/out" pid hostpid
	"$AGENTBOX" run --workspace "$WS" -- /workspace/probe sleeper "$MARK" 20 </dev/null >"$out" 2>&1 &
	pid=$!
	BG_PIDS+=("$pid")
	wait_for "$out" '^sleeper: ready$'
	hostpid="$(marker_probe_pids | head -n1)"
	[ -n "$hostpid" ]
	grep -E '^(Uid|Gid):' "/proc/$hostpid/status"
	run -0 awk '/^(Uid|Gid):/ { for (i = 2; i <= 5; i++) if ($i == 0) bad = 1 } END { exit bad }' "/proc/$hostpid/status"
}

@test "uid_map inside maps sandbox root to a non-zero host id" {
	run -0 abrun -- cat /proc/self/uid_map /proc/self/gid_map
	echo "$output"
	run -0 awk '{ if ($2 == 0) bad = 1 } END { exit bad || NR == 0 }' <<<"$output"
}

# A busybox root the test builds: /bin/busybox and one symlink per applet.
make_busybox_root() {
	local root="$1" applet
	mkdir -p "$root/bin" "$root/proc" "$root/dev" "$root/tmp" "$root/etc"
	cp /usr/bin/busybox "$root/bin/busybox"
	for applet in $(/usr/bin/busybox --list); do
		[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
	done
	echo "busybox-image-$MARK" >"$root/etc/image-id"
}

# The image in a directory of its own under /tmp, mode 0755 all the way
# (BATS_TEST_TMPDIR sits below a 0700 directory; that case is tested apart).
busybox_root_open() {
	local dir
	dir="$(open_tmpdir)"
	make_busybox_root "$dir/root"
	echo "$dir/root"
}

@test "--rootfs DIR runs a busybox image" {
	[ -x /usr/bin/busybox ] || skip "busybox-static is not installed"
	local root
	root="$(busybox_root_open)"
	HOST_DIRS+=("$(dirname "$root")")
	run -0 abrun --rootfs "$root" -e PATH=/bin -- busybox sh -c 'echo hi'
	[ "$output" = hi ]
	run -0 abrun --rootfs "$root" -e PATH=/bin -- /bin/sh -c 'cat /etc/image-id; [ -e /usr/bin/dash ] && echo host-usr; [ -e /etc/debian_version ] && echo host-etc; echo x >/workspace/from-image; true'
	[ "$output" = "busybox-image-$MARK" ]
	[ -f "$WS/from-image" ]
}

@test "--rootfs DIR: the default PATH finds /bin/sh and the exit code passes" {
	[ -x /usr/bin/busybox ] || skip "busybox-static is not installed"
	local root
	root="$(busybox_root_open)"
	HOST_DIRS+=("$(dirname "$root")")
	run -9 abrun --rootfs "$root" -- sh -c 'exit 9'
}

@test "--rootfs DIR below a private (0700) directory, as mktemp -d makes" {
	[ -x /usr/bin/busybox ] || skip "busybox-static is not installed"
	local root="$BATS_TEST_TMPDIR/private/bbroot"
	mkdir -p -m 0700 "$BATS_TEST_TMPDIR/private"
	make_busybox_root "$root"
	run -0 abrun --rootfs "$root" -- busybox sh -c 'echo hi'
	[ "$output" = hi ]
}

@test "--rootfs host is the default" {
	run -0 abrun --rootfs host -- cat /etc/debian_version
	[ "$output" = "$(cat /etc/debian_version)" ]
}
