#!/usr/bin/env bats
# The gVisor backend (runsc, Debian's package): probe, `agentbox run` and
# the daemon with --backend gvisor, the /etc masks, the agent's door
# attacked from inside, the inner layers, limits, the file service's
# openat2 walk (gVisor has no openat2), and that nothing is left after a
# destroy or a killed monitor.  The behaviour every backend shares is in
# conformance.bats.  Needs root (runsc runs rootful).

load daemon-common.bash

setup() {
	if ! command -v runsc >/dev/null 2>&1 && [ -z "${AGENTBOX_RUNSC:-}" ]; then
		echo "runsc is not installed (scripts/install-deps test)" >&2
		return 1
	fi
	daemon_setup
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	export AGENTBOX_CACHE_DIR="$BATS_FILE_TMPDIR/cache"
}

teardown() {
	[ -n "${D:-}" ] && daemon_teardown
	true
}

abrun_gvisor() {
	timeout -k 2 60 "$AGENTBOX" run --backend gvisor --workspace "$WS" "$@" </dev/null
}

# Processes of this test's sandboxes: runsc and its gofer and sandbox all
# carry --root=<our state dir>/... on their command line.
our_runsc() {
	pgrep -f -- "--root=$STATE/sandboxes/" 2>/dev/null || true
}

runsc_running() {
	[ -n "$(our_runsc)" ]
}

# settle CMD...: poll (at most SETTLE_TENTHS tenths, default 100 = 10 s:
# runsc's own teardown takes a while) until CMD fails.
settle() {
	local i
	for ((i = 0; i < ${SETTLE_TENTHS:-100}; i++)); do
		"$@" || return 0
		sleep 0.1
	done
	return 1
}

# The private directory of daemon sandbox ID.
sandbox_dir() {
	echo "$STATE/sandboxes/$1/agent.sock.d"
}

# The host cgroup of sandbox ID: the monitor makes it, named as runsc's
# container ("agentbox-<backend id>", the prefix of runsc's state files),
# and runsc runs in it (its bundle's cgroupsPath is ".", without resources).
sandbox_cgroup() {
	local dir f
	dir="$(sandbox_dir "$1")"
	[ "$(jq -r '.linux.cgroupsPath' "$dir/config.json")" = . ] || return 1
	[ "$(jq -c '.linux.resources' "$dir/config.json")" = '{}' ] || return 1
	for f in "$dir"/state/agentbox-*.state; do
		f="${f##*/}"
		echo "${f%%_sandbox:*}"
		return 0
	done
	return 1
}

# Its directories in every hierarchy (below the monitor's own group).
cgroup_dirs() {
	[ -n "$1" ] && find /sys/fs/cgroup -maxdepth 6 -type d -name "$1" 2>/dev/null
	true
}

cgroup_exists() {
	[ -n "$(cgroup_dirs "$1")" ]
}

# cgroup_value NAME FILE: the first hierarchy of NAME that has FILE.
cgroup_value() {
	local d
	for d in $(cgroup_dirs "$1"); do
		[ -f "$d/$2" ] && { cat "$d/$2"; return 0; }
	done
	return 1
}

# In-sandbox python (the host's /usr is bound read-only inside).
PY=/usr/bin/python3

@test "probe: doctor runs a sandbox through runsc and names its version; a missing runsc is named" {
	run ab doctor --backend gvisor --json
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.backends[0].works == true'
	reason="$(echo "$output" | jq -r '.backends[0].reason')"
	[[ "$reason" == "runsc "*": started a sandbox and ran \`true\`"* ]]
	echo "$output" | jq -e '.backends[0].features | index("limits")'
	echo "$output" | jq -e '.backends[0].features | index("network-proxy")'
	echo "$output" | jq -e '.backends[0].features | index("fd-passing") | not'

	run env AGENTBOX_RUNSC=/nonexistent/runsc "$AGENTBOX" doctor --backend gvisor --json
	echo "$output" | jq -e '.backends[0].works == false'
	[[ "$(echo "$output" | jq -r '.backends[0].reason')" == *"AGENTBOX_RUNSC=/nonexistent/runsc"* ]]
	run env AGENTBOX_RUNSC=/bin/true "$AGENTBOX" doctor --backend gvisor --json
	echo "$output" | jq -e '.backends[0].works == false'
	[[ "$(echo "$output" | jq -r '.backends[0].reason')" == *"did not answer as runsc does"* ]]
	# An explicit choice that cannot work is an error, never a fallback.
	run --separate-stderr env AGENTBOX_RUNSC=/nonexistent/runsc \
		timeout 30 "$AGENTBOX" run --backend gvisor --workspace "$WS" -- true
	[ "$status" -ne 0 ]
	[[ "$stderr" == *runsc* ]]
}

