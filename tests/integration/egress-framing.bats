#!/usr/bin/env bats
# Request smuggling and framing attacks against the egress proxy: each one
# is made for real over a raw socket and must be refused with the right
# status, with exactly one response (the smuggled request never runs), and
# for head-level attacks without the proxy dialing anything.

load egress/common

setup() {
	eg_setup
	start_origin WEB
	start_proxy --max-head-bytes 65536 --max-headers 100
	U="http://127.0.0.1:$WEB_PORT"
	# A request smuggled behind the attack; if it ever ran, a second
	# response (and a second dial) would show it.
	SMUGGLED="GET $U/bytes/7 HTTP/1.1\r\nHost: a\r\n\r\n"
}

teardown() {
	eg_teardown
}

# attack STATUS REASON FORMAT: send printf FORMAT raw; expect one response
# with STATUS and REASON as its body.
attack() {
	local want="$1" reason="$2" # not "status": run sets that
	# shellcheck disable=SC2059
	printf "$3" >"$T/req"
	run -0 inns "$CLIENT" raw "$PROXY_PORT" <"$T/req"
	echo "--- $output"
	[[ "$output" == "HTTP/1.1 $want "* ]]
	[[ "$output" == *$'\r\n\r\n'"$reason" ]]
	[ "$(grep -c '^HTTP/1\.1 ' <<<"$output")" -eq 1 ]
}

# no_dial: the proxy never connected anywhere.
no_dial() {
	! grep -q -- ' -> ' "$T/proxy.err"
}

@test "Content-Length and Transfer-Encoding together: 400" {
	attack 400 "both Content-Length and Transfer-Encoding" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$SMUGGLED"
	attack 400 "both Content-Length and Transfer-Encoding" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n$SMUGGLED"
	no_dial
}

@test "duplicate or list-valued Content-Length: 400" {
	attack 400 "duplicate Content-Length" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello$SMUGGLED"
	attack 400 "duplicate Content-Length" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\n$SMUGGLED"
	attack 400 "invalid Content-Length" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello$SMUGGLED"
	attack 400 "invalid Content-Length" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello"
	attack 400 "invalid Content-Length" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n"
	no_dial
}

@test "obsolete line folding: 400" {
	attack 400 "obsolete line folding" \
		"GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-A: a\r\n b\r\n\r\n"
	attack 400 "obsolete line folding" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n$SMUGGLED"
	attack 400 "obsolete line folding" \
		"GET $U/bytes/1 HTTP/1.1\r\n Host: a\r\n\r\n"
	no_dial
}

@test "bare CR, bare LF, NUL and controls: 400" {
	attack 400 "bare CR in head" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-A: a\rContent-Length: 5\r\n\r\n"
	attack 400 "bare LF in head" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\nContent-Length: 5\r\n\r\nhello"
	attack 400 "bare LF in head" "GET $U/bytes/1 HTTP/1.1\n\n"
	attack 400 "NUL in head" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-A: a\0b\r\n\r\n"
	attack 400 "invalid character in field value" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-A: a\001b\r\n\r\n"
	no_dial
}

@test "whitespace before the colon, odd transfer codings, two Hosts, bad versions" {
	attack 400 "whitespace before field colon" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n"
	attack 501 "unsupported transfer coding" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"
	attack 501 "unsupported transfer coding" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"
	attack 400 "duplicate Transfer-Encoding" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	attack 400 "Transfer-Encoding in HTTP/1.0" \
		"POST $U/echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	attack 400 "multiple Host fields" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"
	attack 505 "HTTP version not supported" "GET $U/bytes/1 HTTP/2.0\r\nHost: a\r\n\r\n"
	attack 400 "malformed request line" "GET  $U/bytes/1 HTTP/1.1\r\nHost: a\r\n\r\n"
	attack 400 "CONNECT with a body" \
		"CONNECT 127.0.0.1:$WEB_PORT HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
	no_dial
}

@test "bad chunked bodies: size overflow, non-hex size, missing CRLF: 400" {
	attack 400 "chunk size too large" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n"
	attack 400 "chunk size too large" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nx\r\n0\r\n\r\n"
	attack 400 "invalid chunk size" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
	attack 400 "missing CRLF after chunk data" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n"
	attack 400 "bare CR in chunk size line" \
		"POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\rabc\r\n0\r\n\r\n"
	# A good chunked body with an extension and a trailer still goes through.
	printf "POST $U/echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n" >"$T/req"
	run -0 inns "$CLIENT" raw "$PROXY_PORT" <"$T/req"
	[[ "$output" == "HTTP/1.1 200 OK"$'\r\n'*$'\r\n\r\nabc' ]]
}

@test "oversized heads and too many fields: 431" {
	local big
	big="$(head -c 70000 /dev/zero | tr '\0' a)"
	attack 431 "request header fields too large" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-Big: $big\r\n\r\n"
	local many="" i
	for ((i = 0; i < 101; i++)); do many+="X-$i: $i\r\n"; done
	attack 431 "too many header fields" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\n$many\r\n"
	# Host and 99 more is exactly the limit; one more is over it.
	many=""
	for ((i = 0; i < 99; i++)); do many+="X-$i: $i\r\n"; done
	attack 431 "too many header fields" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-One-More: 1\r\n$many\r\n"
	printf "GET $U/bytes/2 HTTP/1.1\r\nHost: a\r\n$many\r\n" >"$T/req"
	run -0 inns "$CLIENT" raw "$PROXY_PORT" <"$T/req"
	[[ "$output" == "HTTP/1.1 200 OK"$'\r\n'*$'\r\n\r\n01' ]]
}

@test "a smaller --max-head-bytes is enforced" {
	start_proxy --max-head-bytes 2048
	local big
	big="$(head -c 3000 /dev/zero | tr '\0' a)"
	attack 431 "request header fields too large" "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-Big: $big\r\n\r\n"
	big="$(head -c 1500 /dev/zero | tr '\0' a)"
	printf "GET $U/bytes/1 HTTP/1.1\r\nHost: a\r\nX-Big: $big\r\n\r\n" >"$T/req"
	run -0 inns "$CLIENT" raw "$PROXY_PORT" <"$T/req"
	[[ "$output" == "HTTP/1.1 200 OK"* ]]
}

@test "an upstream response with both framings is 502, not passed on" {
	run -0 pcurl -w '\n%{http_code}' "$U/bad-cl-te"
	[ "${lines[-1]}" = 502 ]
	[ "${lines[0]}" = "bad response from upstream: both Content-Length and Transfer-Encoding" ]
}
