#!/usr/bin/env bats
# agentbox-runc, the OCI runtime mode (docs/oci-runtime.md): driven by the
# engines that call runc — podman 4.3 (conmon), containerd 1.6 (`ctr run
# --runc-binary`: the shim-v2 io.containerd.runc.v2 with BinaryName),
# dockerd (a "runtimes" entry; Docker always adds a prestart hook) — and
# directly with bad bundles.  Every engine runs with private roots, state
# and sockets under this file's temporary directory; the host's podman,
# containerd and docker storage is never touched.

bats_require_minimum_version 1.5.0
: "${BATS_TEST_TIMEOUT:=90}"

ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"

setup_file() {
	local d="$BATS_FILE_TMPDIR"
	export RUNC_BIN="$d/bin/agentbox-runc"
	mkdir -p "$d/bin" "$d/img/bin" "$d/img/tmp" "$d/img/etc" "$d/img/proc" "$d/img/sys" "$d/img/dev" "$d/img/run"
	ln -sf "$AGENTBOX" "$RUNC_BIN"
	# podman's exit command (conmon runs `podman container cleanup`, which
	# calls the runtime's delete) drops --runtime-flag: the private root
	# goes into the runtime podman is given, so every call finds the state.
	export PM_RUNC="$d/bin/agentbox-runc-pm"
	printf '#!/bin/sh\nexec "%s" --root "%s" "$@"\n' "$RUNC_BIN" "$d/oci" >"$PM_RUNC"
	chmod +x "$PM_RUNC"
	cp /bin/busybox "$d/img/bin/busybox"
	for t in $("$d/img/bin/busybox" --list); do
		[ "$t" = busybox ] || ln -sf busybox "$d/img/bin/$t"
	done
	tar -C "$d/img" -cf "$d/busybox.tar" .
	# A default network that is a joined namespace without touching the
	# host: a CNI network of the loopback plugin only.
	mkdir -p "$d/cni"
	cat >"$d/cni/87-podman.conflist" <<-JSON
	{"cniVersion": "0.4.0", "name": "podman", "plugins": [{"type": "loopback"}]}
	JSON
	if command -v podman >/dev/null; then
		pm import "$d/busybox.tar" localhost/busybox:latest >/dev/null
	fi
}

teardown_file() {
	if command -v podman >/dev/null; then
		pm rm -af -t 0 >/dev/null 2>&1 || true
		pm rmi -af >/dev/null 2>&1 || true
	fi
	if [ -n "${CTD_PID:-}" ]; then
		kill "$CTD_PID" 2>/dev/null || true
	fi
}

# A failed or timed-out test still stops the private dockerd it started.
teardown() {
	if [ -n "${DOCKERD_PID:-}${CONTAINERD_PID:-}" ]; then
		load dockerd.bash
		stop_dockerd
	fi
}

pm() {
	local d="$BATS_FILE_TMPDIR"
	timeout 60 podman --root "$d/pm/root" --runroot "$d/pm/run" --tmpdir "$d/pm/tmp" \
		--storage-driver vfs --cgroup-manager cgroupfs --events-backend file \
		--network-config-dir "$d/cni" --runtime "$PM_RUNC" "$@"
}

need() {
	command -v "$1" >/dev/null || skip "$1 not installed"
}

# A bundle for direct runs: the busybox root and runc's default config.
bundle() {
	local b="$BATS_TEST_TMPDIR/b"
	rm -rf "$b"
	mkdir -p "$b"
	cp -a "$BATS_FILE_TMPDIR/img" "$b/rootfs"
	(cd "$b" && "$RUNC_BIN" spec)
	python3 - "$b/config.json" "$@" <<-'PY'
	import json, sys
	p = sys.argv[1]
	c = json.load(open(p))
	c["process"]["terminal"] = False
	c["root"]["readonly"] = False
	c["process"]["args"] = sys.argv[2:] or ["true"]
	json.dump(c, open(p, "w"))
	PY
	echo "$b"
}

rc_() {
	timeout 20 "$RUNC_BIN" --root "$BATS_TEST_TMPDIR/state" "$@"
}