@test "run: stdout, stderr, exit code and the sandbox layout on gVisor" {
	run --separate-stderr abrun_gvisor --hostname box1 -- sh -c 'echo out; echo err >&2; exit 42'
	[ "$status" -eq 42 ]
	[ "$output" = out ]
	[ "$stderr" = err ]
	run abrun_gvisor --hostname box1 -- sh -c '
		hostname; id -u
		/usr/bin/python3 -c "import os; print(*os.listdir(\"/sys/class/net\"))"
		echo hi >/workspace/w && echo ws-ok
		touch /usr/x 2>/dev/null || echo usr-ro
		touch /x 2>/dev/null || echo root-ro
		[ -e /home ] || [ -e /root ] || [ -e /var ] || echo no-host-dirs
		echo tmp >/tmp/t && cat /tmp/t'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "box1
0
lo
ws-ok
usr-ro
root-ro
no-host-dirs
tmp" ]
	[ "$(cat "$WS/w")" = hi ]
}

@test "inner layers under gVisor: no capabilities, no_new_privs, seccomp; unshare(CLONE_NEWUSER) and mount get EPERM" {
	run abrun_gvisor -- $PY -c '
import ctypes, errno
l = ctypes.CDLL(None, use_errno=True)
st = dict(x.split(":\t", 1) for x in open("/proc/self/status").read().splitlines() if ":\t" in x)
print("CapEff", st["CapEff"], "CapPrm", st["CapPrm"], "CapBnd", st["CapBnd"], "Seccomp", st["Seccomp"])
print("nnp", l.prctl(39, 0, 0, 0, 0))  # PR_GET_NO_NEW_PRIVS
r = l.unshare(0x10000000); print("unshare", r, errno.errorcode.get(ctypes.get_errno()))
r = l.mount(b"x", b"/tmp", b"tmpfs", 0, None); print("mount", r, errno.errorcode.get(ctypes.get_errno()))
r = l.setuid(0); print("setuid0", r)'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"CapEff 0000000000000000 CapPrm 0000000000000000 CapBnd 0000000000000000 Seccomp 2"* ]]
	[[ "$output" == *"nnp 1"* ]]
	[[ "$output" == *"unshare -1 EPERM"* ]]
	[[ "$output" == *"mount -1 EPERM"* ]]
}

@test "host trees (/etc, /usr, /lib...): nothing that others cannot read on the host is readable inside (sandbox root is host root)" {
	# The host's unreadable entries in every tree the sandbox gets (not only
	# /etc: /usr/share/polkit-1/rules.d, say), and one at least.
	unreadable="$(find /etc /usr /bin /sbin /lib /lib64 -xdev \( -type f -o -type d \) ! -perm -o=r 2>/dev/null)"
	echo "closed to others on this host: $(echo "$unreadable" | grep -vc '^/etc/') outside /etc"
	[ -n "$unreadable" ]
	[[ "$unreadable" == *"/etc/shadow"* ]]
	for user in 0 1000; do
		run abrun_gvisor --user "$user" -- $PY -c '
import os, sys
for p in sys.argv[1:]:
    try:
        got = os.listdir(p) if os.path.isdir(p) else open(p, "rb").read()
        print("READ", p, len(got))
    except PermissionError:
        print("denied", p)
print(open("/etc/passwd").readline().split(":")[0])' $unreadable /etc/ssl/private /etc/shadow
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" != *READ* ]]
		[[ "$output" == *"denied /etc/shadow"* ]]
		[[ "$output" == *"denied /etc/ssl/private"* ]]
		[ "${lines[-1]}" = root ]
	done
}

