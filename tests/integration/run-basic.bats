#!/usr/bin/env bats
# agentbox run: exit codes, stdio, environment, options, tty, signals.

load run-common

setup() {
	ab_setup
}

teardown() {
	ab_teardown
}

# ---- exit status -----------------------------------------------------------

@test "exit status 0 of a command that succeeds" {
	run -0 abrun -- true
	[ -z "$output" ]
}

@test "exit status is the command's own (1, 7, 255)" {
	run -1 abrun -- false
	run -7 abrun -- sh -c 'exit 7'
	run -255 abrun -- sh -c 'exit 255'
}

@test "death by signal N gives 128+N (TERM 143, KILL 137, SEGV 139)" {
	run -143 abrun -- sh -c 'kill -TERM $$'
	run -137 abrun -- sh -c 'kill -KILL $$'
	run -139 abrun -- sh -c 'kill -SEGV $$'
}

@test "--timeout gives 124 and ends the command early" {
	local t0=$SECONDS
	run -124 abrun --timeout 1s -- sleep 30
	# The point: agentbox's own 1 s timeout, not the end of `sleep 30` nor
	# abrun's 15 s bound (also 124); 10 s leaves a loaded host room.
	[ $((SECONDS - t0)) -le 10 ]
}

@test "a command that is not executable gives 126" {
	printf '#!/bin/sh\necho ran\n' >"$WS/notexec"
	chmod 0644 "$WS/notexec"
	run -126 abrun -- /workspace/notexec
	[[ "$output" != *ran* ]]
	mkdir "$WS/adir"
	run -126 abrun -- /workspace/adir
}

@test "a command that is not found gives 127" {
	run -127 abrun -- no-such-command-agentbox-test
	run -127 abrun -- /workspace/no-such-file
}

# ---- stdin, stdout, stderr --------------------------------------------------

@test "stdin passes through and EOF reaches the command" {
	run -0 bash -c 'printf "hello\nworld\n" | "$0" run --workspace "$1" -- cat' "$AGENTBOX" "$WS"
	[ "$output" = $'hello\nworld' ]
	run -0 bash -c 'printf "a\nb\nc\n" | "$0" run --workspace "$1" -- wc -l' "$AGENTBOX" "$WS"
	[ "$output" = 3 ]
}

@test "stdin redirected from a regular file reaches EOF" {
	printf 'one\ntwo\n' >"$BATS_TEST_TMPDIR/in"
	AB_CALL_TIMEOUT=5 run -0 abrun_stdin -- cat <"$BATS_TEST_TMPDIR/in"
	[ "$output" = $'one\ntwo' ]
}

@test "2 MiB of binary data pass through stdin and stdout unchanged" {
	head -c 2097152 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	cat "$BATS_TEST_TMPDIR/in" | abrun_stdin -- cat >"$BATS_TEST_TMPDIR/out"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
}

@test "stdout and stderr stay separate and agentbox adds nothing" {
	run -3 --separate-stderr abrun -- sh -c 'echo to-out; echo to-err >&2; exit 3'
	[ "$output" = to-out ]
	[ "$stderr" = to-err ]
}

@test "stdout is not a terminal when the caller's is not" {
	run -0 abrun -- /workspace/probe tty
	[ "$output" = "tty: in=0 out=0 err=0 name=none" ]
}

# ---- environment -----------------------------------------------------------

@test "the environment starts clean: PATH, HOME, TERM, LANG only" {
	export AB_TEST_SECRET=leaked
	run -0 abrun -- /usr/bin/env
	[[ "$output" != *AB_TEST_SECRET* ]]
	[[ "$output" != *BATS_* ]]
	local names
	names="$(echo "$output" | cut -d= -f1 | sort | tr '\n' ' ')"
	echo "names: $names"
	for n in $names; do
		case "$n" in PATH | HOME | TERM | LANG) ;; *) false ;; esac
	done
	echo "$output" | grep -q '^PATH=/'
	echo "$output" | grep -q '^HOME=/'
	run -0 abrun -- sh -c 'command -v ls'
}

@test "-e/--env K=V sets variables, values may hold = and be empty" {
	run -0 abrun -e A=1 --env B=two=2 -e EMPTY= -- /usr/bin/env
	echo "$output" | grep -qx 'A=1'
	echo "$output" | grep -qx 'B=two=2'
	echo "$output" | grep -qx 'EMPTY='
}

