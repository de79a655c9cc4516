#!/usr/bin/env bats
# agentbox credential-proxy serve: the command line, every status of the
# contract in its order (503, 401, 400, 404, 502), what is sent upstream
# (headers replaced and stripped, Host, path mapping, SNI and certificate
# checks against a test CA), hot reload, and that neither the token nor a
# secret ever shows up in the proxy's output.  Each test runs in a network
# namespace holding only lo (credential/common.bash).

load credential/common

setup() {
	cred_setup
}

teardown() {
	cred_teardown
}

# no_leak: neither the token nor a secret in the proxy's output.
no_leak() {
	local s
	for s in "$TOKEN" "$SECRET_ANT" "$SECRET_OAI"; do
		if grep -qF -- "$s" "$T/cp.err"; then
			echo "secret leaked into stderr:" >&2
			cat "$T/cp.err" >&2
			return 1
		fi
	done
}

# ---- the command line -------------------------------------------------------

@test "--help prints exactly the usage line on stdout and exits 0" {
	run --separate-stderr "$AGENTBOX" credential-proxy serve --listen 127.0.0.1:1 --help
	[ "$status" -eq 0 ]
	[ "$output" = "usage: agentbox credential-proxy serve [--listen host:port] [--config /tmp/credential.json]" ]
	[ -z "$stderr" ]
	run --separate-stderr "$AGENTBOX" credential-proxy --help
	[ "$status" -eq 0 ]
	[ "$output" = "usage: agentbox credential-proxy serve [--listen host:port] [--config /tmp/credential.json]" ]
}

@test "invoked as t3-credential-proxy (multi-call) it names itself so" {
	ln -s "$AGENTBOX" "$T/t3-credential-proxy"
	run --separate-stderr "$T/t3-credential-proxy" --help
	[ "$status" -eq 0 ]
	[ "$output" = "usage: t3-credential-proxy serve [--listen host:port] [--config /tmp/credential.json]" ]
	inns_bg "$T/t3-credential-proxy" serve --listen 127.0.0.1:0 --config "$CONFIG" 2>"$T/t3.err"
	wait_for "$T/t3.err" '^t3-credential-proxy listening on 127\.0\.0\.1:[0-9]+$'
}

@test "bad flags: a message on stderr, exit 2, nothing served" {
	local args
	for args in "serve --bogus" "serve --listen" "serve --listen nocolon" "serve --listen 127.0.0.1:65536" \
		"serve --config" "frobnicate" ""; do
		# shellcheck disable=SC2086
		run --separate-stderr inns "$AGENTBOX" credential-proxy $args
		echo "[$args] -> $status: $stderr"
		[ "$status" -eq 2 ]
		[ -n "$stderr" ]
		[[ "$stderr" != *"listening on"* ]]
	done
}

# ---- statuses, in their order -------------------------------------------------

@test "no configuration yet: 503 with the exact text/plain body; then one appears" {
	start_upstream UP
	start_cp
	run ccurl -D "$T/h" "$CP/anthropic/v1/echo" -H "$(auth)"
	[ "$output" = "credential configuration is not available yet" ]
	grep -q '^HTTP/1.1 503 ' "$T/h"
	grep -qi '^content-type: text/plain' "$T/h"
	# Even without a token: the configuration check comes first.
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo"
	[ "$output" = 503 ]
	write_config "$(default_config "$UP_PORT")"
	wait_for "$T/cp.err" '^credential config loaded with upstreams \[anthropic,openai,sub\.path_1-x\]$'
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "$(auth)"
	[ "$output" = 200 ]
	no_leak
}

@test "a file created and written slowly is read once, when closed" {
	start_cp
	rm -f "$CONFIG"
	{
		printf '{"threadToken": "%s", ' "$TOKEN"
		sleep 0.5 # the scenario: half a document sits there for a while
		printf '"upstreams": []}\n'
	} >"$CONFIG"
	wait_for "$T/cp.err" '^credential config loaded with upstreams \[\]$'
	# A malformed line has no event to wait for: give a late one 0.2 s.
	sleep 0.2
	! grep -q malformed "$T/cp.err"
}