@test "the agent's door: a command cannot get a session, nor remove or replace the socket" {
	daemon_start
	id="$(ab create --backend gvisor --workspace "$WS")"
	run ab exec "$id" -- $PY -c '
import os, socket
s = socket.socket(socket.AF_UNIX); s.settimeout(3)
try:
    s.connect("/.agentbox/agent.sock")
    # Connected: the agent must close it at once (SO_PEERCRED pid is not
    # 0 or 1), before any HELLO; nothing may come back.
    s.sendall(b"\0" * 64)
    data = s.recv(4096)
    print("closed-without-hello" if data == b"" else "GOT-BYTES %r" % data[:16])
except socket.timeout:
    print("TIMEOUT")
except OSError as e:
    print("refused", e.errno)
for f in (lambda: os.unlink("/.agentbox/agent.sock"),
          lambda: os.rename("/.agentbox/agent.sock", "/.agentbox/x"),
          lambda: socket.socket(socket.AF_UNIX).bind("/.agentbox/evil.sock"),
          lambda: os.listdir("/.agentbox"),
          lambda: open("/.agentbox/agentbox-agent", "ab")):
    try:
        f(); print("ALLOWED")
    except OSError as e:
        print("denied", e.errno)'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "closed-without-hello" || "${lines[0]}" == "refused "* ]]
	[[ "$output" != *ALLOWED* ]]
	[[ "$output" != *GOT-BYTES* ]]
	[[ "$output" != *TIMEOUT* ]]
	# The host still reaches its agent, through the service socket link.
	[ -L "$STATE/sandboxes/$id/agent.sock" ]
	run ab exec "$id" -- echo still-the-door
	[ "$output" = still-the-door ]
	ab rm -f "$id"
}

@test "daemon: create, exec, files (with the openat2 walk) and destroy; nothing left" {
	daemon_start
	run ab create --backend gvisor --workspace "$WS"
	[ "$status" -eq 0 ]
	id="$output"
	[ "$(api "/v1/sandboxes/$id" | jq -r .backend)" = gvisor ]
	cg="$(sandbox_cgroup "$id")"
	cgroup_exists "$cg"
	[ -n "$(our_runsc)" ]
	run --separate-stderr ab exec "$id" -- sh -c 'echo out; echo err >&2; echo hi >/workspace/from-exec; exit 3'
	[ "$status" -eq 3 ]
	[ "$output" = out ]
	[ "$stderr" = err ]
	[ "$(cat "$WS/from-exec")" = hi ]
	echo "$MARK" >"$BATS_TEST_TMPDIR/in.txt"
	ab exec "$id" -- mkdir -p /workspace/d
	ab cp "$BATS_TEST_TMPDIR/in.txt" "$id:/workspace/d/in.txt"
	run ab exec "$id" -- cat /workspace/d/in.txt
	[ "$output" = "$MARK" ]
	# Symlinks made inside: one stays beneath the root, two lead out.
	ab exec "$id" -- sh -c 'ln -s d /workspace/in; ln -s /etc/passwd /workspace/abs; ln -s ../../etc/passwd /workspace/d/up'
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/in/in.txt")" = 200 ]
	[ "$(cat "$D/body")" = "$MARK" ]
	# Reads resolve inside the sandbox's root, as for its processes: both
	# links give the sandbox's /etc/passwd; a `..` of the caller's is refused.
	ab exec "$id" -- cat /etc/passwd >"$BATS_TEST_TMPDIR/passwd.in"
	for p in /workspace/abs /workspace/d/up; do
		[ "$(api_status "/v1/sandboxes/$id/files?path=$p")" = 200 ]
		cmp "$D/body" "$BATS_TEST_TMPDIR/passwd.in"
	done
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/../etc/passwd")" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/d&list=1")" = 200 ]
	jq -e '.entries | map(.name) | index("in.txt") and index("up")' "$D/body"
	# Writing through the absolute link replaces the link, never the target.
	api "/v1/sandboxes/$id/files?path=/workspace/abs" -X PUT --data-binary x >/dev/null
	[ ! -L "$WS/abs" ]
	grep -q '^root:' /etc/passwd

	mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
	run ab rm -f "$id"
	[ "$status" -eq 0 ]
	monitor_gone "$mon"
	[ -z "$(our_runsc)" ]
	[ ! -e "$STATE/sandboxes/$id" ]
	! cgroup_exists "$cg"
	assert_nothing_left "$SNAPSHOT"
}

