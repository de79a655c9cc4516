#!/usr/bin/env bats
# The agent's door under malformed and hostile input, many sessions at
# once, and the port relay.  Raw frames go through `agentctl raw`, which
# sends a HELLO, then stdin's bytes as they are, and prints the type of
# every frame the agent sends back (1 HELLO, 10 OK, 11 FAIL).

load agent-common

setup() {
	ag_setup
	configure
}

teardown() {
	ag_teardown
}

raw() {
	timeout -k 2 10 "$CTL" -s "$SOCK" raw
}

ping_frame() {
	frame 61 0 "$(tlv 30 "$(u32 "$1")")"
}

@test "a well-formed PING after the handshake is answered" {
	run -0 raw < <(ping_frame 7)
	[ "${lines[0]}" = "frame type=1 channel=0" ]
	[ "${lines[1]}" = "frame type=10 channel=0" ]
}

@test "malformed requests get FAIL with their REQ_ID and the session goes on" {
	run -0 raw < <(frame 99 0 "$(tlv 30 "$(u32 8)")"; ping_frame 9)
	[[ "${lines[1]}" == "frame type=11 channel=0 req=8 code=2 msg=unknown request type 99" ]]
	[ "${lines[2]}" = "frame type=10 channel=0" ]
	# A record longer than its payload, a u32 of the wrong width, an unknown
	# field, a missing required field: each FAIL (invalid), then PING works.
	run -0 raw < <(
		frame 61 0 '\x00\x1e\x00\x00\x00\x09\x00'
		frame 32 0 "$(tlv 30 "$(u32 3)")$(tlv 14 '\x00\x01')$(tlv 15 "$(u32 15)")"
		frame 43 0 "$(tlv 30 "$(u32 4)")$(tlv 36 x)$(tlv 999 x)"
		frame 40 0 "$(tlv 30 "$(u32 5)")$(tlv 36 x)"
		frame 30 0 "$(tlv 30 "$(u32 6)")"
		ping_frame 10)
	[ "$(printf '%s\n' "$output" | grep -c 'type=11.*code=2')" -eq 5 ]
	[[ "$output" == *"req=3 code=2"* ]]
	[[ "$output" == *"req=4 code=2"*"unknown field 999"* ]]
	[[ "$output" == *"req=5 code=2"*"missing"* ]]
	[ "${lines[-1]}" = "frame type=10 channel=0" ]
}

@test "a bad frame header ends the session: too long, flags set, not HELLO first" {
	run -0 raw < <(printf "$(be32 2000000)$(be16 61)$(be16 0)$(be32 0)"; ping_frame 1)
	[[ "$output" == *"code=6 msg=frame of 2000000 bytes exceeds"* ]]
	[[ "$output" != *"type=10"* ]]
	run -0 raw < <(printf "$(be32 4)$(be16 61)$(be16 1)$(be32 0)"; ping_frame 1)
	[[ "$output" == *"unknown flags"* ]]
	[[ "$output" != *"type=10"* ]]
	run -0 env AGENTCTL_RAW_NO_HELLO=1 timeout 10 "$CTL" -s "$SOCK" raw < <(ping_frame 1; ping_frame 2)
	[[ "$output" == *"expected HELLO"* ]]
	[[ "$output" != *"type=10"* ]]
	# A HELLO of another version.
	run -0 env AGENTCTL_RAW_NO_HELLO=1 timeout 10 "$CTL" -s "$SOCK" raw < <(frame 1 0 "$(tlv 1 "$(u32 1)")"; ping_frame 2)
	[[ "$output" == *"protocol 1"* ]]
	[[ "$output" != *"type=10"* ]]
	# A connection cut inside a frame.
	run -0 raw < <(printf "$(be32 100)$(be16 61)$(be16 0)$(be32 0)abc")
	run -0 ctl ping
}

@test "a client that sends past its credit is cut off; the agent serves others" {
	# A process that never reads stdin, fed on its channel without waiting
	# for WINDOW: past the 256 KiB window the session ends.
	start="$(tlv 30 "$(u32 1)")$(tlv 34 "$(u32 1)")$(tlv 2 sleep)$(tlv 2 100)$(tlv 35 "$(u32 1)")"
	run -0 raw < <(
		frame 30 0 "$start"
		for i in 1 2 3 4 5 6 7; do
			printf "$(be32 65536)$(be16 23)$(be16 0)$(be32 1)"
			head -c 65536 /dev/zero
		done
		ping_frame 2)
	[ "${lines[1]}" = "frame type=10 channel=0" ]
	# WINDOW for what reached the pipe, and no answer to the PING.
	[ "$(printf '%s\n' "$output" | grep -c 'type=10')" -eq 1 ]
	# Granting more credit than a window is refused the same way.
	run -0 raw < <(
		frame 40 0 "$(tlv 30 "$(u32 1)")$(tlv 36 /workspace)$(tlv 34 "$(u32 3)")"
		frame 25 3 "$(tlv 47 "$(u32 4000000000)")"
		ping_frame 2)
	[[ "$output" != *"type=10 channel=0"*"type=10 channel=0"* ]]
	run -0 ctl ping
	run -0 ctl ps
}

@test "frames on channels that do not exist are dropped" {
	run -0 raw < <(frame 20 77 'abc'; frame 24 78 ''; frame 26 79 ''; ping_frame 3)
	[ "${lines[1]}" = "frame type=10 channel=0" ]
}

