#!/usr/bin/env bats
# agentbox run: attacks that must fail, each for the right reason.  The
# probe prints "<what>: <errno name>" (or "ok" when the attempt worked), so
# every test asserts the reason, not just a non-zero status.

load run-common

setup() {
	ab_setup
}

teardown() {
	ab_teardown
}

# p ARGS: run the probe in a default sandbox.
p() {
	abrun -- /workspace/probe "$@"
}

# ---- the file system -----------------------------------------------------------

@test "writing to /usr and /etc fails with EROFS or EACCES" {
	local f
	for f in "/usr/abtest-$MARK" "/usr/bin/abtest-$MARK" "/etc/abtest-$MARK"; do
		HOST_FILES+=("$f")
		run -0 p write "$f"
		echo "$f -> $output"
		[[ "$output" =~ ^write:\ (EROFS|EACCES)$ ]]
		[ ! -e "$f" ]
	done
	run -0 p write /etc/passwd
	[[ "$output" =~ ^write:\ (EROFS|EACCES)$ ]]
	# Opening an existing file for writing, directly and through an O_PATH
	# fd, proves the mount read-only only on a file nothing executes: the
	# kernel checks "text busy" before "read-only mount", so a binary that
	# some host process runs at that moment answers ETXTBSY.
	f="$(find /usr/share/common-licenses /usr/share/doc -maxdepth 2 -type f ! -perm /111 2>/dev/null | head -1)"
	[ -n "$f" ]
	run -0 p write-exe "$f"
	echo "$f -> $output"
	[[ "$output" =~ ^write-exe:\ (EROFS|EACCES)\ (EROFS|EACCES)$ ]]
	# A binary in use (dash runs all the time): ETXTBSY is a refusal too.
	run -0 p write-exe /usr/bin/dash
	echo "/usr/bin/dash -> $output"
	[[ "$output" =~ ^write-exe:\ (EROFS|EACCES|ETXTBSY)\ (EROFS|EACCES|ETXTBSY)$ ]]
}

@test "writing to / itself (the tmpfs root) fails" {
	run -0 p write "/abtest-$MARK"
	[[ "$output" =~ ^write:\ (EROFS|EACCES|EPERM)$ ]]
}

@test "marker files in host /tmp, /root and /home are absent inside (ENOENT)" {
	local d f
	for d in /tmp /root /home; do
		[ -d "$d" ] || continue
		f="$d/abtest-marker-$MARK"
		HOST_FILES+=("$f")
		echo secret >"$f"
		run -0 p read "$f"
		echo "$f -> $output"
		[ "$output" = "read: ENOENT" ]
	done
}

@test "masked /proc paths: kcore, keys, timer_list hold nothing; /proc/sys is read-only" {
	run -0 abrun -- sh -c '
		for f in /proc/kcore /proc/keys /proc/timer_list; do
			[ -e $f ] || { echo "$f: absent"; continue; }
			echo "$f: $(/workspace/probe read $f)"
		done
		/workspace/probe write /proc/sys/kernel/hostname'
	echo "$output"
	local l
	for l in "${lines[@]:0:3}"; do
		[[ "$l" =~ :\ (absent|read:\ ok\ 0|read:\ (EACCES|EPERM|ENOENT))$ ]]
	done
	# kernel.hostname is per UTS namespace, so writing it is harmless on the
	# host even if this fails to be denied; EROFS proves /proc/sys is ro.
	# gVisor's own /proc/sys refuses with EACCES (it is not a mount of ours).
	if [ "$AGENTBOX_BACKEND" = gvisor ]; then
		[[ "${lines[3]}" =~ ^write:\ (EROFS|EACCES)$ ]]
	else
		[ "${lines[3]}" = "write: EROFS" ]
	fi
}

@test "/proc/sysrq-trigger and /proc/sys are read-only mounts inside" {
	native_only "how the native backend mounts /proc (the write test above holds everywhere)"
	run -0 abrun -- cat /proc/self/mountinfo
	local opts
	opts="$(echo "$output" | awk '$5 == "/proc/sys" { print $6 }' | tail -n1)"
	echo "/proc/sys options: $opts"
	[[ ",$opts," == *,ro,* ]]
	opts="$(echo "$output" | awk '$5 == "/proc/sysrq-trigger" { print $6 }' | tail -n1)"
	echo "/proc/sysrq-trigger options: $opts"
	# Read-only, masked with /dev/null (char 1:3), or not there at all.
	if [[ ",$opts," != *,ro,* ]]; then
		run -0 abrun -- sh -c '[ -e /proc/sysrq-trigger ] || { echo absent; exit 0; }; stat -c %t:%T /proc/sysrq-trigger'
		[[ "$output" =~ ^(absent|1:3)$ ]]
	fi
}

