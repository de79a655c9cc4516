#!/usr/bin/env bats
# The agent's egress stream path (backends that cannot pass fds: gVisor, the
# microVM), driven on a native sandbox: EGRESS_LISTEN with EGRESS_STREAM,
# EGRESS_READY announcements, claims with EGRESS_OPEN on connections of
# their own, the bound on unclaimed connections, their expiry, and a new
# subscriber hearing about what still waits.  The host side is
# tests/helpers/egressctl.c; clients inside are python3.

load agent-common

: "${EGRESSCTL:=$HELPERS/egressctl}"

setup() {
	ag_setup
	configure
	[ -x "$EGRESSCTL" ] || {
		echo "need $EGRESSCTL (make BUILD=... \$BUILD/tests/egressctl)" >&2
		return 1
	}
	command -v python3 >/dev/null || skip "python3 not available"
	BG=()
}

teardown() {
	local p
	for p in "${BG[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	ag_teardown
}

ectl() {
	timeout -k 2 "${ECTL_TIMEOUT:-30}" "$EGRESSCTL" "$SOCK" "$@"
}

# ectl_bg OUT ARGS...: egressctl in the background, output to OUT; waits
# (5 s) for "listening" when it subscribes.
ectl_bg() {
	local out="$1" i
	shift
	ectl "$@" >"$out" 2>&1 &
	BG+=($!)
	EBG=$!
	case "$1" in serve | announce | slowclaim | blast)
		for ((i = 0; i < 50; i++)); do
			grep -q listening "$out" && return 0
			sleep 0.1
		done
		cat "$out" >&2
		return 1
		;;
	esac
}

# wait_lines FILE REGEX N [TENTHS]: until FILE has N lines matching REGEX.
wait_lines() {
	local i
	for ((i = 0; i < ${4:-50}; i++)); do
		[ "$(grep -Ec -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	echo "wanted $3 lines /$2/ in $1, it holds:" >&2
	cat "$1" >&2
	return 1
}

@test "stream: each connection is announced, claimed on a connection of its own and relayed" {
	ectl_bg "$D/serve" serve 3128 2
	client='import socket
for i in range(2):
    s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"out%d\n" % i)
    print(s.recv(100).decode().strip()); s.close()'
	run -0 ctl exec -- python3 -c "$client"
	[ "${lines[0]}" = "egress:out0" ]
	[ "${lines[1]}" = "egress:out1" ]
	wait "$EBG"
	grep -qx "served 2" "$D/serve"
}

@test "stream: an unclaimed connection is closed after the claim timeout; a late claim is not_found" {
	# The subscriber stays (12 s) well past the bound below, so only the
	# claim timeout can be what closes the connection.
	ectl_bg "$D/ann" announce 3128 500 12
	client='import socket, time
s = socket.create_connection(("127.0.0.1", 3128)); s.settimeout(10)
t = time.monotonic(); d = s.recv(10)
print(len(d), round(time.monotonic() - t, 1))'
	run -0 ctl exec -- python3 -c "$client"
	echo "$output"
	read -r n secs <<<"$output"
	[ "$n" = 0 ]                                  # closed, nothing sent
	awk -v s="$secs" 'BEGIN { exit !(s >= 0.3 && s < 8) }' # after about 0.5 s (8: a loaded host)
	wait_lines "$D/ann" '^ready 3128 [0-9]+$' 1
	conn="$(awk '/^ready/ { print $3; exit }' "$D/ann")"
	run -1 ectl claim "$conn"
	[[ "$output" == *"not_found"* ]]
	run -1 ectl claim 4000000000
	[[ "$output" == *"not_found"* ]]
}

@test "stream: at most 64 connections wait per port, the rest stay in the backlog until there is room" {
	ectl_bg "$D/ann" announce 3128 4000 20
	# The client counts the connections closed under it: it waits (20 s at
	# most) for the first 64 to be closed, then counts at once, long before
	# the other 6, announced only then, can expire too.
	client='import socket, time
ss = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(70)]
for s in ss: s.setblocking(False)
closed = set()
end = time.monotonic() + 20
while len(closed) < 64 and time.monotonic() < end:
    for i, s in enumerate(ss):
        if i in closed: continue
        try:
            if s.recv(1) == b"": closed.add(i)
        except BlockingIOError: pass
    time.sleep(0.05)