@test "-e overrides a default (LANG, PATH)" {
	run -0 abrun -e LANG=C -e PATH=/usr/bin -- /usr/bin/env
	echo "$output" | grep -qx 'LANG=C'
	echo "$output" | grep -qx 'PATH=/usr/bin'
	[ "$(echo "$output" | grep -c '^LANG=')" -eq 1 ]
}

@test "--env K takes the value from the host, and only that one" {
	export AB_TEST_PASS=from-host AB_TEST_OTHER=not-named
	run -0 abrun --env AB_TEST_PASS -- /usr/bin/env
	echo "$output" | grep -qx 'AB_TEST_PASS=from-host'
	[[ "$output" != *AB_TEST_OTHER* ]]
}

@test "--env-file reads K=V lines (comments and blank lines skipped)" {
	printf '# a comment\nF1=one\n\nF2=two words\n' >"$BATS_TEST_TMPDIR/envfile"
	run -0 abrun --env-file "$BATS_TEST_TMPDIR/envfile" -- /usr/bin/env
	echo "$output" | grep -qx 'F1=one'
	echo "$output" | grep -qx 'F2=two words'
	[[ "$output" != *comment* ]]
}

# ---- working directory, hostname, workspace --------------------------------

@test "the working directory defaults to /workspace; -w/--workdir change it" {
	run -0 abrun -- pwd
	[ "$output" = /workspace ]
	run -0 abrun -w /tmp -- pwd
	[ "$output" = /tmp ]
	run -0 abrun --workdir /usr/bin -- pwd
	[ "$output" = /usr/bin ]
}

@test "the hostname defaults to agentbox; --hostname sets it" {
	run -0 abrun -- uname -n
	[ "$output" = agentbox ]
	run -0 abrun --hostname box-1 -- sh -c 'uname -n; cat /proc/sys/kernel/hostname'
	[ "$output" = $'box-1\nbox-1' ]
	[ "$(uname -n)" != box-1 ]
}

@test "--workspace DIR is /workspace, read-write, both ways" {
	echo from-host >"$WS/in.txt"
	run -0 abrun -- sh -c 'cat /workspace/in.txt; echo from-sandbox >/workspace/out.txt'
	[ "$output" = from-host ]
	[ "$(cat "$WS/out.txt")" = from-sandbox ]
}

@test "the workspace defaults to the current directory" {
	echo here >"$WS/cwd-marker"
	cd "$WS"
	run -0 "$AGENTBOX" run -- cat /workspace/cwd-marker </dev/null
	[ "$output" = here ]
}

@test "--no-workspace mounts no host directory" {
	echo here >"$WS/cwd-marker"
	cd "$WS"
	run "$AGENTBOX" run --no-workspace -- sh -c 'ls -A /workspace 2>&1; find / -xdev -name cwd-marker 2>/dev/null; true' </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" != *cwd-marker* ]]
	[[ "$output" != *probe* ]]
}

# ---- extra mounts ------------------------------------------------------------

@test "--ro SRC:DST is visible and read-only (EROFS)" {
	local d
	d="$(open_tmpdir)"
	HOST_DIRS+=("$d")
	echo data >"$d/f"
	run -0 abrun --ro "$d:/data" -- sh -c 'cat /data/f; /workspace/probe write /data/f; /workspace/probe write /data/new'
	[ "$output" = $'data\nwrite: EROFS\nwrite: EROFS' ]
	[ "$(cat "$d/f")" = data ]
	[ ! -e "$d/new" ]
}

@test "--ro SRC without DST mounts at the same path" {
	local d
	d="$(open_tmpdir)"
	HOST_DIRS+=("$d")
	echo same >"$d/f"
	run -0 abrun --ro "$d" -- cat "$d/f"
	[ "$output" = same ]
}

@test "--rw SRC:DST is writable and writes reach the host" {
	local d
	d="$(open_tmpdir)"
	HOST_DIRS+=("$d")
	run -0 abrun --rw "$d:/out" -- sh -c 'echo written >/out/f'
	[ "$(cat "$d/f")" = written ]
}