@test "version: three runc-style lines; features and spec" {
	run "$RUNC_BIN" --version
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "runc version "* ]]
	[[ "${lines[1]}" == "commit: "* ]]
	[[ "${lines[2]}" == "spec: 1.0."* ]]
	run "$AGENTBOX" oci features
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c 'import json,sys; f=json.load(sys.stdin); assert "prestart" in f["hooks"]'
	run "$RUNC_BIN" --systemd-cgroup list
	[ "$status" -ne 0 ]
	[[ "$output" == *"not systemd"* ]]
}

@test "direct: run passes the exit status; mounts in config order; walls" {
	b="$(bundle sh -c 'cat /proc/self/mountinfo > /tmp/mi; grep -E " / /(proc|dev|sys)[ /]" /tmp/mi | awk "{print \$5}" | tr "\n" " "; grep Seccomp: /proc/self/status; grep CapEff /proc/self/status; exit 7')"
	run rc_ run -b "$b" t1
	echo "$output"
	[ "$status" -eq 7 ]
	[[ "$output" == *"/proc /dev /dev/pts /dev/shm"* ]]
	[[ "$output" == *"Seccomp:	2"* ]]
	[[ "$output" == *"CapEff:	0000000000000000"* ]]
	# A user namespace although the bundle asks for none: root inside is
	# not root outside.
	b2="$(bundle cat /proc/self/uid_map)"
	run rc_ run -b "$b2" t2
	[ "$status" -eq 0 ]
	[[ "$output" != *" 0 "*"0 "* ]] || [[ "$(echo "$output" | awk '{print $2}')" != 0 ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/state")" ]
}

@test "direct: create, state, start, kill by name and number, delete" {
	b="$(bundle sleep 100)"
	rc_ create -b "$b" --pid-file "$BATS_TEST_TMPDIR/pid" c1 </dev/null >/dev/null 2>&1
	pid="$(cat "$BATS_TEST_TMPDIR/pid")"
	run rc_ state c1
	[[ "$output" == *'"status": "created"'* ]]
	[[ "$output" == *"\"pid\": $pid"* ]]
	run rc_ create -b "$b" c1
	[ "$status" -ne 0 ]
	[[ "$output" == *"exists"* ]]
	rc_ start c1
	run rc_ state c1
	[[ "$output" == *'"status": "running"'* ]]
	run rc_ start c1
	[ "$status" -ne 0 ]
	run rc_ list --format json
	[[ "$output" == *'"id": "c1"'* || "$output" == *'"id":"c1"'* ]]
	run rc_ ps --format json c1
	[[ "$output" == "[$pid,"* ]]
	rc_ kill c1 SIGWINCH
	rc_ kill c1 WINCH
	run rc_ state c1
	[[ "$output" == *'"status": "running"'* ]]
	rc_ kill c1 15
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	# init was our child's child: it is a zombie of this shell's
	# subreaper-less tree or gone; either way stopped.
	run rc_ state c1
	[[ "$output" == *'"status": "stopped"'* ]]
	rc_ delete c1
	run rc_ delete --force c1
	[ "$status" -eq 0 ]
	run rc_ delete c1
	[ "$status" -ne 0 ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/state")" ]
}

@test "direct: a process that ends at once stops the container (20 rounds)" {
	# Its SIGCHLD may come before init waits for it: never lost.
	b="$(bundle true)"
	for i in $(seq 20); do
		rc_ create -b "$b" q$i </dev/null >/dev/null 2>&1
		rc_ start q$i
		for ((k = 0; k < 100; k++)); do
			rc_ state q$i | grep -q '"stopped"' && break
			sleep 0.02
		done
		[ "$k" -lt 100 ]
		rc_ delete q$i
	done
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/state")" ]
}

# bundle_edit FILE PYTHON: change config.json with c bound to it.
bundle_edit() {
	python3 - "$1/config.json" "$2" <<-'PY'
	import json, sys
	p = sys.argv[1]
	c = json.load(open(p))
	exec("\n".join(l.strip() for l in sys.argv[2].splitlines()))
	json.dump(c, open(p, "w"))
	PY
}