# ---- processes ---------------------------------------------------------------------

start_host_sleeper() {
	"$PROBE" sleeper "$MARK" 30 >"$BATS_TEST_TMPDIR/host-sleeper.out" &
	HOST_SLEEPER=$!
	BG_PIDS+=("$HOST_SLEEPER")
	wait_for "$BATS_TEST_TMPDIR/host-sleeper.out" '^sleeper: ready$'
}

@test "host processes are invisible: /proc and ps list only the sandbox's" {
	start_host_sleeper
	run -0 abrun -- sh -c 'for d in /proc/[0-9]*; do echo "${d#/proc/}"; done | sort -n | tr "\n" " "; echo; ps -e -o pid=,args='
	echo "$output"
	[[ "$output" != *"$MARK"* ]]
	# PID 1 (the agent), sh, ls/grep/sort/tr or ps: a handful, all small.
	local pids
	pids="${lines[0]}"
	[ "$(echo $pids | wc -w)" -le 8 ]
	for p in $pids; do [ "$p" -lt 100 ]; done
	[[ " $pids " != *" $HOST_SLEEPER "* ]]
}

@test "host processes cannot be signalled (ESRCH) and survive" {
	start_host_sleeper
	run -0 p kill "$HOST_SLEEPER" 0
	[ "$output" = "kill: ESRCH" ]
	run -0 p kill "$HOST_SLEEPER" 9
	[ "$output" = "kill: ESRCH" ]
	kill -0 "$HOST_SLEEPER"
}

@test "ptrace of a process in the sandbox fails with EPERM" {
	run -0 p ptrace
	[ "$output" = "ptrace: EPERM" ]
	run -0 p process-vm
	[ "$output" = "process-vm: EPERM" ]
}

@test "the agent (PID 1) cannot be traced, read or killed from inside" {
	if [ "$AGENTBOX_BACKEND" = gvisor ]; then
		# runsc 2022-12 ignores non-dumpable, so commands live in a pid
		# namespace of their own (agent/cmdns.c): their PID 1 is its
		# reaper, nobody with no fd and a wiped environment, and nothing
		# of the agent is listed.  (Killing the reaper ends the commands,
		# not the agent: hardening-agent.bats, docs/security.md.)
		run -0 p ptrace 1
		[ "$output" = "ptrace: EPERM" ]
		run -0 abrun -- sh -c 'grep "^Uid:" /proc/1/status; ls -A /proc/1/fd | wc -l
			tr -d "\0" </proc/1/environ | wc -c
			for p in /proc/[0-9]*; do [ "$(cat "$p/status" 2>/dev/null | sed -n "s/^Uid:\t//p" | cut -f1)" = 0 ] && [ "$(cat "$p/comm")" = agentbox-agent ] && echo "AGENT $p"; done; true'
		echo "$output"
		[ "${lines[0]}" = "Uid:	65534	65534	65534	65534" ]
		[ "${lines[1]}" = 0 ]
		[ "${lines[2]}" = 0 ]
		[[ "$output" != *AGENT* ]]
		return 0
	fi
	run -0 p ptrace 1
	[ "$output" = "ptrace: EPERM" ]
	run -0 p read /proc/1/environ
	[[ "$output" =~ ^read:\ (EACCES|EPERM)$ ]]
	run -0 p read /proc/1/mem
	[[ "$output" =~ ^read:\ (EACCES|EPERM|EIO)$ ]]
	# Its fd numbers may be listed (the directory belongs to the sandbox's
	# root), but no descriptor may be followed: that would be the door.
	run -0 p read /proc/1/fd/0
	[[ "$output" =~ ^read:\ (EACCES|EPERM)$ ]]
	run abrun -- readlink /proc/1/fd/0 /proc/1/cwd /proc/1/root
	[ "$status" -ne 0 ]
	[ -z "$output" ]
	# SIGKILL and SIGSTOP from inside never reach PID 1 (dropped, or EPERM).
	run -0 abrun -- sh -c 'kill -KILL 1; kill -STOP 1; sleep 0.3; echo alive'
	[ "${lines[-1]}" = alive ]
	[[ "$output" != *"No such process"* ]]
}

@test "no capabilities, no_new_privs set, seccomp filtering on" {
	# NoNewPrivs through prctl(PR_GET_NO_NEW_PRIVS): gVisor's status file
	# has no such line.
	run -0 abrun -- sh -c "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|Seccomp):' /proc/self/status
		python3 -c 'import ctypes; print(\"NoNewPrivs:\", ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'"
	echo "$output"
	local l
	for l in "${lines[@]}"; do
		case "$l" in
		Cap*) [[ "$l" =~ :[[:space:]]+0+$ ]] ;;
		NoNewPrivs*) [[ "$l" =~ :[[:space:]]+1$ ]] ;;
		Seccomp*) [[ "$l" =~ :[[:space:]]+2$ ]] ;;
		esac
	done
	# gVisor has no ambient set line (CapAmb): 6 lines there, 7 elsewhere.
	[ "${#lines[@]}" -ge 6 ]
	[[ "$output" == *"NoNewPrivs: 1"* ]]
	[[ "$output" == *"Seccomp:"* ]]
}