@test "401 unauthorized: missing, wrong, same-length wrong, other scheme, two tokens; nothing upstream" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	grep -qx 'credential config loaded with upstreams \[anthropic,openai,sub\.path_1-x\]' "$T/cp.err"
	local same_len="${TOKEN%?}X"
	[ "${#same_len}" -eq "${#TOKEN}" ]
	local h
	for h in "X-None: 1" "Authorization: Bearer wrong" "Authorization: Bearer $same_len" \
		"Authorization: Basic $TOKEN" "Authorization: Bearer" "Authorization: Bearer ${TOKEN}x" \
		"Authorization: $TOKEN"; do
		run ccurl -D "$T/h" "$CP/anthropic/v1/echo" -H "$h"
		echo "[$h] -> $output"
		[ "$output" = "unauthorized" ]
		grep -q '^HTTP/1.1 401 ' "$T/h"
		grep -qi '^content-type: text/plain' "$T/h"
	done
	# Two Authorization fields, one of them right: refused.
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "$(auth)" -H "authorization: Bearer x"
	[ "$output" = 401 ]
	# The scheme is case-insensitive (RFC 9110 11.1).
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "authorization: bEARER $TOKEN"
	[ "$output" = 200 ]
	[ "$(log_requests UP | wc -l)" -eq 1 ]
	no_leak
}

@test "400 path traversal, also percent-encoded; checked after the token; nothing upstream" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	local p
	for p in "/anthropic/../x" "/anthropic/%2e%2e/x" "/anthropic/%2E%2e/x" "/anthropic/.%2e/x" \
		"/anthropic/./v1/echo" "/anthropic/%2e/v1" "/anthropic/v1/.." "/anthropic/a%2f..%2fb" \
		"/anthropic/a/..%5cb" "/anthropic/a/..\\b" "/../anthropic/v1/echo" "/anthropic/v1/echo/..?x=1"; do
		run ccurl --path-as-is -D "$T/h" "$CP$p" -H "$(auth)"
		echo "[$p] -> $output"
		[ "$output" = "path traversal is not allowed" ]
		grep -q '^HTTP/1.1 400 ' "$T/h"
	done
	# Without the token the answer is 401: the order is fixed.
	run ccurl --path-as-is -o /dev/null -w '%{http_code}' "$CP/anthropic/%2e%2e/x"
	[ "$output" = 401 ]
	# Dots inside names are fine.
	run ccurl "$CP/anthropic/v1/...x/.a/echo" -H "$(auth)"
	[ "$(echo "$output" | jq -r .url)" = "/v1/...x/.a/echo" ]
	[ "$(log_requests UP | wc -l)" -eq 1 ]
}

@test "404 unknown upstream: nothing is sent upstream, not even a connection" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	local p
	for p in /nope/v1/echo / /ANTHROPIC/v1/echo /anthropicx/echo "/%61nthropicx/echo" "/?x=1"; do
		run ccurl -D "$T/h" "$CP$p" -H "$(auth)"
		echo "[$p] -> $output"
		[ "$output" = "unknown upstream" ]
		grep -q '^HTTP/1.1 404 ' "$T/h"
	done
	[ ! -s "$T/UP.log" ]
	# A percent-encoded name is decoded before the lookup.
	run ccurl -o /dev/null -w '%{http_code}' "$CP/%61nthropic/v1/echo" -H "$(auth)"
	[ "$output" = 200 ]
}

# ---- what goes upstream -------------------------------------------------------