@test "direct: the bundle's seccomp profile on top of ours" {
	b="$(bundle sh -c 'mkdir /tmp/x; echo mkdir=$?; touch /tmp/y && echo touch=0; unshare -U true; echo unshare=$?; grep Seccomp_filters /proc/self/status')"
	# Stricter: mkdir refused with EPERM; a name libseccomp does not know is skipped.
	bundle_edit "$b" 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
	    {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
	    {"names": ["no_such_syscall"], "action": "SCMP_ACT_KILL"}]}'
	run rc_ run -b "$b" sc1
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"mkdir=1"* ]]
	[[ "$output" == *"Operation not permitted"* ]]
	[[ "$output" == *"touch=0"* ]]
	[[ "$output" == *"Seccomp_filters:	2"* ]]
	# Looser: allowing everything, unshare included, loosens nothing of ours.
	bundle_edit "$b" 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW",
	    "syscalls": [{"names": ["unshare"], "action": "SCMP_ACT_ALLOW"}]}'
	run rc_ run -b "$b" sc2
	[[ "$output" == *"mkdir=0"* ]]
	[[ "$output" == *"unshare=1"* ]] || [[ "$output" == *"unshare=2"* ]]
	# A profile we cannot honour fails create, with nothing left.
	bundle_edit "$b" 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_NOTIFY"}'
	run rc_ create -b "$b" sc3
	[ "$status" -eq 1 ]
	[[ "$output" == *"SCMP_ACT_NOTIFY"* ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/state")" ]
}

@test "direct: linux.devices are the host's nodes bound in; a missing one is refused" {
	b="$(bundle sh -c 'ls -l /dev/mynull /dev/myfifo; echo x > /dev/mynull && echo write-ok; head -c 3 /dev/myzero | wc -c')"
	bundle_edit "$b" 'c["linux"]["devices"] = [{"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3},
	    {"path": "/dev/myzero", "type": "c", "major": 1, "minor": 5, "fileMode": 511},
	    {"path": "/dev/myfifo", "type": "p"}]'
	run rc_ run -b "$b" dv1
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"1,   3"*"/dev/mynull"* ]]
	[[ "$output" == *"prw"*"/dev/myfifo"* ]]
	[[ "$output" == *write-ok* ]]
	[ "${lines[-1]}" = 3 ]
	# The host's node is not changed by fileMode.
	[ "$(stat -c %a /dev/zero)" = 666 ]
	bundle_edit "$b" 'c["linux"]["devices"] = [{"path": "/dev/nope", "type": "c", "major": 250, "minor": 251}]'
	run rc_ run -b "$b" dv2
	[ "$status" -eq 1 ]
	[[ "$output" == *"no host node c 250:251"* ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/state")" ]
}

