#!/usr/bin/env bats
# The daemon's forwarded ports on the stream path (what gVisor and the
# microVM use: their walls cannot pass fds), forced on the native backend
# with AGENTBOX_EGRESS_STREAM=1: each connection made inside to the egress
# listener (3128) or the credential proxy's (8288) is announced by the
# agent, claimed by the daemon on an agent connection of its own and
# relayed as a channel into the same egress / credential proxy as the fd
# passing path.  The daemon, its sandboxes and the origins (busybox httpd
# and tests/helpers/egress-origin on 127.0.0.2, a fake TLS upstream for the
# credential test) run in a network namespace holding only lo
# (credential/common.bash), so nothing can leave the machine.

load netns-daemon

: "${BATS_TEST_TIMEOUT:=240}"
: "${HELPERS:=$ROOT_DIR/build/tests}"

setup() {
	cred_setup
	D="$T/d"
	SOCK="$D/run/agentbox.sock"
	STATE="$D/state"
	mkdir -p "$D"
	export AGENTBOX_HOST="$SOCK"
	DAEMON_PID=""
	[ -x "$HELPERS/egress-origin" ] || {
		echo "need $HELPERS/egress-origin (make BUILD=... \$BUILD/tests/egress-origin)" >&2
		return 1
	}
	WWW="$T/www"
	mkdir -p "$WWW"
	echo "hello from the origin" >"$WWW/index.html"
	head -c 1048576 /dev/urandom >"$WWW/mid"
	# /cgi-bin/slow?N: the 1 MiB file after N seconds, so that many
	# connections are open at once whatever the client's speed
	mkdir -p "$WWW/cgi-bin"
	printf '#!/bin/sh\nsleep "${QUERY_STRING:-2}"\nprintf "Content-Type: application/octet-stream\\r\\n\\r\\n"\nexec cat ../mid\n' \
		>"$WWW/cgi-bin/slow"
	chmod +x "$WWW/cgi-bin/slow"
	inns_bg busybox httpd -f -p 127.0.0.2:8080 -h "$WWW"
	inns_bg "$HELPERS/egress-origin" --addr 127.0.0.2 --port 8081 >"$T/origin.out"
	wait_port 8080
	wait_port 8081
}

teardown() {
	netns_daemon_teardown
}

wait_port() {
	local i
	for ((i = 0; i < 50; i++)); do
		inns bash -c "exec 3<>/dev/tcp/127.0.0.2/$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "nothing listens on 127.0.0.2:$1" >&2
	return 1
}

# daemon_start STREAM: the daemon in the test's namespace (STREAM=1 forces
# the stream path).
daemon_start() {
	netns_daemon_start "$1"
}

ab() {
	timeout -k 2 120 "$AGENTBOX" "$@"
}

# create_proxy: a native sandbox with network "proxy" that may reach
# 127.0.0.2 (and only that); audit log in $T/audit.log.
create_proxy() {
	api /v1/sandboxes -d "{\"backend\": \"native\", \"network\": \"proxy\", \"egress\": {\"allow_hosts\": [\"127.0.0.2\"],
		\"allow_cidrs\": [\"127.0.0.2/32\"], \"audit_log\": \"$T/audit.log\"}}" | jq -er .id
}

# agent_conns ID: connections open to sandbox ID's agent socket, as the
# kernel lists them in the daemon's namespace (the listener not counted).
agent_conns() {
	local n
	n="$(grep -c "$STATE/sandboxes/$1/" "/proc/$DAEMON_PID/net/unix" || true)"
	echo $((n > 0 ? n - 1 : 0))
}

# sandbox_pid ID: a process of sandbox ID (the monitor's child), in its
# namespaces.
sandbox_pid() {
	local mon
	mon="$(api "/v1/sandboxes/$1" | jq -r .monitor_pid)"
	pgrep -P "$mon" | head -n 1
}

# proxy_clients PID: TCP connections established to the egress listener
# (port 3128) in the network namespace of PID, from the client side.
proxy_clients() {
	# each socket once: the table is read a page at a time while it changes
	awk '$3 ~ /:0C38$/ && $4 == "01" { print $2 }' "/proc/$1/net/tcp" 2>/dev/null | sort -u | wc -l
}

