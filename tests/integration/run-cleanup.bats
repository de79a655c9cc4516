#!/usr/bin/env bats
# agentbox run: nothing of the sandbox is left on the host once it returns,
# also when agentbox itself is killed with SIGKILL in the middle of a run:
# no process, no mount, no agentbox-* cgroup below our own cgroups, no
# temporary file.

load run-common

setup() {
	ab_setup
	BEFORE="$BATS_TEST_TMPDIR/before"
	host_snapshot >"$BEFORE"
	export TMPDIR="$BATS_TEST_TMPDIR/tmpdir"
	mkdir -p "$TMPDIR"
}

teardown() {
	ab_teardown
}

assert_tmpdir_empty() {
	local left
	left="$(ls -A "$TMPDIR")"
	[ -z "$left" ] || {
		echo "left in TMPDIR: $left"
		false
	}
}

@test "after a normal run nothing is left" {
	run -0 abrun -- true
	assert_nothing_left "$BEFORE"
	assert_tmpdir_empty
}

@test "after a run with limits, extra mounts and a json result nothing is left" {
	local d
	d="$(open_tmpdir)"
	HOST_DIRS+=("$d")
	run -0 abrun --memory 128m --pids 32 --cpus 1 --ro "$d:/ro" --tmpfs /scratch \
		--json-result "$BATS_TEST_TMPDIR/r.json" -- sh -c 'echo x >/scratch/f'
	assert_nothing_left "$BEFORE"
	assert_tmpdir_empty
	run ! grep -q "$d" /proc/self/mountinfo
}

@test "after a timeout nothing is left" {
	run -124 abrun --timeout 1s --kill-grace 1s -- /workspace/probe sleeper "$MARK" 20
	[ -z "$(marker_pids)" ]
	assert_nothing_left "$BEFORE"
}

@test "background children are killed when the command exits; run returns promptly" {
	local t0=$SECONDS
	run -0 abrun -- sh -c "/workspace/probe sleeper $MARK 20 >/workspace/s1 & setsid /workspace/probe sleeper $MARK 20 >/workspace/s2 & sleep 0.3; exit 0"
	[ $((SECONDS - t0)) -le 5 ]
	grep -qx 'sleeper: ready' "$WS/s1"
	grep -qx 'sleeper: ready' "$WS/s2"
	local left
	left="$(marker_pids)"
	[ -z "$left" ] || {
		ps -o pid,ppid,args -p "$(echo $left | tr ' ' ,)"
		false
	}
	assert_nothing_left "$BEFORE"
}

# Start a sandbox running the marker sleeper; set AB_PID and record what
# belongs to the sandbox on the host: every process (pid + start time) and
# the cgroup directories of the sleeper.
start_sandbox() {
	local out="$BATS_TEST_TMPDIR/run.out" sp p id i
	"$AGENTBOX" run --workspace "$WS" "$@" -- /workspace/probe sleeper "$MARK" 30 </dev/null >"$out" 2>&1 &
	AB_PID=$!
	BG_PIDS+=("$AB_PID")
	wait_for "$out" '^sleeper: ready$'
	sp="$(marker_probe_pids | head -n1)"
	[ -n "$sp" ]
	SANDBOX_IDS=()
	for p in $(descendants "$AB_PID") $sp; do
		id="$(pid_ident "$p")" && SANDBOX_IDS+=("$id")
	done
	# Ancestors of the sleeper up to (not including) agentbox: the agent and
	# any monitor, even one that was re-parented away from agentbox.
	p="$sp"
	for ((i = 0; i < 8; i++)); do
		p="$(awk '/^PPid:/ { print $2 }' "/proc/$p/status")"
		[ -z "$p" ] || [ "$p" -le 1 ] || [ "$p" = "$AB_PID" ] && break
		id="$(pid_ident "$p")" && SANDBOX_IDS+=("$id")
	done
	SANDBOX_CGROUPS=()
	for p in $(cgroup_dirs_of "$sp"); do
		case "$p" in */agentbox-*) SANDBOX_CGROUPS+=("$p") ;; esac
	done
	echo "sandbox processes: ${SANDBOX_IDS[*]}"
	echo "sandbox cgroups: ${SANDBOX_CGROUPS[*]}"
}

sandbox_processes_alive() {
	local id
	for id in "${SANDBOX_IDS[@]}"; do
		ident_alive "$id" && return 0
	done
	return 1
}

sandbox_cgroups_exist() {
	local d
	for d in "${SANDBOX_CGROUPS[@]}"; do
		[ -d "$d" ] && return 0
	done
	return 1
}

markers_present() {
	[ -n "$(marker_pids)" ]
}

assert_sandbox_gone() {
	if ! wait_gone sandbox_processes_alive; then
		echo "processes left:"
		for id in "${SANDBOX_IDS[@]}"; do
			ident_alive "$id" && ps -o pid,ppid,stat,args -p "${id%%:*}"
		done
		false
	fi
	[ -z "$(marker_pids)" ]
	if ! wait_gone sandbox_cgroups_exist; then
		echo "cgroups left: ${SANDBOX_CGROUPS[*]}"
		false
	fi
	assert_nothing_left "$BEFORE"
	assert_tmpdir_empty
}