@test "direct: in-container hooks, freezer pause, update, delete kills what is left" {
	b="$(bundle sh -c 'cat /tmp/cc /tmp/sc; sleep 100')"
	bundle_edit "$b" 'c["hooks"] = {"createContainer": [{"path": "/bin/sh", "args": ["sh", "-c", "cat > /tmp/cc; echo >> /tmp/cc"]}],
	    "startContainer": [{"path": "/bin/sh", "args": ["sh", "-c", "cat > /tmp/sc; echo >> /tmp/sc"]}]}
	c["linux"]["resources"] = {"memory": {"limit": 67108864}, "pids": {"limit": 40}}'
	rc_ create -b "$b" --pid-file "$BATS_TEST_TMPDIR/pid" u1 </dev/null >"$BATS_TEST_TMPDIR/out" 2>&1
	pid="$(cat "$BATS_TEST_TMPDIR/pid")"
	rc_ start u1
	for _ in $(seq 50); do grep -q '"created"' "$BATS_TEST_TMPDIR/out" && break; sleep 0.1; done
	# The hooks ran in the container (their files are in its /tmp), with the state.
	grep -q '"status":"creating","bundle"' "$BATS_TEST_TMPDIR/out"
	grep -q '"id":"u1".*"status":"created"' "$BATS_TEST_TMPDIR/out"
	[ ! -e /tmp/cc ]
	mem="/sys/fs/cgroup/memory$(grep :memory: /proc/$pid/cgroup | cut -d: -f3)"
	pids="/sys/fs/cgroup/pids$(grep :pids: /proc/$pid/cgroup | cut -d: -f3)"
	[ "$(cat "$mem/memory.limit_in_bytes")" = 67108864 ]
	rc_ update --memory 128m --pids-limit 50 u1
	[ "$(cat "$mem/memory.limit_in_bytes")" = 134217728 ]
	[ "$(cat "$pids/pids.max")" = 50 ]
	echo '{"memory": {"limit": 33554432}, "pids": {"limit": 0}}' | rc_ update --resources - u1
	[ "$(cat "$mem/memory.limit_in_bytes")" = 33554432 ]
	[ "$(cat "$pids/pids.max")" = max ]
	rc_ pause u1
	run rc_ state u1
	[[ "$output" == *'"status": "paused"'* ]]
	! grep -q 'State:.*T' /proc/$pid/status
	# An exec'd process joins the groups; delete --force of the paused
	# container kills everything (thawing first) and removes them.
	rc_ resume u1
	rc_ exec -d u1 sleep 200
	[ "$(wc -l <"$pids/cgroup.procs")" -ge 3 ]
	rc_ pause u1
	rc_ delete --force u1
	[ ! -d "$mem" ] && [ ! -d "$pids" ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/state")" ]
}

@test "direct: run.agentbox.agent from an install under /tmp; a bad agent binary is refused" {
	local agentctl="${HELPERS:-$ROOT_DIR/build/tests}/agentctl"
	[ -x "$agentctl" ] || skip "agentctl not built (make helpers)"
	# A copy of the install in the test's temporary directory (under
	# /tmp, which init's staging tmpfs covers): create captures the agent
	# before init's tree changes, so where it lives does not matter.
	local d="$BATS_TEST_TMPDIR/inst" s="$BATS_TEST_TMPDIR/state"
	mkdir -p "$d"
	cp "$ROOT_DIR/build/agentbox" "$ROOT_DIR/build/agentbox-full" "$ROOT_DIR/build/agentbox-agent" "$d/"
	ln -s agentbox "$d/agentbox-runc"
	b="$(bundle sleep 100)"
	python3 - "$b/config.json" <<-'PY'
	import json, sys
	c = json.load(open(sys.argv[1]))
	c["annotations"] = {"run.agentbox.agent": "true"}
	json.dump(c, open(sys.argv[1], "w"))
	PY
	rc() { timeout 20 "$d/agentbox-runc" --root "$s" "$@"; }
	rc create -b "$b" a1 </dev/null >/dev/null 2>&1
	rc start a1
	run timeout 20 "$agentctl" -s "$s/a1/agent.sock" exec -- sh -c 'echo via-agent; ls /bin/busybox'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *via-agent*/bin/busybox* ]]
	rc delete --force a1
	# The agent must be a regular, executable file: create says which.
	mv "$d/agentbox-agent" "$d/agent.bin"
	mkdir "$d/agentbox-agent"
	run rc create -b "$b" a2
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"run.agentbox.agent"*"$d/agentbox-agent is not a regular file"* ]]
	rmdir "$d/agentbox-agent"
	install -m 0644 "$d/agent.bin" "$d/agentbox-agent"
	run rc create -b "$b" a3
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"run.agentbox.agent"*"$d/agentbox-agent"*"Permission denied"* ]]
	[ -z "$(ls -A "$s")" ]
}

