#!/usr/bin/env bats
# The egress proxy's spliced bodies (relay-pump.c): big Content-Length
# bodies move socket -> pipe -> socket with splice(2), and an emptied body
# pipe is kept in a small pool for the next body, on any connection.  A
# byte left in a pooled pipe would reach another client, so these tests
# check that every body stays byte-exact across reuse, also after clients
# that vanish in the middle of a body, that a policy denial in between is
# still a denial with its audit line, and that the pool stays bounded.
# Runs in a network namespace holding only lo (egress/common.bash).

load egress/common

setup() {
	eg_setup
	start_origin WEB
	start_proxy --deny-loopback --deny-private --deny-link-local --deny-metadata \
		--allow-cidr 127.0.0.1/32
}

teardown() {
	eg_teardown
}

# echo_exact NAME SIZE: a fresh random body of SIZE bytes up and back
# through the proxy, byte for byte.
echo_exact() {
	head -c "$2" /dev/urandom >"$T/$1"
	run pcurl --data-binary @"$T/$1" -o "$T/$1.back" -w '%{http_code} %{size_download}' \
		"http://127.0.0.1:$WEB_PORT/echo"
	echo "$1: curl exit $status, $output"
	[ "$status" -eq 0 ]
	cmp "$T/$1" "$T/$1.back"
}

@test "spliced bodies through reused pipes are byte-exact; a denial in between is still a denial" {
	local base
	base=$(proxy_fds)
	echo_exact a 1048576
	# The bodies were spliced (>= 32 KiB): their emptied pipes wait in
	# the pool, two descriptors each, with no connection open.
	local i kept
	for ((i = 0; i < 50; i++)); do
		kept=$(($(proxy_fds) - base))
		[ "$kept" -eq 2 ] || [ "$kept" -eq 4 ] && break
		sleep 0.1
	done
	echo "pooled descriptors: $kept"
	[ "$kept" -eq 2 ] || [ "$kept" -eq 4 ]
	# A denied request on a new connection: refused before any dial, as
	# always, and logged.
	run -0 pcurl -o /dev/null -w '%{http_code}' "http://10.0.0.1:$WEB_PORT/echo"
	[ "$output" = 403 ]
	[ "$(audit_last .decision)" = deny ]
	[ "$(audit_last .host)" = 10.0.0.1 ]
	# The next bodies reuse the pooled pipes (no new descriptors), exact.
	echo_exact b 3145728
	echo_exact c 40000
	run -0 pcurl -o "$T/big" "http://127.0.0.1:$WEB_PORT/bytes/2097152"
	[ "$(stat -c %s "$T/big")" -eq 2097152 ]
	[ "$(proxy_fds)" -le $((base + 4)) ]
	[ "$(grep -c '"decision":"allow"' "$T/audit.log")" -eq 4 ]
	[ "$(grep -c '"decision":"deny"' "$T/audit.log")" -eq 1 ]
}

@test "clients that vanish mid-body leave nothing behind for the next body" {
	local base i
	base=$(proxy_fds)
	head -c 8388608 /dev/urandom >"$T/cut"
	for ((i = 0; i < 4; i++)); do
		# curl stops reading after 100 KiB of the 8 MiB answer and exits:
		# the proxy's splice into the client fails with bytes in the pipe.
		inns bash -c "curl -sS --max-time 20 --proxy '$PROXY' --data-binary @'$T/cut' \
			'http://127.0.0.1:$WEB_PORT/echo' | head -c 102400 >/dev/null" || true
		echo_exact "after$i" 1048576
	done
	audit_wait 8
	[ "$(grep -c '"decision":"allow"' "$T/audit.log")" -eq 8 ]
	# A pipe that may hold a byte is closed, never pooled; the pool stays
	# within its bound (8 pipes).
	for ((i = 0; i < 50; i++)); do
		[ "$(proxy_fds)" -le $((base + 16)) ] && break
		sleep 0.1
	done
	[ "$(proxy_fds)" -le $((base + 16)) ]
}