@test "limits: pids stop forks with EAGAIN and the sandbox lives on; cpu quota on the host cgroup; over the memory limit the sandbox is killed" {
	daemon_start
	# 256m: the fork flood's 22 Pythons (each writes a few MiB of its
	# copied heap) come near 128m under gVisor, and a busy host tipped
	# them over it (the sentry OOM-killed mid-flood: "the agent closed
	# the connection").
	id="$(ab create --backend gvisor --no-workspace --memory 256m --pids 24 --cpus 0.5)"
	cg="$(sandbox_cgroup "$id")"
	# cgroup v1 files (this host); v2 would be cpu.max and memory.max.
	q="$(cgroup_value "$cg" cpu.cfs_quota_us || cgroup_value "$cg" cpu.max)"
	[ "${q%% *}" = 50000 ]
	m="$(cgroup_value "$cg" memory.limit_in_bytes || cgroup_value "$cg" memory.max)"
	[ "$m" = 268435456 ]
	run ab exec "$id" -- $PY -c '
import os, time
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
    print("FORKED", n)
except OSError as e:
    print("stopped after", n, e.errno, flush=True)
# Reap the children (each sleeps 3 s): when this exec returns their pids
# are free again, with no guess at how long that takes.
while True:
    try:
        os.wait()
    except ChildProcessError:
        break'
	echo "$output"
	[[ "$output" == "stopped after "*" 11" ]] # EAGAIN
	n="$(echo "$output" | awk '{print $3}')"
	# At the limit, less the agent, the commands' reaper and Python: 21
	# when idle; gVisor's count is loose under load (pids_bound).
	[ "$n" -ge 18 ] && [ "$n" -lt "$(pids_bound 24 gvisor)" ]
	run ab exec "$id" -- echo still-up
	[ "$output" = still-up ]
	# The limit's control files are out of reach of the commands.
	run ab exec "$id" -- sh -c 'echo max >/dev/.agentbox-pids/cg/sandbox/pids.max && echo RAISED'
	[[ "$output" != *RAISED* ]]

	mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
	run ab exec "$id" -- $PY -c '
b = []
for i in range(40):
    b.append(bytearray(16 << 20))'
	[ "$status" -ne 0 ]
	monitor_gone "$mon"
	settle cgroup_exists "$cg"
	! cgroup_exists "$cg"
	[ -z "$(our_runsc)" ]
	[ "$(api "/v1/sandboxes/$id" | jq -r .state)" = dead ]
	ab rm -f "$id"
}

# The agentbox-* cgroups of ours that were not there when the test began.
# Only additions count: other sessions start and end sandboxes meanwhile,
# and one caught in CG_BEFORE half made or half removed (its memory group,
# which tells it apart as theirs, not there yet or any more) may be gone
# or look different later; that is not this test's to judge.
cgroups_added() {
	comm -13 <(echo "$CG_BEFORE") <(our_agentbox_cgroups)
}

cgroups_differ() {
	[ -n "$(cgroups_added)" ]
}

# The agentbox-* group that PID is in (the sandbox's own, named as runsc's
# container), from any hierarchy.
cgroup_of_pid() {
	sed -n 's|^[0-9]*:[^:]*:.*/\(agentbox-[^/]*\)$|\1|p' "/proc/$1/cgroup" 2>/dev/null | head -n 1
}

# This test's monitor (agentbox-mon, forked from `agentbox run`: its
# command line holds $WS).
run_monitor() {
	local p
	for p in $(pgrep -f -- "--workspace $WS" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentbox-mon ] && echo "$p"
	done
	true
}