@test "bad bundles: clear errors, nothing left" {
	s="$BATS_TEST_TMPDIR/state"
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	run rc_ create -b "$BATS_TEST_TMPDIR/empty" x1
	[ "$status" -eq 1 ]
	[[ "$output" == *"config.json"* ]]
	b="$(bundle true)"
	echo '{"process": ' >"$b/config.json"
	run rc_ create -b "$b" x2
	[ "$status" -eq 1 ]
	[[ "$output" == *"line"* ]]
	b="$(bundle true)"
	mv "$b/rootfs" "$b/real" && ln -s /etc "$b/rootfs"
	run rc_ create -b "$b" x3
	[ "$status" -eq 1 ]
	[[ "$output" == *"symlink"* ]]
	rm "$b/rootfs" && mv "$b/real" "$b/rootfs"
	rm -rf "$b/rootfs/proc" && ln -s /etc "$b/rootfs/proc"
	run rc_ create -b "$b" x4
	[ "$status" -eq 1 ]
	[[ "$output" == *"/proc"* ]]
	[ -e "$b/rootfs/etc" ] && [ ! -e "$b/rootfs/etc/self" ]
	rm "$b/rootfs/proc" && mkdir "$b/rootfs/proc"
	python3 - "$b/config.json" <<-'PY'
	import json, sys
	c = json.load(open(sys.argv[1]))
	c["hooks"] = {"prestart": [{"path": "/bin/sleep", "args": ["sleep", "30"], "timeout": 1}]}
	json.dump(c, open(sys.argv[1], "w"))
	PY
	start=$SECONDS
	run rc_ create -b "$b" x5
	[ "$status" -eq 1 ]
	[[ "$output" == *"timed out"* ]]
	[ $((SECONDS - start)) -lt 10 ]
	run rc_ create -b "$b" "../x6"
	[ "$status" -eq 1 ]
	[[ "$output" == *"invalid container id"* ]]
	[ -z "$(ls -A "$s" 2>/dev/null)" ]
	! pgrep -f "agentbox-runc --root $s" >/dev/null
}

@test "podman: run, exit status, exec, top, pause/unpause, stop, rm (--network none)" {
	need podman
	run pm run --rm --network none localhost/busybox sh -c 'echo hi; exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" == *hi* ]]
	pm run -d --name p1 --network none --memory 64m --pids-limit 40 localhost/busybox sleep 100
	run pm exec p1 sh -c 'echo in-exec; cat /proc/1/cmdline | tr "\0" " "'
	[ "$status" -eq 0 ]
	[[ "$output" == *in-exec* ]]
	pid="$(pm inspect -f '{{.State.Pid}}' p1)"
	mem="$(grep :memory: /proc/$pid/cgroup | cut -d: -f3)"
	# podman's cgroupsPath (cgroupfs) is where the groups are.
	[ "$mem" = "/libpod_parent/libpod-$(pm inspect -f '{{.Id}}' p1)" ]
	[ "$(cat /sys/fs/cgroup/memory$mem/memory.limit_in_bytes)" = 67108864 ]
	pids="$(grep :pids: /proc/$pid/cgroup | cut -d: -f3)"
	[ "$(cat /sys/fs/cgroup/pids$pids/pids.max)" = 40 ]
	run pm top p1
	[[ "$output" == *"sleep 100"* ]]
	pm pause p1
	[[ "$(pm inspect -f '{{.State.Status}}' p1)" == paused ]]
	# Through the freezer, not SIGSTOP: the task is not stopped ('T').
	grep -qx 'frozen 1' "/sys/fs/cgroup/unified$(grep '^0::' /proc/$pid/cgroup | cut -d: -f3)/cgroup.events"
	! grep -q 'State:.*T' /proc/$pid/status
	pm unpause p1
	[[ "$(pm inspect -f '{{.State.Status}}' p1)" == running ]]
	pm stop -t 5 p1
	pm rm p1
	# Whichever of podman and conmon's cleanup calls our delete, the
	# groups and the state are gone when rm returns.
	[ ! -d "/sys/fs/cgroup/memory$mem" ]
	[ ! -d "/sys/fs/cgroup/pids$pids" ]
	[ -z "$(ls -A "$BATS_FILE_TMPDIR/oci")" ]
}