@test "headers: Authorization and strip list dropped, inject replaces, Host set, hop-by-hop gone, token never forwarded" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	run ccurl "$CP/anthropic/v1/echo?beta=true&x=%2F" -H "$(auth)" -H "x-api-key: client-supplied" \
		-H "X-API-KEY: second-copy" -H "x-strip-me: 1" -H "anthropic-beta: tools" -H "x-keep: kept" \
		-H "Connection: x-hop-named" -H "x-hop-named: 1" -H "Keep-Alive: timeout=5" -H "TE: trailers" \
		-H "Host: evil.example" -H "x-carry: prefix-$TOKEN-suffix" -H "Proxy-Authorization: Basic Zm9v"
	echo "$output"
	[ "$(echo "$output" | jq -r .url)" = "/v1/echo?beta=true&x=%2F" ]
	[ "$(echo "$output" | jq -r .servername)" = null ] # IP literal: no SNI (RFC 6066)
	[ "$(received_header UP x-api-key)" = "$SECRET_ANT" ]
	[ "$(received_header UP host)" = "127.0.0.1:$UP_PORT" ]
	[ "$(received_header UP x-keep)" = kept ]
	local gone
	for gone in authorization x-strip-me anthropic-beta x-hop-named keep-alive te proxy-authorization x-carry; do
		[ -z "$(received_header UP "$gone")" ] || { echo "$gone was forwarded" >&2; false; }
	done
	! log_requests UP | grep -qF "$TOKEN"
	no_leak
}

@test "openai: a DNS name gets SNI and hostname verification; Authorization is the injected one; path under baseUrl" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	run ccurl "$CP/openai/chat/echo" -H "$(auth)"
	echo "$output"
	[ "$(echo "$output" | jq -r .url)" = "/v1/chat/echo" ]
	[ "$(echo "$output" | jq -r .servername)" = localhost ]
	[ "$(received_header UP authorization)" = "Bearer $SECRET_OAI" ]
	[ "$(received_header UP host)" = "localhost:$UP_PORT" ]
	# A baseUrl with a deeper path (trailing slash folded) and a name with . _ -
	run ccurl "$CP/sub.path_1-x/x/echo?q=1" -H "$(auth)"
	[ "$(echo "$output" | jq -r .url)" = "/deep/base/x/echo?q=1" ]
	no_leak
}

@test "bodies: content-length and chunked requests arrive whole; POST answered; keep-alive reuses the upstream" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	head -c 300000 /dev/urandom >"$T/body"
	run ccurl "$CP/anthropic/v1/echo" -H "$(auth)" --data-binary @"$T/body"
	[ "$(echo "$output" | jq -r .bodyBytes)" = 300000 ]
	run ccurl "$CP/anthropic/v1/echo" -H "$(auth)" -H "Transfer-Encoding: chunked" --data-binary @"$T/body"
	[ "$(echo "$output" | jq -r .bodyBytes)" = 300000 ]
	[ "$(received_header UP transfer-encoding)" = chunked ]
	# 5 MiB down, byte for byte.
	run ccurl -o "$T/down" -w '%{http_code} %{size_download}' "$CP/anthropic/v1/bytes/5242880" -H "$(auth)"
	[ "$output" = "200 5242880" ]
	[ "$(tr -d x <"$T/down" | wc -c)" -eq 0 ]
	# Three requests on one client connection: one upstream connection.
	: >"$T/UP.log"
	run ccurl -o /dev/null -o /dev/null -o /dev/null -w '%{http_code}\n' -H "$(auth)" \
		"$CP/anthropic/v1/tiny" "$CP/anthropic/v1/tiny" "$CP/anthropic/v1/tiny"
	[ "$output" = $'200\n200\n200' ]
	[ "$(grep -c '"connection"' "$T/UP.log")" -eq 1 ]
}

# ---- TLS verification -------------------------------------------------------