# wait_conns N CMD...: until CMD prints a number >= N (at most 20 s); sets
# CONNS to the last number it printed.
wait_conns() {
	local want="$1" i
	shift
	for ((i = 0; i < 200; i++)); do
		CONNS="$("$@")"
		[ "$CONNS" -ge "$want" ] && return 0
		sleep 0.1
	done
	echo "$*: wanted $want at least, got $CONNS" >&2
	return 1
}

# end_hold PID: end the `sleep 20` running in the pid namespace of PID (it
# holds a command back until the test lets it go); waits 10 s for it.
end_hold() {
	local ns p i
	ns="$(readlink "/proc/$1/ns/pid")"
	for ((i = 0; i < 100; i++)); do
		for p in $(pgrep -x sleep); do
			[ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$ns" ] || continue
			[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "sleep 20 " ] || continue
			kill -TERM "$p" && return 0
		done
		sleep 0.1
	done
	echo "no sleep 20 in the sandbox of $1" >&2
	return 1
}

# at_least N CMD...: 1 when CMD prints a number >= N.
at_least() {
	local n="$1"
	shift
	[ "$("$@")" -ge "$n" ] && echo 1 || echo 0
}

# monitor_state PID: "gone" once the monitor ended (a zombie waiting for
# init to reap it counts as ended).
monitor_state() {
	if [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null \
		|| [ "$(cat "/proc/$1/comm" 2>/dev/null)" != agentbox-mon ]; then
		echo gone
	else
		echo running
	fi
}

daemon_threads() {
	ls "/proc/$DAEMON_PID/task" | wc -l
}

daemon_fds() {
	ls "/proc/$DAEMON_PID/fd" | wc -l
}

# wait_equal N CMD...: until CMD prints N (at most 10 s).
wait_equal() {
	local want="$1" i got=""
	shift
	for ((i = 0; i < 100; i++)); do
		got="$("$@")"
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	echo "$*: wanted $want, got $got" >&2
	return 1
}

allowed_and_denied() {
	run -0 ab exec "$1" -- sh -c '
		curl -sS --max-time 20 http://127.0.0.2:8080/
		curl -sS --max-time 20 -o /dev/null -w "%{http_code}\n" http://10.1.2.3/
		curl -sS --max-time 20 -o /dev/null -w "%{http_code}\n" http://169.254.169.254/
		curl -sS --max-time 20 -p -o /dev/null -w "%{http_connect}\n" http://10.1.2.3/ 2>/dev/null || true'
	echo "$output"
	[ "${lines[0]}" = "hello from the origin" ]
	[ "${lines[1]}" = 403 ]
	[ "${lines[2]}" = 403 ]
	[ "${lines[3]}" = 403 ]
	grep -q '"host":"10.1.2.3".*"decision":"deny"' "$T/audit.log"
	grep -q '"decision":"allow"' "$T/audit.log"
}

@test "stream: curl through the proxy reaches an allowed origin; denied hosts get 403" {
	daemon_start 1
	id="$(create_proxy)"
	allowed_and_denied "$id"
	# and the daemon really claimed them on connections of their own: ten
	# slow downloads hold ten agent connections besides the subscriber
	sb="$(sandbox_pid "$id")"
	ab exec "$id" -- sh -c 'for i in $(seq 10); do
		curl -sS --max-time 30 -o /dev/null "http://127.0.0.2:8080/cgi-bin/slow?5" & done; wait' &
	cl=$!
	# while all ten are connected
	wait_conns 10 proxy_clients "$sb"
	wait_conns 11 agent_conns "$id" || true
	n="$CONNS"
	wait "$cl"
	echo "agent connections during 10 downloads: $n"
	[ "$n" -ge 11 ]
}

@test "fd passing stays the native default: the same traffic, no connection per stream" {
	daemon_start 0
	id="$(create_proxy)"
	allowed_and_denied "$id"
	sb="$(sandbox_pid "$id")"
	ab exec "$id" -- sh -c 'for i in $(seq 10); do
		curl -sS --max-time 30 -o /dev/null "http://127.0.0.2:8080/cgi-bin/slow?5" & done; wait' &
	cl=$!
	# while all ten are connected
	wait_conns 10 proxy_clients "$sb"
	n="$(agent_conns "$id")"
	wait "$cl"
	echo "agent connections during 10 downloads: $n"
	[ "$n" -le 3 ]
}

@test "stream: 16 MiB down and up through CONNECT arrive intact" {
	head -c 16777216 /dev/urandom >"$WWW/big"
	want="$(sha256sum <"$WWW/big" | cut -d' ' -f1)"
	daemon_start 1
	id="$(create_proxy)"
	run -0 ab exec "$id" -- sh -c 'curl -sS --max-time 90 -p http://127.0.0.2:8080/big | sha256sum'
	[ "${output%% *}" = "$want" ]
	# upload: /echo sends the body back, so both directions carry 16 MiB
	run -0 ab exec "$id" -- sh -c 'head -c 16777216 /dev/urandom >/tmp/up
		sha256sum </tmp/up
		curl -sS --max-time 90 -p -H "Expect:" -T /tmp/up http://127.0.0.2:8081/echo | sha256sum
		curl -sS --max-time 90 -p -H "Expect:" -T /tmp/up -o /dev/null -w "%{size_upload} %{size_download}\n" \
			http://127.0.0.2:8081/echo'
	echo "$output"
	[ "${lines[0]%% *}" = "${lines[1]%% *}" ]
	[ "${lines[2]}" = "16777216 16777216" ]
	[ "$(grep -c '"method":"CONNECT".*"decision":"allow"' "$T/audit.log")" -ge 3 ]
}

@test "stream: 50 connections at once all complete" {
	want="$(sha256sum <"$WWW/mid" | cut -d' ' -f1)"
	daemon_start 1
	id="$(create_proxy)"
	sb="$(sandbox_pid "$id")"
	# Each download lasts 8 s: all 50 are open at once for a while even on
	# a loaded host; the counts are taken when they are (20 s at most).
	ab exec "$id" -- sh -c '
		for i in $(seq 50); do
			curl -sS --max-time 60 -o /tmp/c$i "http://127.0.0.2:8080/cgi-bin/slow?8" &
		done
		# established connections to the egress listener, from the client
		# side, each once: /proc/net/tcp is read a page at a time while
		# the table changes, so a socket can be listed twice
		for j in $(seq 200); do
			c=$(awk "\$3 ~ /:0C38\$/ && \$4 == \"01\" { print \$2 }" /proc/net/tcp | sort -u | wc -l)
			[ "$c" -ge 50 ] && break
			sleep 0.1
		done
		echo "$c" >/tmp/conc
		wait
		echo "concurrent $(cat /tmp/conc)"
		for i in $(seq 50); do sha256sum </tmp/c$i; done | sort | uniq -c' >"$T/out" 2>&1 &
	cl=$!
	wait_conns 50 proxy_clients "$sb"
	wait_conns 50 agent_conns "$id" || true
	n="$CONNS"
	wait "$cl"
	cat "$T/out"
	echo "agent connections: $n"
	grep -qx "concurrent 50" "$T/out"
	grep -Eq "^ *50 $want " "$T/out"
	[ "$n" -ge 50 ]
}

@test "stream: a slow reader does not stall another connection" {
	head -c 16777216 /dev/urandom >"$WWW/big"
	want="$(sha256sum <"$WWW/big" | cut -d' ' -f1)"
	daemon_start 1
	id="$(create_proxy)"
	run -0 ab exec "$id" -- sh -c '
		curl -sS --max-time 60 -p --limit-rate 16k -o /tmp/slow http://127.0.0.2:8080/big &
		slow=$!
		# the slow one has started reading (10 s at most)
		for j in $(seq 100); do [ -s /tmp/slow ] && break; sleep 0.1; done
		start=$(date +%s%N)
		curl -sS --max-time 30 -p http://127.0.0.2:8080/big | sha256sum
		echo "fast_ms $(( ($(date +%s%N) - start) / 1000000 ))"
		kill -0 $slow && echo "slow still running"
		echo "slow has $(stat -c %s /tmp/slow)"
		kill $slow'
	echo "$output"
	[ "${lines[0]%% *}" = "$want" ]
	[[ "${lines[1]}" =~ ^fast_ms\ [0-9]+$ ]]
	[ "${lines[1]#fast_ms }" -lt 20000 ]
	[ "${lines[2]}" = "slow still running" ]
	[ "${lines[3]#slow has }" -lt 4000000 ]
}

@test "stream: destroy leaves no thread, fd or agent connection behind" {
	daemon_start 1
	# a first sandbox warms up what the daemon keeps for good
	id="$(create_proxy)"
	run -0 ab exec "$id" -- curl -sS --max-time 20 http://127.0.0.2:8080/
	mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
	[ "$(api "/v1/sandboxes/$id?force=1" -X DELETE -o /dev/null -w '%{http_code}')" = 204 ]
	# The first sandbox wholly gone, and the daemon's threads settled: the
	# same count over half a second (10 s at most).
	wait_equal gone monitor_state "$mon"
	wait_equal 0 agent_conns "$id"
	local last="" same=0 i
	for ((i = 0; i < 100 && same < 5; i++)); do
		threads="$(daemon_threads)"
		if [ "$threads" = "$last" ]; then same=$((same + 1)); else same=0; fi
		last="$threads"
		sleep 0.1
	done
	threads="$(daemon_threads)"
	fds="$(daemon_fds)"
	id="$(create_proxy)"
	mon="$(api "/v1/sandboxes/$id" | jq -r .monitor_pid)"
	run -0 ab exec "$id" -- sh -c 'for i in $(seq 20); do curl -sS --max-time 20 -o /dev/null http://127.0.0.2:8080/mid & done; wait'
	# streams still open when it goes: slow downloads, detached
	ab exec -d "$id" -- sh -c 'for i in $(seq 5); do curl -sS --max-time 60 -o /dev/null "http://127.0.0.2:8080/cgi-bin/slow?30" & done; wait' >/dev/null
	wait_equal 1 at_least 6 agent_conns "$id"
	[ "$(daemon_threads)" -gt "$threads" ]
	[ "$(api "/v1/sandboxes/$id?force=1" -X DELETE -o /dev/null -w '%{http_code}')" = 204 ]
	wait_equal "$threads" daemon_threads
	wait_equal "$fds" daemon_fds
	wait_equal 0 agent_conns "$id"
	[ ! -e "$STATE/sandboxes/$id" ]
	wait_equal gone monitor_state "$mon"
}

@test "stream: the credential proxy's port goes the same way" {
	start_upstream up
	printf '{"baseUrl": "https://127.0.0.1:%s/v1", "inject": [{"header": "authorization", "value": "Bearer %s"}]}\n' \
		"$up_PORT" "$SECRET_OAI" >"$T/openai.json"
	daemon_start 1
	id="$(ab create --backend native --no-workspace --credential "openai=$T/openai.json")"
	run -0 ab exec "$id" -- sh -c '
		curl -sS --max-time 20 -H "Authorization: Bearer $AGENTBOX_CREDENTIAL_TOKEN" "$OPENAI_BASE_URL/echo?q=1"'
	echo "$output"
	[ "$(printf '%s\n' "$output" | jq -r .url)" = "/v1/echo?q=1" ]
	[ "$(received_header up authorization)" = "Bearer $SECRET_OAI" ]
	run ! grep -qF SECRET "$D/daemon.log"
}

@test "stream: after a daemon SIGKILL and restart, a connection made meanwhile is claimed by the new daemon" {
	daemon_start 1
	id="$(create_proxy)"
	run -0 ab exec "$id" -- curl -sS --max-time 20 http://127.0.0.2:8080/
	sb="$(sandbox_pid "$id")"
	# a client inside connects while no daemon is there to claim it: it
	# starts when the test ends its `sleep 20` (once the daemon is dead),
	# and the daemon comes back once it is connected
	ab exec -d "$id" -- sh -c 'sleep 20; curl -sS --max-time 30 http://127.0.0.2:8080/ >/tmp/during 2>&1' >/dev/null
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null || true
	end_hold "$sb"
	wait_conns 1 proxy_clients "$sb"
	daemon_start 1
	run -0 ab exec "$id" -- sh -c 'for i in $(seq 100); do [ -s /tmp/during ] && break; sleep 0.1; done; cat /tmp/during'
	[ "$output" = "hello from the origin" ]
	allowed_and_denied "$id"
}