@test "podman: run --rm and an exec'd process leave no cgroup and no state" {
	need podman
	# An exec'd process is in the container's groups (its limits hold it),
	# and a delete with it still running kills it and removes them.
	pm run -d --name p2 --network none --pids-limit 30 localhost/busybox sleep 100
	pid="$(pm inspect -f '{{.State.Pid}}' p2)"
	pids="$(grep :pids: /proc/$pid/cgroup | cut -d: -f3)"
	pm exec -d p2 sleep 200
	run pm exec p2 sh -c 'grep :pids: /proc/self/cgroup | cut -d: -f3'
	[ "$output" = "$pids" ]
	[ "$(wc -l <"/sys/fs/cgroup/pids$pids/cgroup.procs")" -ge 3 ]
	pm rm -f -t 0 p2
	[ ! -d "/sys/fs/cgroup/pids$pids" ]
	# run --rm: only conmon's cleanup deletes; rm's return waits for it.
	run pm run --rm --network none --pids-limit 20 localhost/busybox sh -c 'grep :pids: /proc/self/cgroup | cut -d: -f3'
	[ "$status" -eq 0 ]
	[[ "$output" == /libpod_parent/libpod-* ]]
	for ((i = 0; i < 50; i++)); do
		[ -d "/sys/fs/cgroup/pids$output" ] || break
		sleep 0.1
	done
	[ ! -d "/sys/fs/cgroup/pids$output" ]
	[ -z "$(ls -A "$BATS_FILE_TMPDIR/oci")" ]
}

@test "podman: run.agentbox.agent puts our agent beside the container (exec and files)" {
	need podman
	local agentctl="${HELPERS:-$ROOT_DIR/build/tests}/agentctl"
	[ -x "$agentctl" ] || skip "agentctl not built (make helpers)"
	pm run -d --name p3 --network none --annotation run.agentbox.agent=true localhost/busybox sleep 100
	id="$(pm inspect -f '{{.Id}}' p3)"
	sock="$BATS_FILE_TMPDIR/oci/$id/agent.sock"
	[ -S "$sock" ]
	# A process through our agent: in the container, behind its walls.
	run timeout 20 "$agentctl" -s "$sock" exec -- sh -c 'echo via-agent; grep -E "^(CapEff|Seccomp):" /proc/self/status; ls /bin/busybox'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *via-agent* ]]
	[[ "$output" == *"CapEff:	0000000000000000"* ]]
	[[ "$output" == *"Seccomp:	2"* ]]
	# Files both ways: what the agent writes, podman's exec reads.
	echo from-host | timeout 20 "$agentctl" -s "$sock" put /tmp/h.txt
	run pm exec p3 cat /tmp/h.txt
	[ "$output" = from-host ]
	pm exec p3 sh -c 'echo from-container > /tmp/c.txt'
	run timeout 20 "$agentctl" -s "$sock" cat /tmp/c.txt
	[ "$output" = from-container ]
	pm rm -f -t 0 p3
	[ ! -e "$sock" ]
	[ -z "$(ls -A "$BATS_FILE_TMPDIR/oci")" ]
}

@test "podman: default network (a joined namespace), run.agentbox.network=none, -it through the console socket" {
	need podman
	run pm run --rm localhost/busybox sh -c 'ip -o link | wc -l; readlink /proc/self/ns/net'
	[ "$status" -eq 0 ]
	[ "$(readlink /proc/self/ns/net)" != "${lines[1]}" ]
	# run.agentbox.network=none: a namespace of the container's own, not
	# the one podman prepared; "proxy" is refused, not silently dropped.
	pm run -d --name p4 --annotation run.agentbox.network=none localhost/busybox sleep 100
	key="$(pm inspect -f '{{.NetworkSettings.SandboxKey}}' p4)"
	[ -n "$key" ]
	run pm exec p4 readlink /proc/self/ns/net
	[ "$output" != "net:[$(stat -L -c %i "$key")]" ]
	[ "$output" != "$(readlink /proc/self/ns/net)" ]
	run pm exec p4 sh -c 'ip -o link | wc -l'
	[ "$output" = 1 ]
	pm rm -f -t 0 p4
	run pm run --rm --network none --annotation run.agentbox.network=proxy localhost/busybox true
	[ "$status" -ne 0 ]
	[[ "$output" == *"run.agentbox.network=proxy is not supported"* ]]
	local d="$BATS_FILE_TMPDIR"
	# podman -it on a terminal of our own (a python pty; `script` ends
	# the session when its stdin ends, before the output arrives).
	run timeout 30 python3 -c '
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=s, stderr=s, start_new_session=True,
                     preexec_fn=lambda: __import__("fcntl").ioctl(0, __import__("termios").TIOCSCTTY, 0))