eof = 0
for s in ss:
    try:
        if s.recv(1) == b"": eof += 1
    except BlockingIOError: pass
print(eof)'
	ctl exec -- python3 -c "$client" >"$D/client" 2>&1 &
	BG+=($!)
	cl=$!
	# the first 64 are announced, then nothing until they expire: nothing
	# to wait on for "nothing", so 1 s of the 4 s claim timeout is watched
	wait_lines "$D/ann" '^ready' 64 100
	sleep 1
	[ "$(grep -c '^ready' "$D/ann")" -eq 64 ]
	# after the claim timeout (4 s) they are closed and the other 6 come in
	wait_lines "$D/ann" '^ready' 70 150
	wait "$cl"
	[ "$(cat "$D/client")" = 64 ]
	[ "$(grep '^ready' "$D/ann" | sort -u | wc -l)" -eq 70 ]
}

@test "stream: a new subscriber is told about connections still waiting and can claim them" {
	ectl_bg "$D/ann" announce 3128 10000 1
	client='import socket
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"late\n"); s.settimeout(15)
print(s.recv(100).decode().strip())'
	ctl exec -- python3 -c "$client" >"$D/client" 2>&1 &
	BG+=($!)
	cl=$!
	wait_lines "$D/ann" '^ready' 1
	wait "$EBG"
	conn="$(awk '/^ready/ { print $3; exit }' "$D/ann")"
	# the first subscriber is gone without claiming: the next one hears of it
	ectl_bg "$D/serve" serve 3128 1
	wait "$EBG"
	wait "$cl"
	[ "$(cat "$D/client")" = "egress:late" ]
	[ -n "$conn" ]
}

@test "stream: a host that stops reading one stream does not stall another" {
	ectl_bg "$D/slow" slowclaim 3128
	# A sends 16 MiB that nobody reads: it blocks once the windows are full,
	# and says so in /workspace/stuck the first time a send would block
	writer='import select, socket, sys
s = socket.create_connection(("127.0.0.1", 3128)); s.setblocking(False)
sent = 0; told = False
try:
    while sent < (16 << 20):
        try:
            sent += s.send(b"x" * 65536)
        except BlockingIOError:
            if not told:
                open("/workspace/stuck", "w").close(); told = True
            if not select.select([], [s], [], 30)[1]: break
except Exception as e: pass
print(sent)'
	ctl exec -- python3 -c "$writer" >"$D/writer" 2>&1 &
	BG+=($!)
	wait_lines "$D/slow" '^stalled' 1
	for ((i = 0; i < 100; i++)); do
		[ -e "$WS/stuck" ] && break
		sleep 0.1
	done
	[ -e "$WS/stuck" ]
	# B, on a new subscription, is served while A is stuck
	ectl_bg "$D/serve" serve 3128 1
	client='import socket
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"other\n"); s.settimeout(10)
print(s.recv(100).decode().strip())'
	run -0 ctl exec -T 10000 -- python3 -c "$client"
	[ "$output" = "egress:other" ]
	# A is still blocked (its writer has not finished)
	[ ! -s "$D/writer" ]
	# and the agent holds a bounded amount for it (windows, not 16 MiB)
	[ "$(rss_kb "$AGENT_PID")" -lt 20000 ]
}

@test "stream: bytes the host wrote just before it closed still arrive, after the client's half-close" {
	ectl_bg "$D/blast" blast 3128 3000000
	# the client half-closes first and reads only a second later; the host
	# answers 3 MB and closes at once, with windows and buffers still full
	client='import socket, time
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"go\n"); s.shutdown(socket.SHUT_WR)
time.sleep(1); s.settimeout(20); n = 0
while True:
    d = s.recv(65536)
    if not d: break
    n += len(d)
print(n)'
	run -0 ctl exec -- python3 -c "$client"
	[ "$output" = 3000000 ]
	wait_lines "$D/blast" '^sent 3000000$' 1
}

@test "stream: EGRESS_LISTEN refuses a claim timeout out of range" {
	run -1 ectl announce 3128 700000 0
	[[ "$output" == *"invalid"*"claim timeout"* ]]
}