@test "--ro and --rw sources below a private (0700) directory work" {
	mkdir -p -m 0700 "$BATS_TEST_TMPDIR/private"
	mkdir "$BATS_TEST_TMPDIR/private/ro" "$BATS_TEST_TMPDIR/private/rw"
	echo data >"$BATS_TEST_TMPDIR/private/ro/f"
	run -0 abrun --ro "$BATS_TEST_TMPDIR/private/ro:/data" --rw "$BATS_TEST_TMPDIR/private/rw:/out" \
		-- sh -c 'cat /data/f; echo written >/out/f'
	[ "$output" = data ]
	[ "$(cat "$BATS_TEST_TMPDIR/private/rw/f")" = written ]
}

@test "--tmpfs DST is a writable tmpfs; DST:SIZE caps it (ENOSPC)" {
	run -0 abrun --tmpfs /scratch -- sh -c 'stat -f -c %T /scratch; echo x >/scratch/f && cat /scratch/f'
	[ "$output" = $'tmpfs\nx' ]
	run abrun --tmpfs /scratch:1m -- sh -c 'dd if=/dev/zero of=/scratch/big bs=1M count=4 2>&1'
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left on device"* ]]
}

# ---- ids -----------------------------------------------------------------------

@test "ids default to 0:0 inside" {
	run -0 abrun -- sh -c 'echo $(id -u):$(id -g)'
	[ "$output" = 0:0 ]
}

@test "-u/--user UID[:GID] changes the ids inside" {
	run -0 abrun -u 1000:1000 -- sh -c 'echo $(id -u):$(id -g)'
	[ "$output" = 1000:1000 ]
	run -0 abrun --user 1234 -- id -u
	[ "$output" = 1234 ]
}

# ---- --json-result -------------------------------------------------------------

@test "--json-result has every field with the right type" {
	local r="$BATS_TEST_TMPDIR/result.json"
	run -3 abrun --json-result "$r" -- sh -c 'exit 3'
	cat "$r"
	[ "$(json_get "$r" '.exit_code')" = 3 ]
	[ "$(json_get "$r" '.timed_out')" = false ]
	[ "$(json_get "$r" '.oom_killed')" = false ]
	[ "$(json_get "$r" '.signal | (. == null or . == 0)')" = true ]
	for f in wall_ms cpu_ms peak_memory_bytes; do
		[ "$(json_get "$r" ".$f | type")" = '"number"' ]
		[ "$(json_get "$r" ".$f >= 0")" = true ]
	done
	[ "$(json_get "$r" '.wall_ms < 10000')" = true ]
}

@test "--json-result reports a signal death and a timeout" {
	local r="$BATS_TEST_TMPDIR/result.json"
	run -137 abrun --json-result "$r" -- sh -c 'kill -KILL $$'
	cat "$r"
	# The signal as a number (9) or a name (KILL / SIGKILL); both are clear.
	[ "$(json_get "$r" '.signal | tostring | test("^(9|SIGKILL|KILL)$")')" = true ]
	[ "$(json_get "$r" '.timed_out')" = false ]
	run -124 abrun --timeout 1s --json-result "$r" -- sleep 30
	cat "$r"
	[ "$(json_get "$r" '.timed_out')" = true ]
	[ "$(json_get "$r" '.wall_ms >= 900 and .wall_ms < 8000')" = true ]
}

@test "--json-result cpu_ms and peak_memory_bytes measure the command" {
	local r="$BATS_TEST_TMPDIR/result.json"
	run -0 abrun --json-result "$r" -- /workspace/probe memhog 48
	cat "$r"
	[ "$(json_get "$r" '.peak_memory_bytes >= 48 * 1048576')" = true ]
	run -0 abrun --json-result "$r" -- sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'
	cat "$r"
	[ "$(json_get "$r" '.cpu_ms > 0')" = true ]
}

# ---- terminal ------------------------------------------------------------------

@test "-t gives the command a pty of its own (not the caller's)" {
	run -0 in_pty "$AGENTBOX run --workspace $WS -t -- sh -c '/workspace/probe tty; ls -1 /dev/pts'"
	output="$(echo "$output" | crlf)"
	echo "$output"
	echo "$output" | grep -Eqx 'tty: in=1 out=1 err=1 name=/dev/pts/[0-9]+'
	# A private devpts instance: only the sandbox's own pty (and ptmx).
	[ "$(echo "$output" | grep -Evc '^(tty:|ptmx$|[0-9]$)')" -eq 0 ]
}