@test "many sessions at once" {
	pids=()
	for i in $(seq 40); do
		(timeout 30 "$CTL" -s "$SOCK" exec -- sh -c "echo s$i" >"$D/o$i") &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	for i in $(seq 40); do [ "$(cat "$D/o$i")" = "s$i" ]; done
	run -0 ctl ping
}

@test "a port stream reaches a server inside the sandbox, both ways, with half-close" {
	command -v python3 >/dev/null || skip "python3 not available"
	ctl exec -d -- python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8080)); s.listen(8)
while True:
    c, _ = s.accept(); d = b""
    while True:
        x = c.recv(65536)
        if not x: break
        d += x
    c.sendall(d.upper()); c.close()' >/dev/null
	for i in $(seq 50); do ctl exec -- sh -c 'cat /proc/net/tcp | grep -q ":1F90 00000000:0000 0A"' && break; sleep 0.1; done
	run -0 bash -c "echo 'hello port' | timeout 10 '$CTL' -s '$SOCK' port 8080"
	[ "$output" = "HELLO PORT" ]
	head -c 8000000 /dev/urandom | tr -dc 'a-z' | head -c 3000000 >"$D/p"
	want="$(tr 'a-z' 'A-Z' <"$D/p" | sha256sum | cut -d' ' -f1)"
	run -0 bash -c "timeout 30 '$CTL' -s '$SOCK' port 8080 <'$D/p' | sha256sum"
	[ "${output%% *}" = "$want" ]
	run -1 ctl port 8081
	[[ "$output" == *"not_found"* ]]
}

@test "egress: connections to the listener inside are handed to the subscribed session as fds" {
	command -v python3 >/dev/null || skip "python3 not available"
	ctl egress 3128 2 >"$D/egress" &
	eg=$!
	for i in $(seq 50); do grep -q listening "$D/egress" && break; sleep 0.1; done
	client='import socket
for i in range(2):
    s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"out%d\n" % i)
    print(s.recv(100).decode().strip()); s.close()'
	run -0 ctl exec -- python3 -c "$client"
	[ "${lines[0]}" = "egress:out0" ]
	[ "${lines[1]}" = "egress:out1" ]
	wait "$eg"
	# Other ports get listeners of their own (egress 3128, credentials
	# 8288: each connection is tagged with its port), at most four.
	run -0 ctl egress 3129 0
	run -0 ctl egress 3130 0
	run -0 ctl egress 3131 0
	run -1 ctl egress 3132 0
	[[ "$output" == *"limit"* ]]
	# asking again for a port it has is no new listener
	run -0 ctl egress 3129 0
}

# The sandbox's `head` (a descendant of the agent) sleeps in a write.
head_blocked() {
	local p q
	for p in $(pgrep -x head); do
		q="$p"
		while [ -n "$q" ] && [ "$q" -gt 1 ] && [ "$q" != "$AGENT_PID" ]; do
			q="$(awk '/^PPid:/ { print $2 }' "/proc/$q/status" 2>/dev/null)"
		done
		[ "$q" = "$AGENT_PID" ] || continue
		echo "head $p: $(cat "/proc/$p/wchan" 2>/dev/null)" >&2
		[[ "$(cat "/proc/$p/wchan" 2>/dev/null)" == *write* ]] && return 0
	done
	return 1
}

@test "a client that stops reading: the process blocks, the agent's memory stays bounded" {
	command -v python3 >/dev/null || skip "python3 not available"
	[ -n "$AGENT_PID" ]
	# Start a flood on a channel, pipeline PINGs, never read a byte.
	cat >"$D/noread.py" <<'EOF'
import os, socket, struct, sys, time
def rec(tag, val): return struct.pack(">HI", tag, len(val)) + val
def u32(tag, v): return rec(tag, struct.pack(">I", v))
def frame(t, ch, p): return struct.pack(">IHHI", len(p), t, 0, ch) + p
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(frame(1, 0, u32(1, 2)))
s.sendall(frame(30, 0, u32(30, 1) + u32(34, 1) + rec(2, b"head") + rec(2, b"-c")
                + rec(2, b"104857600") + rec(2, b"/dev/zero")))
for i in range(100000):
    try:
        s.send(frame(61, 0, u32(30, 100 + i)), socket.MSG_DONTWAIT)
    except BlockingIOError:
        break
print("flooded", flush=True)
# Hold the connection, unread, until the test is done with it (15 s at most).
end = time.monotonic() + 15
while not os.path.exists(sys.argv[2]) and time.monotonic() < end:
    time.sleep(0.05)
EOF
	timeout 20 python3 "$D/noread.py" "$SOCK" "$D/release" >"$D/noread.out" &
	client=$!
	for ((i = 0; i < 100; i++)); do
		grep -q flooded "$D/noread.out" && break
		sleep 0.1
	done
	grep -q flooded "$D/noread.out"
	# head blocked on its full output: the agent holds all it will hold
	for ((i = 0; i < 100; i++)); do
		head_blocked && break
		sleep 0.1
	done
	run -0 ctl ps
	[[ "$output" == *"running head -c 104857600"* ]]
	rss=$(rss_kb "$AGENT_PID")
	echo "agent VmRSS with a client that does not read: $rss kB" >&3
	[ "$rss" -lt 16384 ]
	touch "$D/release"
	wait "$client"
	run -0 ctl ping
}
