#!/usr/bin/env bats
# The credential proxy's outbound proxy selection from the environment,
# chained through the real `agentbox egress-proxy serve` (whose audit log
# shows what went through it): HTTPS_PROXY (CONNECT, then TLS inside the
# tunnel), HTTP_PROXY (absolute-URI requests), the lower-case and ALL_PROXY
# fallbacks, NO_PROXY bypass, proxy credentials, and an unreachable or
# refusing proxy.  credential/common.bash has the set-up.

load credential/common

setup() {
	cred_setup
	start_upstream UP
	start_upstream PLAIN plain
	start_egress --deny-loopback --deny-private --allow-cidr 127.0.0.1/32
}

teardown() {
	cred_teardown
}

# start_egress FLAGS: the egress proxy on 127.0.0.1:0; sets EG_PORT, EG;
# its audit lines in $T/egress.audit.
start_egress() {
	: >"$T/egress.err"
	: >"$T/egress.audit"
	inns_bg "$AGENTBOX" egress-proxy serve --listen 127.0.0.1:0 --audit-log "$T/egress.audit" "$@" \
		2>"$T/egress.err" </dev/null
	wait_for "$T/egress.err" 'listening on 127\.0\.0\.1:[0-9]+'
	EG_PORT="$(sed -n 's/.* listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/egress.err")"
	EG="http://127.0.0.1:$EG_PORT"
}

# egress_seen: "METHOD host:port status" for each decision of the egress proxy.
egress_seen() {
	jq -r '"\(.method) \(.host):\(.port) \(.status)"' "$T/egress.audit"
}