@test "a pty is allocated automatically when stdin is a terminal" {
	run -0 in_pty "$AGENTBOX run --workspace $WS -- /workspace/probe tty"
	output="$(echo "$output" | crlf)"
	echo "$output" | grep -Eqx 'tty: in=1 out=1 err=1 name=/dev/pts/[0-9]+'
}

@test "--no-tty keeps the command off a pty even when stdin is a terminal" {
	run -0 in_pty "$AGENTBOX run --workspace $WS --no-tty -- /workspace/probe tty"
	output="$(echo "$output" | crlf)"
	echo "$output"
	echo "$output" | grep -Eqx 'tty: in=0 out=0 err=0 name=none'
}

@test "-t passes the exit status through the pty" {
	run -5 in_pty "$AGENTBOX run --workspace $WS -t -- sh -c 'echo hello; exit 5'"
	[[ "$(echo "$output" | crlf)" == *hello* ]]
	run -0 in_pty "$AGENTBOX run --workspace $WS -t -- true; echo rc=\$?"
	[[ "$(echo "$output" | crlf)" == *rc=0* ]]
}

# The typescript of pty_bg, for a command that waits on it itself.
pty_ts() {
	echo "$BATS_TEST_TMPDIR/pty.ts"
}

# pty_bg SHELL-COMMAND: like in_pty, in the background (PTY_PID), with the
# terminal's output also in $PTY_TS as it comes (script -f) so the test can
# wait for a line (anchored: its header holds the command line), and its
# stdin the FIFO $PTY_IN, which the test may write
# (script holds it open itself: it never sees EOF).
pty_bg() {
	PTY_IN="$BATS_TEST_TMPDIR/pty-in"
	PTY_TS="$(pty_ts)"
	[ -p "$PTY_IN" ] || mkfifo "$PTY_IN"
	: >"$PTY_TS"
	timeout -k 2 "$AB_CALL_TIMEOUT" script -qfec "$1" "$PTY_TS" <>"$PTY_IN" >"$BATS_TEST_TMPDIR/pty.out" 2>&1 &
	PTY_PID=$!
	BG_PIDS+=("$PTY_PID")
}

@test "-t: what is typed on the terminal reaches the command" {
	pty_bg "$AGENTBOX run --workspace $WS -t -- sh -c 'echo ready; read x; echo got-\$x; exit 5'"
	# typed once the command reads the terminal
	wait_for "$PTY_TS" '^ready' 100
	printf 'abc\n' >"$PTY_IN"
	bounded_wait "$PTY_PID" "$AB_CALL_TIMEOUT"
	output="$(cat "$BATS_TEST_TMPDIR/pty.out")"
	echo "$output"
	[ "$WAIT_RC" -eq 5 ]
	[[ "$(echo "$output" | crlf)" == *got-abc* ]]
}

@test "-t with stdin from a pipe: the data arrives (or a clean 125)" {
	run timeout -k 2 "$AB_CALL_TIMEOUT" bash -c 'printf "abc\n" | "$0" run --workspace "$1" -t -- sh -c "read x; echo got-\$x; exit 5"' \
		"$AGENTBOX" "$WS"
	echo "status=$status $output"
	if [ "$status" -ne 125 ]; then
		[ "$status" -eq 5 ]
		[[ "$(echo "$output" | crlf)" == *got-abc* ]]
	fi
}

@test "-t: the window size is passed in and SIGWINCH is forwarded" {
	# resized once the probe has read the first size (10 s at most)
	pty_bg "stty rows 40 cols 100; sh -c '$AGENTBOX run --workspace $WS -t -- /workspace/probe winch </dev/tty &
		for i in \$(seq 100); do grep -q \"^winch: ready\" $(pty_ts) </dev/null && break; sleep 0.1; done; stty cols 120; wait'"
	bounded_wait "$PTY_PID" "$AB_CALL_TIMEOUT"
	[ "$WAIT_RC" -eq 0 ]
	output="$(crlf <"$BATS_TEST_TMPDIR/pty.out")"
	echo "$output"
	echo "$output" | grep -qx 'winch: ready 40x100'
	echo "$output" | grep -qx 'winch: changed 40x120'
}

# ---- signals ---------------------------------------------------------------------

