#!/usr/bin/env bats
# agentbox run --network proxy: the sandbox's only way out is the agent's
# listener on 127.0.0.1:3128, served on the host by the egress proxy with
# the sandbox's policy.  agentbox (and so the host side of the proxy) and
# the test origin run in a network namespace this test creates with only lo
# up, so a bug can never send a packet off the machine: the "denied" and
# "no route" addresses below exist nowhere.

load run-common

setup() {
	ab_setup
	WWW="$BATS_TEST_TMPDIR/www"
	mkdir -p "$WWW"
	echo "hello from the origin" >"$WWW/index.html"
}

teardown() {
	ab_teardown
}

# in_netns SCRIPT: run SCRIPT (bash) in a new network namespace with lo up
# and a busybox httpd origin on 127.0.0.2:8080, bounded in time.
in_netns() {
	timeout -k 2 60 unshare --net bash -c '
		ip link set lo up
		busybox httpd -f -p 127.0.0.2:8080 -h "$1" &
		httpd=$!
		for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.2/8080) 2>/dev/null && break; sleep 0.1; done
		bash -c "$2"; rc=$?
		kill "$httpd"; wait "$httpd" 2>/dev/null
		exit "$rc"' _ "$WWW" "$1"
}

@test "--network proxy: curl reaches an allowed origin, gets 403 for a denied one; audit lines written" {
	export AGENTBOX WS
	run in_netns '"$AGENTBOX" run --workspace "$WS" --network proxy --allow-cidr 127.0.0.2/32 \
		--allow-host 127.0.0.2 --audit-log "$WS/audit.log" -- sh -c "
		curl -sS --max-time 10 http://127.0.0.2:8080/
		curl -sS --max-time 10 -o /dev/null -w \"%{http_code}\n\" http://10.1.2.3/
		curl -sS --max-time 10 http://10.1.2.3/"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "hello from the origin" ]
	[ "${lines[1]}" = "403" ]
	[[ "$output" == *"egress denied: "* ]]
	grep -q '"decision":"allow"' "$WS/audit.log"
	grep -q '"host":"10.1.2.3".*"decision":"deny"' "$WS/audit.log"
}

@test "--network proxy: a client that ignores the proxy has no route" {
	export AGENTBOX WS
	run in_netns '"$AGENTBOX" run --workspace "$WS" --network proxy --allow-host "*" -- \
		curl -sS --noproxy "*" --max-time 5 http://10.1.2.3/'
	echo "$output"
	[ "$status" -eq 7 ]
	[[ "$output" == *"Couldn"*"connect"* || "$output" == *"unreachable"* ]]
}

@test "--network proxy: the default policy denies private and loopback addresses of the host" {
	export AGENTBOX WS
	run in_netns '"$AGENTBOX" run --workspace "$WS" --network proxy --allow-host "*" -- sh -c "
		curl -sS --max-time 10 -o /dev/null -w \"%{http_code}\n\" http://127.0.0.2:8080/
		curl -sS --max-time 10 -o /dev/null -w \"%{http_code}\n\" http://169.254.169.254/
		env | grep -c _proxy="'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "403" ]
	[ "${lines[1]}" = "403" ]
	[ "${lines[2]}" = "4" ]
}

@test "egress options without --network proxy are refused" {
	run -125 --separate-stderr "$AGENTBOX" run --workspace "$WS" --allow-host example.com -- true
	[ "$stderr" = "agentbox: egress options need --network proxy" ]
}

# The sandbox's command: says it is up in the workspace, then waits (10 s
# at most) to be let go, so the host looks while it surely runs.
HELD='touch /workspace/up; i=0; while [ ! -e /workspace/go ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done'

# held_run ARGS...: abrun ARGS -- the held command in the background; returns
# once it is up, with HELD_PID the command's host pid.
held_run() {
	local p i
	rm -f "$WS/up" "$WS/go"
	abrun "$@" -- sh -c "$HELD # $MARK" &
	BG_PIDS+=($!)
	HELD_PID=""
	for ((i = 0; i < 100; i++)); do
		if [ -e "$WS/up" ]; then
			for p in $(marker_pids); do
				[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sh ] && HELD_PID="$p"
			done
			[ -n "$HELD_PID" ] && return 0
		fi
		sleep 0.1
	done
	echo "the held command did not come up" >&2
	return 1
}

# Whether PID sits in an agentbox-* group in any hierarchy.
in_agentbox_cgroup() {
	cgroup_dirs_of "$1" | grep -q '/agentbox-[^/]*$'
}

@test "--memory 0 --pids 0 lifts the limits: no cgroup is made for the sandbox" {
	local before after
	before="$(our_agentbox_cgroups | sort)"
	held_run --memory 0 --pids 0 --json-result "$WS/r.json"
	after="$(our_agentbox_cgroups | sort)"
	! in_agentbox_cgroup "$HELD_PID"
	touch "$WS/go"
	wait "${BG_PIDS[-1]}"
	# Only additions count: other sessions' sandboxes come and go meanwhile.
	[ -z "$(comm -13 <(echo "$before") <(echo "$after"))" ]
	[ "$(jq -r .exit_code "$WS/r.json")" = 0 ]
	# and with the default limits one is there while it runs
	held_run --json-result "$WS/r2.json"
	after="$(our_agentbox_cgroups | sort)"
	in_agentbox_cgroup "$HELD_PID"
	touch "$WS/go"
	wait "${BG_PIDS[-1]}"
	[ "$before" != "$after" ]
}