@test "run: over --memory the whole sandbox is OOM-killed: exit 137 with oom_killed; no cgroup or process left, after SIGKILL of run or SIGTERM of the monitor either" {
	local r="$BATS_TEST_TMPDIR/r.json" how pid mon keeper rs kids p t0
	CG_BEFORE="$(our_agentbox_cgroups)"
	run abrun_gvisor --memory 64m --json-result "$r" -- $PY -c '
b = bytearray(256 << 20)
b[::4096] = b"x" * len(b[::4096])
print("ALLOCATED")'
	echo "$output"
	cat "$r"
	[ "$status" -eq 137 ]
	[[ "$output" != *ALLOCATED* ]]
	[[ "$output" != *"went away"* ]]
	jq -e '.oom_killed == true and .signal == 9 and .exit_code == 137' "$r"
	# the v1 peak may pass the limit by what one charge brings before the
	# OOM kill (a page was seen); a batch (64 pages) is the bound here
	jq -e '.peak_memory_bytes > 0 and .peak_memory_bytes <= 67108864 + 262144' "$r"
	# The monitor removes the group after runsc ended (up to runsc's stop
	# timeout, 15 s, on a loaded host): 30 s.
	SETTLE_TENTHS=300 settle cgroups_differ
	[ -z "$(cgroups_added)" ]

	for how in kill-run term-monitor; do
		# Not under timeout(1): SIGKILL must reach agentbox run itself.
		"$AGENTBOX" run --backend gvisor --workspace "$WS" --memory 64m \
			-- sleep 120 </dev/null >/dev/null 2>&1 &
		pid=$!
		# Up to runsc's start timeout (20 s) on a loaded host: 30 s.
		for _ in $(seq 300); do
			mon="$(run_monitor)"
			[ -n "$mon" ] && keeper="$(pgrep -P "$mon" -x agentbox-runsc)" &&
				rs="$(pgrep -P "$keeper" -x runsc)" && [ -n "$(pgrep -P "$rs")" ] &&
				cg="$(cgroup_of_pid "$rs")" && [ -n "$cg" ] && break
			sleep 0.1
		done
		kids="$(pgrep -P "$rs" | tr '\n' ' ')"
		echo "$how: run $pid monitor $mon keeper $keeper runsc $rs: $kids; cgroup $cg"
		[ -n "$kids" ]
		cgroup_exists "$cg"
		cgroups_differ
		t0=$SECONDS
		if [ "$how" = kill-run ]; then kill -KILL "$pid"; else kill -TERM "$mon"; fi
		wait "$pid" || true
		# The sandbox's own group gone, then nothing else of ours either.
		SETTLE_TENTHS=300 settle cgroup_exists "$cg"
		! cgroup_exists "$cg"
		SETTLE_TENTHS=300 settle cgroups_differ
		[ -z "$(cgroups_added)" ]
		# Not the end of `sleep 120`: it is the kill that ended the sandbox.
		# The two waits above take at most 30 s each on a loaded host.
		[ $((SECONDS - t0)) -le 60 ]
		for p in $mon $keeper $rs $kids; do
			! kill -0 "$p" 2>/dev/null
		done
	done
}

@test "a killed monitor takes its sandbox with it: no runsc, gofer, sandbox, state, cgroup or socket left" {
	daemon_start
	id="$(ab create --backend gvisor --no-workspace --memory 256m)"
	cg="$(sandbox_cgroup "$id")"
	cgroup_exists "$cg"
	mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
	keeper="$(pgrep -P "$mon" -x agentbox-runsc)"
	[ -n "$keeper" ]
	[ -n "$(our_runsc)" ]
	kill -KILL "$mon"
	settle runsc_running
	[ -z "$(our_runsc)" ]
	! kill -0 "$keeper" 2>/dev/null
	settle cgroup_exists "$cg"
	! cgroup_exists "$cg"
	[ ! -e "$(sandbox_dir "$id")" ]
	[ ! -e "$STATE/sandboxes/$id/agent.sock" ]
	ab rm -f "$id"
}

@test "a killed keeper or runsc: the sandbox ends and the monitor cleans up after them" {
	daemon_start
	for victim in agentbox-runsc runsc; do
		id="$(ab create --backend gvisor --no-workspace --memory 256m)"
		cg="$(sandbox_cgroup "$id")"
		cgroup_exists "$cg"
		mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
		keeper="$(pgrep -P "$mon" -x agentbox-runsc)"
		if [ "$victim" = runsc ]; then
			kill -KILL "$(pgrep -P "$keeper" -x runsc)"
		else
			kill -KILL "$keeper"
		fi
		monitor_gone "$mon" || monitor_gone "$mon"
		settle runsc_running
		[ -z "$(our_runsc)" ]
		settle cgroup_exists "$cg"
		! cgroup_exists "$cg"
		[ ! -e "$(sandbox_dir "$id")" ]
		ab rm -f "$id"
	done
}