@test "the sandbox runs in agentbox-* cgroups below our own" {
	start_sandbox --memory 256m --pids 64
	[ "${#SANDBOX_CGROUPS[@]}" -ge 1 ]
	kill -TERM "$AB_PID"
	bounded_wait "$AB_PID"
	assert_sandbox_gone
}

@test "SIGKILL of agentbox mid-run: nothing is left within 3 s" {
	start_sandbox
	kill -KILL "$AB_PID"
	wait "$AB_PID" 2>/dev/null || true
	assert_sandbox_gone
}

@test "SIGKILL of agentbox mid-run with limits: nothing is left within 3 s" {
	start_sandbox --memory 128m --pids 32 --timeout 60s --tmpfs /scratch
	kill -KILL "$AB_PID"
	wait "$AB_PID" 2>/dev/null || true
	assert_sandbox_gone
}

@test "SIGTERM of agentbox mid-run: nothing is left" {
	start_sandbox
	kill -TERM "$AB_PID"
	bounded_wait "$AB_PID"
	echo "rc=$WAIT_RC"
	[ "$WAIT_RC" -eq 143 ] # 128 + SIGTERM, forwarded to the command
	assert_sandbox_gone
}

@test "SIGKILL of agentbox during start-up (5 tries): nothing is left" {
	local i delay pid
	for i in 1 2 3 4 5; do
		delay="0.0$((i * 2))"
		"$AGENTBOX" run --workspace "$WS" -- /workspace/probe sleeper "$MARK" 30 </dev/null >/dev/null 2>&1 &
		pid=$!
		sleep "$delay"
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	wait_gone markers_present || true
	local left
	left="$(marker_pids)"
	[ -z "$left" ] || {
		ps -o pid,ppid,args -p "$(echo $left | tr ' ' ,)"
		false
	}
	assert_nothing_left "$BEFORE"
	assert_tmpdir_empty
}

# The leftover checks look only in this test's TMPDIR; this proves that is
# where agentbox keeps its temporary files.  In a mount namespace of its
# own whose /tmp, /var/tmp and /dev/shm are empty, read-only tmpfs (the
# test's own directory moved back into place, writable), a run, a failed
# run, a run over protocol v2 (which makes a socket directory), the
# doctor's checks (which make a probe directory) and, where runsc is
# installed, a gVisor run and a failed one must all work, and then the
# three are still empty.  The same runs with TMPDIR unset must fail.
@test "agentbox keeps its temporary files under TMPDIR: /tmp, /var/tmp and /dev/shm are never written" {
	command -v unshare >/dev/null || skip "unshare is missing (util-linux)"
	local script='
		t="$1"; shift
		# The first mount point lies in the test directory: a directory made
		# in the host /tmp would outlive the namespace.
		mkdir -p "$t.keep"
		mount --rbind "$t" "$t.keep"
		for d in /var/tmp /dev/shm; do mount -t tmpfs -o mode=1777 abtest "$d"; done
		keep="$(mktemp -d /var/tmp/keep.XXXXXX)"
		mount --move "$t.keep" "$keep"
		mount -t tmpfs -o mode=1777 abtest /tmp
		mkdir -p "$t"
		mount --move "$keep" "$t"
		rmdir "$keep"
		for d in /tmp /var/tmp /dev/shm; do mount -o remount,ro "$d"; done
		"$@" run --backend native --workspace "$t/ws" -- true
		"$@" run --backend native --workspace "$t/ws" --pids 1 -- true 2>/dev/null && exit 3
		AGENTBOX_RUN_SERVICE=1 "$@" run --backend native --workspace "$t/ws" -- true
		"$@" doctor --backend native --json | grep -q "\"works\": *true"
		if command -v runsc >/dev/null; then
			"$@" run --backend gvisor --workspace "$t/ws" -- true
			"$@" run --backend gvisor --workspace "$t/ws" --memory 4k -- true 2>/dev/null && exit 4
		fi
		echo "/tmp:"; find /tmp -mindepth 1 -maxdepth 1 ! -path "/tmp/$(echo "${t#/tmp/}" | cut -d/ -f1)"
		echo "/var/tmp:"; find /var/tmp -mindepth 1
		echo "/dev/shm:"; find /dev/shm -mindepth 1'
	# The binaries may live under /tmp (a clone there): copies under the
	# test's own directory stay reachable.
	local bin="$BATS_TEST_TMPDIR/bin" f
	mkdir -p "$bin"
	for f in "$AGENTBOX" "$(dirname "$AGENTBOX")/agentbox-full" "$AGENT_BIN" \
		"$(dirname "$AGENTBOX")/agentbox-statx-shim.so"; do
		[ -e "$f" ] && cp "$f" "$bin/"
	done
	run -0 timeout -k 2 60 unshare -m --propagation private bash -euc "$script" _ "$BATS_TEST_TMPDIR" "$bin/agentbox"
	echo "$output"
	[ "$output" = "$(printf '/tmp:\n/var/tmp:\n/dev/shm:')" ]
	# Without TMPDIR, agentbox would write to /tmp: the walls above hold.
	run timeout -k 2 60 env -u TMPDIR unshare -m --propagation private bash -euc "$script" _ "$BATS_TEST_TMPDIR" "$bin/agentbox"
	echo "without TMPDIR: status $status: $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only file system"* ]]
}