# ---- namespaces and mounts ---------------------------------------------------------

@test "mount fails with EPERM (old and new mount API)" {
	run -0 p mount /tmp
	[ "$output" = "mount: EPERM" ]
	run -0 p fsopen
	[ "$output" = "fsopen: EPERM" ]
	run abrun -- mount -t tmpfs none /tmp
	[ "$status" -ne 0 ]
	[[ "$output" == *"ermission denied"* || "$output" == *"not permitted"* ]]
}

@test "creating a user namespace fails with EPERM (unshare, clone, unshare -U)" {
	run -0 p unshare-user
	[ "$output" = "unshare-user: EPERM" ]
	run -0 p clone-user
	[ "$output" = "clone-user: EPERM" ]
	run abrun -- unshare -U true
	[ "$status" -ne 0 ]
	[[ "$output" == *"Operation not permitted"* ]]
}

@test "other namespaces cannot be created either (EPERM)" {
	run -0 p unshare-mount
	[ "$output" = "unshare-mount: EPERM" ]
}

@test "clone3 answers ENOSYS so libc falls back to clone" {
	run -0 p clone3
	[ "$output" = "clone3: ENOSYS" ]
}

# ---- denied system calls -------------------------------------------------------------

@test "keyctl, bpf, perf_event_open, userfaultfd, io_uring_setup fail with EPERM" {
	local s
	for s in keyctl bpf perf userfaultfd io_uring; do
		run -0 p "$s"
		echo "$output"
		[ "$output" = "$s: EPERM" ]
	done
}

@test "personality(READ_IMPLIES_EXEC) fails with EPERM" {
	run -0 p personality
	[ "$output" = "personality: EPERM" ]
}

@test "the i386 and x32 system call ABIs are denied" {
	# Either an errno or the process killed by SIGSYS (exit 159) is a denial.
	run abrun -- /workspace/probe int80
	echo "status=$status $output"
	[ "$status" -eq 159 ] || [[ "$output" =~ ^int80:\ E[A-Z]+$ ]]
	run abrun -- /workspace/probe x32
	echo "status=$status $output"
	[ "$status" -eq 159 ] || [[ "$output" =~ ^x32:\ E[A-Z]+$ ]]
}

# ---- the terminal ----------------------------------------------------------------------

@test "TIOCSTI and TIOCLINUX on the terminal under -t fail with EPERM (also with bit 32 set)" {
	run -0 in_pty "$AGENTBOX run --workspace $WS -t -- sh -c '/workspace/probe tiocsti; /workspace/probe tiocsti hi; /workspace/probe tioclinux'"
	output="$(echo "$output" | crlf)"
	echo "$output"
	echo "$output" | grep -qx 'tiocsti: EPERM'
	[ "$(echo "$output" | grep -cx 'tiocsti: EPERM')" -eq 2 ]
	echo "$output" | grep -qx 'tioclinux: EPERM'
}