os.close(s)
out = b""
while True:
    try:
        b = os.read(m, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
sys.stdout.write(out.decode(errors="replace"))
sys.exit(p.wait())
' podman --root "$d/pm/root" --runroot "$d/pm/run" --tmpdir "$d/pm/tmp" --storage-driver vfs \
		--cgroup-manager cgroupfs --events-backend file --runtime "$PM_RUNC" \
		run --rm -it --network none localhost/busybox sh -c 'tty; exit 4'
	[ "$status" -eq 4 ]
	echo "$output"
	[[ "$output" == *"/dev/pts/0"* ]]
}

@test "containerd: ctr run --runc-binary (shim v2, BinaryName) and exec" {
	need containerd
	need ctr
	d="$BATS_FILE_TMPDIR/ctd"
	mkdir -p "$d"
	cat >"$d/config.toml" <<-EOF2
	version = 2
	root = "$d/root"
	state = "$d/state"
	disabled_plugins = ["io.containerd.grpc.v1.cri"]
	[grpc]
	  address = "$d/c.sock"
	[ttrpc]
	  address = "$d/c.sock.ttrpc"
	EOF2
	containerd --config "$d/config.toml" >"$d/log" 2>&1 &
	export CTD_PID=$!
	for _ in $(seq 50); do [ -S "$d/c.sock" ] && break; sleep 0.1; done
	c() { timeout 30 ctr -a "$d/c.sock" "$@"; }
	pm save --format docker-archive -o "$d/bb.tar" localhost/busybox:latest >/dev/null 2>&1
	c images import --snapshotter native "$d/bb.tar" >/dev/null
	run c run --snapshotter native --rm --runc-binary "$RUNC_BIN" --runc-root "$d/runc" localhost/busybox:latest k1 sh -c 'echo from-ctr; exit 5'
	[ "$status" -eq 5 ]
	[[ "$output" == *from-ctr* ]]
	c run --snapshotter native -d --runc-binary "$RUNC_BIN" --runc-root "$d/runc" localhost/busybox:latest k2 sleep 100
	run c task exec --exec-id e1 k2 sh -c 'echo exec-ok; exit 2'
	[ "$status" -eq 2 ]
	[[ "$output" == *exec-ok* ]]
	c task kill -s KILL k2
	for _ in $(seq 50); do c task ls | grep -q 'k2.*STOPPED' && break; sleep 0.1; done
	c task rm k2
	c c rm k2
	kill "$CTD_PID"; wait "$CTD_PID" 2>/dev/null || true
	unset CTD_PID
}

@test "dockerd: docker run --runtime agentbox (with Docker's prestart hook)" {
	need dockerd
	load dockerd.bash
	export DOCKERD_EXTRA_CONFIG=", \"runtimes\": {\"agentbox\": {\"path\": \"${DOCKER_RUNC_WRAP:-$RUNC_BIN}\"}}"
	start_dockerd || skip "docker: $DOCKERD_WHY"
	pm save --format docker-archive -o "$BATS_TEST_TMPDIR/bb.tar" localhost/busybox:latest >/dev/null 2>&1
	timeout 60 "$DOCKER" load -i "$BATS_TEST_TMPDIR/bb.tar" >/dev/null
	run timeout 60 "$DOCKER" run --rm --runtime agentbox --network none localhost/busybox sh -c 'echo from-docker; exit 6'
	stop_dockerd
	echo "$output"
	[ "$status" -eq 6 ]
	[[ "$output" == *from-docker* ]]
}
