#!/usr/bin/env bats
# Slow and silent peers, half-closed and many tunnels: nothing a peer does
# pins the proxy's memory or its loop, and every wait has a deadline.
# Timeouts are shortened by flags so the tests stay quick; every load is
# bounded in count and time.

load egress/common

setup() {
	eg_setup
}

teardown() {
	eg_teardown
}

# elapsed_between LO HI CMD...: run CMD (with bats' run), and check it took
# between LO and HI seconds.  The timeouts below are 2 or 3 s: HI is 12 so
# that a loaded host still meets it while it stays under every default the
# flag replaces (dial 15 s, head 30 s, idle 300 s) and curl's own 20 s.
elapsed_between() {
	local lo="$1" hi="$2" t0 t1
	shift 2
	t0=$(date +%s.%N)
	run "$@"
	t1=$(date +%s.%N)
	echo "took $(awk "BEGIN {print $t1 - $t0}") s"
	awk "BEGIN {d = $t1 - $t0; exit !(d >= $lo && d <= $hi)}"
}

@test "a client sending one byte a second is cut off by the head timeout (408)" {
	start_proxy --head-timeout 3
	run -0 inns "$CLIENT" slow "$PROXY_PORT"
	echo "$output"
	[[ "${lines[0]}" =~ ^closed\ after\ ([0-9.]+)\ s$ ]]
	local t="${BASH_REMATCH[1]}"
	awk "BEGIN {exit !($t >= 2.5 && $t <= 12)}" # 12: as for elapsed_between
	[[ "${lines[1]}" == "HTTP/1.1 408 Request Timeout"* ]]
	[ "$(audit_last .reason)" = "request head timeout" ]
	# The proxy serves on, and holds no connection for the slow client.
	[ "$(ls "/proc/$PROXY_PID/fd" | wc -l)" -lt 20 ]
}

@test "an upstream that never answers: 504 after the idle timeout" {
	start_origin WEB
	start_proxy --idle-timeout 2
	elapsed_between 1.5 12 pcurl -w '\n%{http_code}' "http://127.0.0.1:$WEB_PORT/silent"
	[ "${lines[-1]}" = 504 ]
	[ "$(audit_last .error)" = "upstream idle timeout" ]
}

@test "a silent tunnel is closed after the idle timeout" {
	start_origin QUIET --silent
	start_proxy --idle-timeout 2
	printf "CONNECT 127.0.0.1:$QUIET_PORT HTTP/1.1\r\nHost: a\r\n\r\n" >"$T/req"
	elapsed_between 1.5 12 inns "$CLIENT" raw "$PROXY_PORT" --no-shut <"$T/req"
	[ "$output" = $'HTTP/1.1 200 Connection Established\r\n\r' ]
	[ "$(audit_last .error)" = "idle timeout" ]
}

@test "a dial that never completes fails with 502 after the dial timeout" {
	# In the test's namespace, 203.0.113.0/24 routes to lo, where nothing
	# answers for it: the SYN goes nowhere and connect() hangs.
	inns ip route add 203.0.113.0/24 dev lo
	start_proxy --dial-timeout 2
	elapsed_between 1.5 12 pcurl -w '\n%{http_code}' "http://203.0.113.7:8080/"
	[ "${lines[-1]}" = 502 ]
	[ "${lines[0]}" = "connect to 203.0.113.7:8080: timed out" ]
}

@test "half-closed tunnel: the client shuts its write side, the answer still flows back" {
	start_origin ECHO --echo
	start_proxy
	run -0 inns "$CLIENT" halfclose "$PROXY_PORT" "127.0.0.1:$ECHO_PORT"
	# The echo server saw "ping", then EOF (our SHUT_WR relayed), and its
	# reply after that EOF reached us.
	[ "$output" = $'ping\nEOF' ]
	audit_wait 1
	[ "$(audit_last .bytes_up)" -eq 5 ]
	[ "$(audit_last .bytes_down)" -eq 9 ]
}

@test "1,000 concurrent tunnels: all carry their bytes, memory stays bounded, all are released" {
	start_origin ECHO --echo
	start_proxy
	local base
	base=$(ls "/proc/$PROXY_PID/fd" | wc -l)
	# Held until the test has looked (SIGUSR1), 50 s at most.
	"${INNS[@]}" "$CLIENT" tunnels "$PROXY_PORT" "127.0.0.1:$ECHO_PORT" 1000 50 >"$T/tunnels.out" 2>&1 &
	local cpid=$!
	BG_PIDS+=("$cpid")
	wait_for "$T/tunnels.out" '^established' 400
	cat "$T/tunnels.out"
	grep -qx 'established 1000 of 1000 in [0-9.]* s' "$T/tunnels.out"
	local rss fds
	rss=$(rss_kib "$PROXY_PID")
	fds=$(ls "/proc/$PROXY_PID/fd" | wc -l)
	echo "proxy RSS ${rss} KiB, ${fds} fds with 1000 tunnels open"
	[ "$fds" -ge 2000 ]
	[ "$rss" -lt 65536 ]
	kill -USR1 "$cpid"
	wait "$cpid"
	# Every tunnel ends when the client closes: back to the baseline.
	local i
	for ((i = 0; i < 150; i++)); do
		[ "$(ls "/proc/$PROXY_PID/fd" | wc -l)" -le "$base" ] && break
		sleep 0.1
	done
	[ "$(ls "/proc/$PROXY_PID/fd" | wc -l)" -le "$base" ]
	[ "$(grep -c '"method":"CONNECT"' "$T/audit.log")" -eq 1000 ]
}

@test "2,000 idle client connections cost little memory" {
	start_proxy
	local before after
	before=$(rss_kib "$PROXY_PID")
	"${INNS[@]}" "$CLIENT" idle "$PROXY_PORT" 2000 50 >"$T/idle.out" 2>&1 &
	BG_PIDS+=("$!")
	wait_for "$T/idle.out" '^open 2000$' 100
	# The proxy has accepted them all (10 s at most).
	for ((i = 0; i < 100; i++)); do
		[ "$(proxy_fds)" -ge 2000 ] && break
		sleep 0.1
	done
	after=$(rss_kib "$PROXY_PID")
	echo "RSS ${before} KiB -> ${after} KiB with 2000 idle connections"
	[ "$(ls "/proc/$PROXY_PID/fd" | wc -l)" -ge 2000 ]
	# Well under 4 KiB a connection (10,000 must fit in 64 MiB).
	[ "$((after - before))" -lt 8000 ]
}

@test "--max-connections: beyond the limit clients wait in the backlog, then are served" {
	start_origin WEB
	start_proxy --max-connections 5
	local base i
	base=$(proxy_fds)
	# Held until let go below (SIGUSR1), 50 s at most.
	"${INNS[@]}" "$CLIENT" idle "$PROXY_PORT" 5 50 >"$T/idle.out" 2>&1 &
	BG_PIDS+=("$!")
	holders=$!
	wait_for "$T/idle.out" '^open 5$'
	# The proxy has taken the five (10 s at most): it is at its limit.
	for ((i = 0; i < 100; i++)); do
		[ "$(proxy_fds)" -ge $((base + 5)) ] && break
		sleep 0.1
	done
	run pcurl --max-time 1 "http://127.0.0.1:$WEB_PORT/bytes/1"
	[ "$status" -ne 0 ]
	# Once the idle holders leave, the proxy takes new clients again.
	kill -USR1 "$holders"
	run -0 pcurl --max-time 10 "http://127.0.0.1:$WEB_PORT/bytes/2"
	[ "$output" = 01 ]
}