chain_config() {
	write_config "{\"threadToken\": \"$TOKEN\", \"upstreams\": [
		{\"name\": \"tls\", \"baseUrl\": \"https://127.0.0.1:$UP_PORT/v1\",
		 \"inject\": [{\"header\": \"x-api-key\", \"value\": \"$SECRET_ANT\"}]},
		{\"name\": \"plain\", \"baseUrl\": \"http://127.0.0.1:$PLAIN_PORT/v1\",
		 \"inject\": [{\"header\": \"x-api-key\", \"value\": \"$SECRET_ANT\"}]}]}"
}

@test "HTTPS_PROXY: CONNECT through the egress proxy, TLS inside the tunnel, secret injected" {
	chain_config
	start_cp HTTPS_PROXY="$EG"
	run ccurl "$CP/tls/echo" -H "$(auth)"
	echo "$output"
	[ "$(echo "$output" | jq -r .url)" = /v1/echo ]
	[ "$(received_header UP x-api-key)" = "$SECRET_ANT" ]
	[ "$(egress_seen)" = "CONNECT 127.0.0.1:$UP_PORT 200" ]
	# HTTPS_PROXY is for https targets only: the http upstream goes direct.
	run ccurl "$CP/plain/echo" -H "$(auth)"
	[ "$(echo "$output" | jq -r .url)" = /v1/echo ]
	[ "$(egress_seen | wc -l)" -eq 1 ]
	# Nothing secret went into the egress proxy's log or audit either.
	! grep -qF -- "$SECRET_ANT" "$T/egress.audit" "$T/egress.err" "$T/cp.err"
	! grep -qF -- "$TOKEN" "$T/egress.audit" "$T/egress.err" "$T/cp.err"
}

@test "HTTP_PROXY: absolute-URI requests through the egress proxy" {
	chain_config
	start_cp HTTP_PROXY="$EG"
	run ccurl "$CP/plain/echo?q=1" -H "$(auth)"
	echo "$output"
	[ "$(echo "$output" | jq -r .url)" = "/v1/echo?q=1" ]
	[ "$(received_header PLAIN host)" = "127.0.0.1:$PLAIN_PORT" ]
	[ "$(received_header PLAIN x-api-key)" = "$SECRET_ANT" ]
	[ "$(egress_seen)" = "GET 127.0.0.1:$PLAIN_PORT 200" ]
	run ccurl "$CP/tls/echo" -H "$(auth)"
	[ "$(echo "$output" | jq -r .url)" = /v1/echo ]
	[ "$(egress_seen | wc -l)" -eq 1 ]
}

@test "fallbacks: https_proxy, ALL_PROXY and all_proxy are used in that order" {
	chain_config
	local var
	for var in https_proxy ALL_PROXY all_proxy; do
		: >"$T/egress.audit"
		start_cp "$var=$EG"
		run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
		[ "$output" = 200 ]
		[ "$(egress_seen)" = "CONNECT 127.0.0.1:$UP_PORT 200" ] || { echo "$var not used" >&2; false; }
		kill "$CP_PID"
	done
	# The first non-empty one wins: an empty HTTPS_PROXY falls through to
	# ALL_PROXY, a set one is used before it.
	: >"$T/egress.audit"
	start_cp HTTPS_PROXY= ALL_PROXY="$EG"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
	[ "$output" = 200 ]
	[ "$(egress_seen | wc -l)" -eq 1 ]
	kill "$CP_PID"
	start_cp HTTPS_PROXY="$EG" ALL_PROXY=http://127.0.0.1:1
	run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
	[ "$output" = 200 ]
}

@test "NO_PROXY: a matching entry bypasses the proxy; a port that differs does not" {
	chain_config
	local np
	for np in "example.com,127.0.0.1" "example.com 127.0.0.1:$UP_PORT" "*" "[127.0.0.1]" " , 127.0.0.1."; do
		: >"$T/egress.audit"
		start_cp HTTPS_PROXY="$EG" NO_PROXY="$np"
		run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
		[ "$output" = 200 ]
		[ ! -s "$T/egress.audit" ] || { echo "NO_PROXY='$np' did not bypass" >&2; false; }
		kill "$CP_PID"
	done
	for np in "127.0.0.1:1" "127.0.0.2" "example.com"; do
		: >"$T/egress.audit"
		start_cp HTTPS_PROXY="$EG" no_proxy="$np"
		run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
		[ "$output" = 200 ]
		[ "$(egress_seen | wc -l)" -eq 1 ] || { echo "no_proxy='$np' bypassed" >&2; false; }
		kill "$CP_PID"
	done
}

@test "proxy credentials become Proxy-Authorization: Basic (recorded by a fake proxy)" {
	chain_config
	# The plain fake upstream plays the proxy: it records the absolute-URI
	# request and its Proxy-Authorization field.
	start_upstream FAKEPROXY plain
	start_cp HTTP_PROXY="http://us%65r:p%40ss:w@127.0.0.1:$FAKEPROXY_PORT/"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/plain/echo" -H "$(auth)"
	[ "$output" = 200 ]
	[ "$(log_requests FAKEPROXY | jq -r .url)" = "http://127.0.0.1:$PLAIN_PORT/v1/echo" ]
	[ "$(received_header FAKEPROXY proxy-authorization)" = "Basic $(printf 'user:p@ss:w' | base64)" ]
	[ -z "$(log_requests PLAIN)" ]
	! grep -q 'p@ss' "$T/cp.err"
}

@test "an unreachable or refusing proxy: 502 upstream request failed" {
	chain_config
	local closed
	closed="$(inns python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
	start_cp HTTPS_PROXY="http://127.0.0.1:$closed" HTTP_PROXY="http://127.0.0.1:$closed"
	local u
	for u in tls plain; do
		run ccurl -D "$T/h" "$CP/$u/echo" -H "$(auth)"
		[ "$output" = "upstream request failed" ]
		grep -q '^HTTP/1.1 502 ' "$T/h"
		grep -qx "upstream $u request failed" "$T/cp.err"
	done
	kill "$CP_PID"
	# An egress proxy that denies loopback answers CONNECT with 403.
	start_egress --deny-loopback
	start_cp HTTPS_PROXY="$EG"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
	[ "$output" = 502 ]
	[ "$(jq -r .decision "$T/egress.audit")" = deny ]
	# A proxy URL that does not parse fails the request the same way.
	kill "$CP_PID"
	start_cp HTTPS_PROXY="socks5://127.0.0.1:1080"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/tls/echo" -H "$(auth)"
	[ "$output" = 502 ]
	[ -z "$(log_requests UP)" ]
}