@test "TLS: a certificate for another name, or from an untrusted CA, is a 502 with the stderr line" {
	start_upstream OTHER other
	start_upstream ROGUE rogue-srv
	write_config "{\"threadToken\": \"$TOKEN\", \"upstreams\": [
		{\"name\": \"other\", \"baseUrl\": \"https://127.0.0.1:$OTHER_PORT\"},
		{\"name\": \"othername\", \"baseUrl\": \"https://localhost:$OTHER_PORT\"},
		{\"name\": \"rogue\", \"baseUrl\": \"https://localhost:$ROGUE_PORT\"}]}"
	start_cp
	local u
	for u in other othername rogue; do
		run ccurl -D "$T/h" "$CP/$u/echo" -H "$(auth)"
		[ "$output" = "upstream request failed" ]
		grep -q '^HTTP/1.1 502 ' "$T/h"
		grep -qx "upstream $u request failed" "$T/cp.err"
	done
	[ -z "$(log_requests OTHER)" ]
	[ -z "$(log_requests ROGUE)" ]
}

@test "TLS trust: the system roots alone refuse the test CA; SSL_CERT_FILE adds it like NODE_EXTRA_CA_CERTS" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp NODE_EXTRA_CA_CERTS=
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "$(auth)"
	[ "$output" = 502 ]
	kill "$CP_PID"
	start_cp NODE_EXTRA_CA_CERTS= SSL_CERT_FILE="$CERTS/ca.pem"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "$(auth)"
	[ "$output" = 200 ]
	# A CA file that cannot be read is reported and skipped (it only adds trust).
	kill "$CP_PID"
	start_cp NODE_EXTRA_CA_CERTS="$T/missing.pem"
	grep -q 'NODE_EXTRA_CA_CERTS=.*could not be loaded' "$T/cp.err"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "$(auth)"
	[ "$output" = 502 ]
}

# ---- upstream failures ------------------------------------------------------

@test "502 upstream request failed: refused, reset before the head; after the head the connection drops" {
	start_upstream UP
	local closed
	closed="$(inns python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
	write_config "{\"threadToken\": \"$TOKEN\", \"upstreams\": [
		{\"name\": \"up\", \"baseUrl\": \"https://127.0.0.1:$UP_PORT\"},
		{\"name\": \"down\", \"baseUrl\": \"https://127.0.0.1:$closed\"},
		{\"name\": \"noname\", \"baseUrl\": \"https://no-such-host.invalid\"}]}"
	start_cp
	run ccurl -D "$T/h" "$CP/down/x" -H "$(auth)"
	[ "$output" = "upstream request failed" ]
	grep -q '^HTTP/1.1 502 ' "$T/h"
	grep -qi '^content-type: text/plain' "$T/h"
	grep -qx 'upstream down request failed' "$T/cp.err"
	run ccurl -D "$T/h" "$CP/up/reset" -H "$(auth)"
	[ "$output" = "upstream request failed" ]
	grep -qx 'upstream up request failed' "$T/cp.err"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/noname/x" -H "$(auth)"
	[ "$output" = 502 ]
	grep -qx 'upstream noname request failed' "$T/cp.err"
	# After the head: the client sees 200 and then the connection ends early.
	run --separate-stderr ccurl -o "$T/part" -w '%{http_code}' "$CP/up/truncate" -H "$(auth)"
	echo "curl: $status $output $stderr"
	[ "$status" -eq 18 ] # CURLE_PARTIAL_FILE
	[ "$output" = 200 ]
	[ "$(cat "$T/part")" = 0123456789 ]
	no_leak
}

# ---- configuration ----------------------------------------------------------

@test "hot reload: a new file is used at once; a malformed one keeps the previous configuration" {
	start_upstream UP
	write_config "{\"threadToken\": \"$TOKEN\", \"upstreams\": [{\"name\": \"anthropic\", \"baseUrl\": \"https://127.0.0.1:$UP_PORT\"}]}"
	start_cp
	grep -qx 'credential config loaded with upstreams \[anthropic\]' "$T/cp.err"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/openai/chat/echo" -H "$(auth)"
	[ "$output" = 404 ]
	write_config "$(default_config "$UP_PORT")"
	wait_for "$T/cp.err" '^credential config loaded with upstreams \[anthropic,openai,sub\.path_1-x\]$'
	run ccurl -o /dev/null -w '%{http_code}' "$CP/openai/chat/echo" -H "$(auth)"
	[ "$output" = 200 ]
	# Malformed JSON, written in place (not renamed): previous kept.
	echo '{"threadToken": "x", "upstreams": [' >"$CONFIG"
	wait_for "$T/cp.err" '^credential config is malformed; keeping previous configuration$'
	run ccurl -o /dev/null -w '%{http_code}' "$CP/openai/chat/echo" -H "$(auth)"
	[ "$output" = 200 ]
	# A new token replaces the old one.
	write_config "{\"threadToken\": \"new-token-123\", \"upstreams\": [{\"name\": \"solo\", \"baseUrl\": \"https://127.0.0.1:$UP_PORT\"}]}"
	wait_for "$T/cp.err" '^credential config loaded with upstreams \[solo\]$'
	run ccurl -o /dev/null -w '%{http_code}' "$CP/solo/echo" -H "$(auth)"
	[ "$output" = 401 ]
	run ccurl -o /dev/null -w '%{http_code}' "$CP/solo/echo" -H "Authorization: Bearer new-token-123"
	[ "$output" = 200 ]
	# The file disappearing keeps the configuration too.
	rm "$CONFIG"
	# Nothing is logged for a removal, so there is no event to wait on:
	# give the proxy 0.3 s to (wrongly) drop the configuration.
	sleep 0.3
	run ccurl -o /dev/null -w '%{http_code}' "$CP/solo/echo" -H "Authorization: Bearer new-token-123"
	[ "$output" = 200 ]
	[ "$(grep -c 'malformed' "$T/cp.err")" -eq 1 ]
	no_leak
}

@test "validation: any invalid entry rejects the whole document" {
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
	local ok="{\"name\": \"good\", \"baseUrl\": \"https://127.0.0.1:$UP_PORT\"}"
	local bad n=1
	local docs=(
		'[]'
		'{"upstreams": []}'
		"{\"threadToken\": \"\", \"upstreams\": []}"
		"{\"threadToken\": \"has space\", \"upstreams\": []}"
		"{\"threadToken\": \"t\"}"
		"{\"threadToken\": \"t\", \"upstreams\": {}}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"bad name\", \"baseUrl\": \"https://x.example\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"-dash\", \"baseUrl\": \"https://x.example\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"$(printf 'a%.0s' {1..65})\", \"baseUrl\": \"https://x.example\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, $ok]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"ftp://x.example\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"http://api.example.com\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"https://u:p@x.example\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"https://127.1\"}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"https://x.example\", \"inject\": [{\"header\": \"x-a\", \"value\": \"a\\r\\nx-evil: 1\"}]}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"https://x.example\", \"inject\": [{\"header\": \"bad header\", \"value\": \"a\"}]}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"https://x.example\", \"inject\": [{\"header\": \"Content-Length\", \"value\": \"1\"}]}]}"
		"{\"threadToken\": \"t\", \"upstreams\": [$ok, {\"name\": \"n\", \"baseUrl\": \"https://x.example\", \"stripRequestHeaders\": [\"ok\", 3]}]}"
		"{\"threadToken\": \"t\", \"threadToken\": \"u\", \"upstreams\": []}"
	)
	for bad in "${docs[@]}"; do
		write_config "$bad"
		wait_count "$T/cp.err" '^credential config is malformed; keeping previous configuration$' "$n" ||
			{ echo "accepted: $bad" >&2; false; }
		! grep -q 'loaded with upstreams \[good' "$T/cp.err"
		n=$((n + 1))
		run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/v1/echo" -H "$(auth)"
		[ "$output" = 200 ] || { echo "after [$bad]: $output" >&2; false; }
	done
	# http:// is accepted for loopback, with an empty upstream list too.
	write_config "{\"threadToken\": \"t\", \"upstreams\": [{\"name\": \"n\", \"baseUrl\": \"http://localhost:1/x\"}, {\"name\": \"m\", \"baseUrl\": \"http://[::1]:2\"}]}"
	wait_for "$T/cp.err" '^credential config loaded with upstreams \[n,m\]$'
	write_config '{"threadToken": "t", "upstreams": []}'
	wait_for "$T/cp.err" '^credential config loaded with upstreams \[\]$'
}

@test "a malformed file at start: the message, and 503 until a good one arrives" {
	echo 'not json' >"$CONFIG"
	start_cp
	grep -qx 'credential config is malformed; keeping previous configuration' "$T/cp.err"
	run ccurl -o /dev/null -w '%{http_code}' "$CP/anthropic/x" -H "$(auth)"
	[ "$output" = 503 ]
}