# runs_comm PID COMM: a descendant of PID is named COMM.
runs_comm() {
	local p
	for p in $(descendants "$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && return 0
	done
	return 1
}

# Start agentbox in the background with default signal dispositions (a
# background job of a script starts with SIGINT ignored), wait for the
# probe to be ready, send SIG to agentbox itself.
signal_roundtrip() {
	local sig="$1" out="$BATS_TEST_TMPDIR/sig.out" pid
	env --default-signal=INT,TERM,HUP "$AGENTBOX" run --workspace "$WS" -- /workspace/probe sigwait 10 \
		</dev/null >"$out" 2>&1 &
	pid=$!
	BG_PIDS+=("$pid")
	wait_for "$out" '^sigwait: ready$'
	kill -"$sig" "$pid"
	bounded_wait "$pid"
	cat "$out"
	[ "$WAIT_RC" -eq 0 ]
	grep -qx "sigwait: SIG$sig" "$out"
}

@test "SIGTERM sent to agentbox is forwarded to the command" {
	signal_roundtrip TERM
}

@test "SIGINT sent to agentbox is forwarded to the command" {
	signal_roundtrip INT
}

@test "SIGHUP sent to agentbox is forwarded to the command" {
	signal_roundtrip HUP
}

@test "a forwarded SIGTERM kills a command with default handling: 143" {
	local out="$BATS_TEST_TMPDIR/sig.out" pid
	env --default-signal=TERM "$AGENTBOX" run --workspace "$WS" -- sh -c 'echo ready; exec sleep 30' \
		</dev/null >"$out" 2>&1 &
	pid=$!
	BG_PIDS+=("$pid")
	wait_for "$out" '^ready$'
	# the shell has exec'd the sleep
	wait_until 100 runs_comm "$pid" sleep
	kill -TERM "$pid"
	bounded_wait "$pid"
	[ "$WAIT_RC" -eq 143 ]
}

@test "--backend native and --backend auto both run" {
	run -0 abrun --backend native -- true
	run -0 abrun --backend auto -- true
}

@test "--network none: only lo exists inside" {
	run -0 abrun --network none -- sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
	[ "$output" = lo ]
}

@test "--nofile N sets RLIMIT_NOFILE" {
	run -0 abrun --nofile 100 -- sh -c 'ulimit -n'
	[ "$output" = 100 ]
}

# cg_read FILE: the content of FILE in whichever of the sandbox's cgroup
# directories (v1 or v2) holds it.
cg_read() {
	local d
	for d in $CG_DIRS; do
		[ -f "$d/$1" ] && { cat "$d/$1"; return 0; }
	done
	return 1
}

# Run a marker sleeper with the given options and set CG_DIRS to the
# cgroup directories it lives in, as the host sees them.
start_limited() {
	local out="$BATS_TEST_TMPDIR/lim.out" sp
	"$AGENTBOX" run --workspace "$WS" "$@" -- /workspace/probe sleeper "$MARK" 20 </dev/null >"$out" 2>&1 &
	BG_PIDS+=("$!")
	wait_for "$out" '^sleeper: ready$'
	sp="$(marker_probe_pids | head -n1)"
	CG_DIRS="$(cgroup_dirs_of "$sp" | grep /agentbox- || true)"
	echo "cgroups: $CG_DIRS"
	[ -n "$CG_DIRS" ]
}

@test "--memory, --pids, --cpus are applied as cgroup limits, swap off" {
	start_limited --memory 100m --pids 50 --cpus 0.5
	local mem swap
	mem="$(cg_read memory.limit_in_bytes || cg_read memory.max)"
	[ "$mem" = 104857600 ]
	if swap="$(cg_read memory.memsw.limit_in_bytes)"; then
		[ "$swap" = 104857600 ]
	elif swap="$(cg_read memory.swap.max)"; then
		[ "$swap" = 0 ]
	fi
	[ "$(cg_read pids.max)" = 50 ]
	local quota period
	if quota="$(cg_read cpu.cfs_quota_us)"; then
		period="$(cg_read cpu.cfs_period_us)"
	else
		read -r quota period <<<"$(cg_read cpu.max)"
	fi
	[ $((quota * 1000 / period)) -eq 500 ]
}

@test "default limits: memory 2g, pids 512" {
	start_limited
	[ "$(cg_read memory.limit_in_bytes || cg_read memory.max)" = $((2 << 30)) ]
	[ "$(cg_read pids.max)" = 512 ]
}

@test "--pids, --memory and --cpus are accepted and a normal command runs" {
	run -0 abrun --pids 64 --memory 256m --cpus 0.5 -- echo fine
	[ "$output" = fine ]
}