@test "the caller's terminal is not handed in when stdin is redirected" {
	run -0 in_pty "$AGENTBOX run --workspace $WS -- sh -c '/workspace/probe tty; /workspace/probe tiocsti' </dev/null"
	output="$(echo "$output" | crlf)"
	echo "$output"
	echo "$output" | grep -qx 'tty: in=0 out=0 err=0 name=none'
	echo "$output" | grep -Eqx 'tiocsti: (ENXIO|ENOTTY|EPERM|EIO)'
}

# ---- privilege -------------------------------------------------------------------------

@test "a setuid-root binary does not raise the effective uid" {
	# Owned by the workspace owner, which is root inside the sandbox.
	cp "$PROBE" "$WS/suid-probe"
	chown 0:0 "$WS" "$WS/suid-probe"
	chmod 4755 "$WS/suid-probe"
	run -0 abrun -- python3 -c 'import os; s = os.stat("/workspace/suid-probe"); print("%d:%o" % (s.st_uid, s.st_mode & 0o7777))'
	echo "inside: $output"
	run -0 abrun -u 1000:1000 -- /workspace/suid-probe setuid-check
	[ "$output" = "setuid-check: uid=1000 euid=1000 suid=1000 gid=1000 egid=1000" ]
}

@test "the host's setuid su and passwd gain nothing" {
	# As setuid root, `passwd -S root` would print root's status; without the
	# privilege it refuses.  su would need root to switch users.
	[ -u /usr/bin/passwd ] || [ -u /usr/bin/su ] || skip "no setuid su/passwd on this host"
	if [ -u /usr/bin/passwd ]; then
		run abrun -u 1000:1000 -- passwd -S root
		echo "passwd: status=$status $output"
		[ "$status" -ne 0 ]
	fi
	if [ -u /usr/bin/su ]; then
		run abrun -u 1000:1000 -- su root -c true
		echo "su: status=$status $output"
		[ "$status" -ne 0 ]
	fi
}

# ---- the runtime binary -----------------------------------------------------------------

runtime_sums() {
	sha256sum "$AGENTBOX" "$AGENT_BIN"
}

@test "overwriting the runtime through /proc/1/exe and /proc/self/exe fails" {
	local before
	before="$(runtime_sums)"
	run -0 p write-exe /proc/1/exe
	[[ "$output" =~ ^write-exe:\ (EACCES|EPERM|EROFS|ETXTBSY)\ (EACCES|EPERM|EROFS|ETXTBSY)$ ]]
	# /proc/self/exe of the probe is the probe: busy while it runs (gVisor
	# has no ETXTBSY: there the probe, a workspace file of the test's own,
	# may be written; the runtime's sums below are what matters).
	run -0 p write-exe /proc/self/exe
	if [ "$AGENTBOX_BACKEND" != gvisor ]; then
		[[ "$output" =~ ^write-exe:\ (EACCES|EPERM|EROFS|ETXTBSY)\ (EACCES|EPERM|EROFS|ETXTBSY)$ ]]
	fi
	[ "$(runtime_sums)" = "$before" ]
}

@test "executing /proc/self/exe as the command leaves the runtime intact" {
	# The agent's child resolves /proc/self/exe before exec: the runtime binary
	# would run as the command (the CVE-2019-5736 setup).  Whatever it does, it
	# must end, and neither binary on the host may change.
	local before
	before="$(runtime_sums)"
	run timeout -s KILL 20 "$AGENTBOX" run --workspace "$WS" --timeout 5s -- /proc/self/exe </dev/null
	echo "status=$status $output"
	[ "$status" -ne 137 ] # ended by itself, not by the outer timeout
	[ "$(runtime_sums)" = "$before" ]
}

# ---- file descriptors --------------------------------------------------------------------

@test "no inherited fd beyond 0, 1, 2 (even when the caller leaks some)" {
	run -0 bash -c 'exec 7>"$1/leak7" 9<"$1/ws/probe"; exec "$0" run --workspace "$1/ws" -- /workspace/probe fds </dev/null' \
		"$AGENTBOX" "$BATS_TEST_TMPDIR"
	[ "$output" = "fds: 0 1 2" ]
	run -0 in_pty "$AGENTBOX run --workspace $WS -t -- /workspace/probe fds"
	[ "$(echo "$output" | crlf)" = "fds: 0 1 2" ]
}

# ---- the network -----------------------------------------------------------------------------

@test "a TCP listener on the host's 127.0.0.1 is unreachable and sees no connection" {
	local out="$BATS_TEST_TMPDIR/listen.out" port
	"$PROBE" listen 30 >"$out" &
	BG_PIDS+=("$!")
	wait_for "$out" '^listen: [0-9]+$'
	port="$(head -n1 "$out" | cut -d' ' -f2)"
	"$PROBE" connect 127.0.0.1 1 # the host itself can connect to 127.0.0.1
	run -0 p connect 127.0.0.1 "$port"
	echo "$output"
	[[ "$output" =~ ^connect:\ (ECONNREFUSED|ENETUNREACH)$ ]]
	sleep 0.1
	cat "$out"
	run ! grep -q accepted "$out"
}

@test "the host's other addresses are unreachable (ENETUNREACH), only lo exists" {
	local addr
	addr="$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9.]+$' | head -n1)"
	[ -n "$addr" ] || skip "no IPv4 address on this host"
	run -0 p connect "$addr" 22
	[[ "$output" =~ ^connect:\ (ENETUNREACH|EHOSTUNREACH)$ ]]
	run -0 p connect 1.1.1.1 53
	[[ "$output" =~ ^connect:\ (ENETUNREACH|EHOSTUNREACH)$ ]]
}

@test "an abstract unix socket on the host is unreachable (ECONNREFUSED)" {
	local out="$BATS_TEST_TMPDIR/listen-unix.out"
	"$PROBE" listen-unix "@$MARK" 30 >"$out" &
	BG_PIDS+=("$!")
	wait_for "$out" '^listen-unix: bound$'
	run -0 p connect-unix "@$MARK"
	[ "$output" = "connect-unix: ECONNREFUSED" ]
	sleep 0.1
	run ! grep -q accepted "$out"
}

# ---- limits -------------------------------------------------------------------------------

@test "a fork bomb is contained by --pids 64 and the host stays responsive" {
	local out="$BATS_TEST_TMPDIR/bomb.out" pid t0 t1 rc=0
	timeout 60 "$AGENTBOX" run --workspace "$WS" --pids 64 -- /workspace/probe forkbomb 1000 \
		</dev/null >"$out" 2>&1 &
	pid=$!
	BG_PIDS+=("$pid")
	# The host can still start a process promptly while the bomb runs.
	t0=$(date +%s%N)
	timeout 5 true
	t1=$(date +%s%N)
	[ $(((t1 - t0) / 1000000)) -lt 2000 ]
	wait "$pid" || rc=$?
	cat "$out"
	[ "$rc" -eq 0 ]
	grep -Eqx 'forkbomb: EAGAIN after [0-9]+' "$out"
	local n
	n="$(sed -n 's/^forkbomb: EAGAIN after \([0-9]*\)$/\1/p' "$out")"
	[ "$n" -lt "$(pids_bound 64)" ]
	[ "$n" -gt 10 ]
}

@test "a memory hog under --memory 64m is killed and reported oom_killed" {
	local r="$BATS_TEST_TMPDIR/result.json"
	run timeout 60 "$AGENTBOX" run --workspace "$WS" --memory 64m --json-result "$r" -- /workspace/probe memhog 512 </dev/null
	echo "status=$status $output"
	cat "$r"
	[ "$status" -eq 137 ]
	[[ "$output" != *"memhog: ok"* ]]
	[ "$(json_get "$r" '.oom_killed')" = true ]
	[ "$(json_get "$r" '.peak_memory_bytes <= 72 * 1048576')" = true ]
}

@test "a setsid grandchild ignoring SIGTERM is killed at --timeout; nothing of it remains" {
	local r="$BATS_TEST_TMPDIR/result.json" t0=$SECONDS
	run timeout 30 "$AGENTBOX" run --workspace "$WS" --timeout 1s --kill-grace 1s --json-result "$r" -- /workspace/probe stubborn "$MARK" </dev/null
	echo "status=$status $output"
	[ "$status" -eq 124 ]
	[ $((SECONDS - t0)) -le 6 ]
	# Both really started: the grandchild announced itself before the kill.
	echo "$output" | grep -qx 'sleeper: ready'
	echo "$output" | grep -qx 'stubborn: started'
	[ "$(json_get "$r" '.timed_out')" = true ]
	local left
	left="$(marker_pids)"
	if [ -n "$left" ]; then
		ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ,)"
		false
	fi
}
