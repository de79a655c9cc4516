#!/usr/bin/env bats
# agentbox egress-proxy serve: the command line, CONNECT and absolute-URI
# requests allowed and denied, the exact refusal strings, forwarding
# (hop-by-hop fields, Host, keep-alive, bodies) and the audit log.  Every
# test runs in a network namespace holding only lo (egress/common.bash).

load egress/common

ALL_DENY=(--deny-loopback --deny-private --deny-link-local --deny-metadata)

setup() {
	eg_setup
}

teardown() {
	eg_teardown
}

# ---- the command line -------------------------------------------------------

@test "--help anywhere prints the usage line on stdout, exits 0, and does not listen" {
	run --separate-stderr "$AGENTBOX" egress-proxy serve --listen 127.0.0.1:1 --help
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "usage: agentbox egress-proxy serve [--listen host:port] [--deny-loopback] [--deny-private] [--deny-link-local] [--deny-metadata] [--resolve-before-connect]" ]
	[ -z "$stderr" ]
	run "$AGENTBOX" egress-proxy --help serve --bogus-flag
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: agentbox egress-proxy serve "* ]]
}

@test "invoked as t3-egress-proxy (multi-call) it names itself so" {
	ln -s "$AGENTBOX" "$T/t3-egress-proxy"
	run --separate-stderr "$T/t3-egress-proxy" --help
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "usage: t3-egress-proxy serve [--listen host:port] [--deny-loopback] [--deny-private] [--deny-link-local] [--deny-metadata] [--resolve-before-connect]" ]
	"${INNS[@]}" "$T/t3-egress-proxy" serve --listen 127.0.0.1:0 --deny-private 2>"$T/t3.err" &
	BG_PIDS+=("$!")
	wait_for "$T/t3.err" '^t3-egress-proxy listening on 127\.0\.0\.1:[0-9]+ denying \[private\]$'
}

@test "bad flags and values: a message on stderr, exit 2, nothing served" {
	local args
	for args in "serve --bogus" "serve --listen" "serve --listen nocolon" "serve --listen 127.0.0.1:65536" \
		"serve --listen 127.0.0.1:x" "serve --allow-cidr 10.0.0.1/8" "serve --allow-host" \
		"serve --allow-host bad..host" "serve --max-connections 0" "serve --idle-timeout -1" \
		"frobnicate" ""; do
		# shellcheck disable=SC2086
		run --separate-stderr inns "$AGENTBOX" egress-proxy $args
		echo "[$args] -> $status: $stderr"
		[ "$status" -eq 2 ]
		[ -n "$stderr" ]
		[[ "$stderr" != *"listening on"* ]]
	done
}

@test "a policy file that does not parse is a clear error, exit 2" {
	echo '{"allow_hosts": [' >"$T/bad.json"
	run --separate-stderr inns "$AGENTBOX" egress-proxy serve --policy "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *bad.json* ]]
}

@test "listening line: the real port for port 0 and the denied classes in order" {
	start_proxy --deny-metadata --deny-loopback
	grep -Eq "^agentbox egress-proxy listening on 127\.0\.0\.1:$PROXY_PORT denying \[loopback,metadata\]$" "$T/proxy.err"
	[ "$PROXY_PORT" -gt 0 ]
	start_origin WEB
	# A second proxy with all four, and the port is really served.
	: >"$T/proxy.err"
	start_proxy "${ALL_DENY[@]}"
	grep -q "denying \[loopback,private,link-local,metadata\]$" "$T/proxy.err"
	run pcurl -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WEB_PORT/bytes/1"
	[ "$output" = 403 ]
}

@test "SIGTERM and SIGINT stop the proxy cleanly: exit 0, no longer listening" {
	local sig
	for sig in TERM INT; do
		start_proxy --deny-loopback
		kill -"$sig" "$PROXY_PID"
		local rc=0
		timeout 10 tail --pid="$PROXY_PID" -f /dev/null || rc=$?
		[ "$rc" -eq 0 ] || { echo "SIG$sig: proxy still running"; return 1; }
		wait "$PROXY_PID" || rc=$?
		[ "$rc" -eq 0 ] || { echo "SIG$sig: exit $rc"; cat "$T/proxy.err"; return 1; }
		! inns curl -s --max-time 2 -o /dev/null "http://127.0.0.1:$PROXY_PORT/" || return 1
	done
}

@test "--listen splits at the last colon: [::1]:0 listens on IPv6 loopback" {
	"${INNS[@]}" "$AGENTBOX" egress-proxy serve --listen '[::1]:0' 2>"$T/v6.err" &
	BG_PIDS+=("$!")
	wait_for "$T/v6.err" 'listening on \[::1\]:[0-9]+ denying \[\]$'
}

# ---- allowed ------------------------------------------------------------------

@test "absolute-URI GET through the proxy reaches an --allow-cidr origin" {
	start_origin WEB
	start_proxy "${ALL_DENY[@]}" --allow-cidr 127.0.0.1/32
	run -0 pcurl "http://127.0.0.1:$WEB_PORT/bytes/20"
	[ "$output" = "0123456789abcdef0123" ]
	grep -qx "GET 127.0.0.1:$WEB_PORT -> 127.0.0.1:$WEB_PORT" "$T/proxy.err"
	[ "$(audit_last .decision)" = allow ]
	[ "$(audit_last .reason)" = "allowed by allow-cidr 127.0.0.1/32" ]
	[ "$(audit_last .addr)" = "127.0.0.1:$WEB_PORT" ]
	[ "$(audit_last .method)" = GET ]
	[ "$(audit_last .host)" = 127.0.0.1 ]
	[ "$(audit_last .port)" = "$WEB_PORT" ]
	[ "$(audit_last .status)" = 200 ]
	[ "$(audit_last .bytes_down)" = 20 ]
	[ "$(audit_last '.sandbox // "none"')" = none ]
	[ "$(audit_last '.duration_ms | type')" = number ]
	[[ "$(audit_last .time)" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]]
}

@test "a kept-alive upstream that closes as it is reused: GET is sent once more, POST gets 502" {
	start_origin WEB
	start_proxy "${ALL_DENY[@]}" --allow-cidr 127.0.0.1/32
	U="http://127.0.0.1:$WEB_PORT"
	# /then-drop answers with its connection's number and drops that
	# connection at its next request: the proxy's reuse meets a close.
	run -0 inns curl -sS --max-time 20 --proxy "$PROXY" "$U/then-drop" \
		--next --proxy "$PROXY" -w ' %{http_code}' "$U/conn"
	[ "$output" = "12 200" ]
	run -0 inns curl -sS --max-time 20 --proxy "$PROXY" "$U/then-drop" \
		--next --proxy "$PROXY" -o /dev/null -w '%{http_code}' -X PUT "$U/conn"
	[ "${output: -3}" = 200 ]
	# A POST may have had an effect: never sent twice.
	run -0 inns curl -sS --max-time 20 --proxy "$PROXY" "$U/then-drop" \
		--next --proxy "$PROXY" -o /dev/null -w '%{http_code}' -d x "$U/echo"
	[ "${output: -3}" = 502 ]
	# The retry is decided by the policy again, like the first request: the
	# PUT twice (reused, then on a new upstream), the POST once.
	[ "$(grep -c "^PUT 127.0.0.1:$WEB_PORT -> " "$T/proxy.err")" -eq 2 ]
	[ "$(grep -c "^POST 127.0.0.1:$WEB_PORT -> " "$T/proxy.err")" -eq 1 ]
}

@test "an address the host gains after start counts as its own (denied as loopback)" {
	start_proxy --deny-loopback
	# Added to lo of the test's own namespace after the proxy read its
	# addresses: 10.77.0.1 is private, which this proxy allows, unless it
	# knows the address is its host's.
	inns ip addr add 10.77.0.1/32 dev lo
	start_origin LATE --addr 10.77.0.1
	run -0 pcurl -o /dev/null -w '%{http_code}' "http://10.77.0.1:$LATE_PORT/bytes/3"
	[ "$output" = 403 ]
	[ "$(audit_last .reason)" = "local interface address 10.77.0.1" ]
	# Another private address that is not the host's still passes.
	inns ip addr del 10.77.0.1/32 dev lo
	run -0 pcurl -o /dev/null -w '%{http_code}' "http://10.77.0.2:$LATE_PORT/bytes/3"
	[ "$output" != 403 ]
}

@test "CONNECT tunnel: 200 Connection Established, then bytes both ways" {
	start_origin WEB
	start_proxy "${ALL_DENY[@]}" --allow-cidr 127.0.0.1/32
	run -0 pcurl --proxytunnel "http://127.0.0.1:$WEB_PORT/bytes/100000" -o "$T/out"
	[ "$(stat -c %s "$T/out")" -eq 100000 ]
	grep -qx "CONNECT 127.0.0.1:$WEB_PORT -> 127.0.0.1:$WEB_PORT" "$T/proxy.err"
	# The exact success line, and bytes sent right after the head are forwarded.
	n=$(wc -l <"$T/audit.log")
	run -0 bash -c "printf 'CONNECT 127.0.0.1:$WEB_PORT HTTP/1.1\r\nHost: x\r\n\r\nGET /bytes/5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
	[[ "$output" == $'HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK\r\n'* ]]
	[[ "$output" == *$'\r\n\r\n01234' ]]
	audit_wait $((n + 1))
	[ "$(audit_last .status)" = 200 ]
	[ "$(audit_last .method)" = CONNECT ]
	[ "$(audit_last .bytes_up)" -gt 0 ]
}

@test "a name with --resolve-before-connect: localhost is refused by name when loopback is denied" {
	start_origin WEB
	start_proxy --deny-loopback --resolve-before-connect --allow-cidr 127.0.0.1/32
	run -0 pcurl -w '\n%{http_code}' "http://localhost:$WEB_PORT/bytes/1"
	[ "${lines[1]}" = 403 ]
	[ "${lines[0]}" = "egress denied: loopback name localhost" ]
	run -0 pcurl -w '\n%{http_code}' "http://foo.localhost:$WEB_PORT/bytes/1"
	[ "${lines[0]}" = "egress denied: loopback name foo.localhost" ]
	# Without --deny-loopback, localhost resolves and is dialed at a vetted address.
	start_proxy --resolve-before-connect
	run -0 pcurl "http://localhost:$WEB_PORT/bytes/3"
	[ "$output" = 012 ]
	grep -Eq "^GET localhost:$WEB_PORT -> (127\.0\.0\.1|\[::1\]):$WEB_PORT$" "$T/proxy.err"
}

# ---- denied ---------------------------------------------------------------------

# denied URL REASON: a GET for URL gets the 403 with exactly that reason.
denied() {
	run -0 pcurl -D "$T/h" -w '%{http_code}' "$1"
	echo "$1 -> $output"
	[ "$output" = "egress denied: $2"$'\n403' ]
	grep -qi '^content-type: text/plain; charset=utf-8' "$T/h"
	grep -qi '^connection: close' "$T/h"
	grep -q '^HTTP/1.1 403 Forbidden' "$T/h"
}

@test "loopback denied: 403 with the reason, stderr and audit say why" {
	start_origin WEB
	start_proxy "${ALL_DENY[@]}"
	denied "http://127.0.0.1:$WEB_PORT/" "loopback address 127.0.0.1"
	grep -qx "GET 127.0.0.1:$WEB_PORT denied: loopback address 127.0.0.1" "$T/proxy.err"
	[ "$(audit_last .decision)" = deny ]
	[ "$(audit_last .reason)" = "loopback address 127.0.0.1" ]
	[ "$(audit_last .status)" = 403 ]
	[ "$(audit_last '.addr // "none"')" = none ]
	# The same for CONNECT, with its own stderr line.
	n=$(wc -l <"$T/audit.log")
	run -0 bash -c "printf 'CONNECT 127.0.0.1:$WEB_PORT HTTP/1.1\r\nHost: x\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
	[[ "$output" == "HTTP/1.1 403 Forbidden"$'\r\n'* ]]
	# (run drops the body's final newline; content-length counts it)
	[[ "$output" == *$'\r\ncontent-length: 42\r\n'*$'\r\n\r\n'"egress denied: loopback address 127.0.0.1" ]]
	grep -qx "CONNECT 127.0.0.1:$WEB_PORT denied: loopback address 127.0.0.1" "$T/proxy.err"
}

@test "private, metadata, link-local and translated forms are denied (never dialed)" {
	start_proxy "${ALL_DENY[@]}"
	denied "http://10.1.2.3/" "private address 10.1.2.3"
	denied "http://192.168.0.1:8080/" "private address 192.168.0.1"
	denied "http://169.254.169.254/latest/meta-data/" "metadata address 169.254.169.254"
	denied "http://100.100.100.200/" "metadata address 100.100.100.200"
	denied "http://[fd00:ec2::254]/" "metadata address fd00:ec2::254"
	denied "http://169.254.1.1/" "link-local address 169.254.1.1"
	denied "http://[::ffff:127.0.0.1]/" "loopback address ::ffff:127.0.0.1 (IPv4-mapped form of 127.0.0.1)"
	denied "http://[::1]/" "loopback address ::1"
	denied "http://0.0.0.0/" "unspecified address 0.0.0.0"
	# Nothing was dialed: no "->" line at all.
	! grep -q -- ' -> ' "$T/proxy.err"
}

@test "non-canonical IPv4 spellings are refused, never resolved" {
	# Raw requests: curl would rewrite these hosts to dotted quads itself.
	start_proxy --resolve-before-connect
	local h m
	for h in 2130706433 0x7f.1 0177.0.0.1 127.1 127.000.000.001 1.2.3 127.0.0.1.; do
		for m in GET CONNECT; do
			local target="http://$h/"
			[ "$m" = CONNECT ] && target="$h:80"
			run -0 bash -c "printf '$m $target HTTP/1.1\r\nHost: x\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
			echo "$m $target -> $output"
			[[ "$output" == "HTTP/1.1 403 Forbidden"$'\r\n'*$'\r\n\r\n'"egress denied: non-canonical IPv4 address" ]]
		done
	done
	! grep -q -- ' -> ' "$T/proxy.err"
}

@test "a name without --resolve-before-connect: name resolution is disabled" {
	start_proxy
	denied "http://example.com/" "name resolution is disabled"
	grep -qx "GET example.com:80 denied: name resolution is disabled" "$T/proxy.err"
}

@test "--allow-host and --deny-host" {
	start_origin WEB
	start_proxy --allow-host "127.0.0.1:$WEB_PORT" --deny-host 127.0.0.2
	run -0 pcurl "http://127.0.0.1:$WEB_PORT/bytes/2"
	[ "$output" = 01 ]
	denied "http://127.0.0.1:1/" "host not in allowlist"
	denied "http://127.0.0.2:$WEB_PORT/" "host in denylist"
}

@test "bad CONNECT port: 403 egress denied: invalid port" {
	start_proxy
	local t
	for t in 127.0.0.1:0 127.0.0.1:65536 127.0.0.1 127.0.0.1: 127.0.0.1:-1 127.0.0.1:0x50; do
		run -0 bash -c "printf 'CONNECT $t HTTP/1.1\r\nHost: x\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
		echo "$t -> $output"
		[[ "$output" == "HTTP/1.1 403 Forbidden"$'\r\n'* ]]
		[[ "$output" == *$'\r\ncontent-length: 28\r\n'*$'\r\n\r\negress denied: invalid port' ]]
	done
	grep -qx "CONNECT 127.0.0.1:0 denied: invalid port" "$T/proxy.err"
}

@test "request targets: origin-form, unparseable and https:// are 400 with the exact reason" {
	start_proxy
	local req want
	while IFS='|' read -r req want; do
		run -0 bash -c "printf '$req HTTP/1.1\r\nHost: x\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
		echo "$req -> $output"
		[[ "$output" == "HTTP/1.1 400 Bad Request"$'\r\n'* ]]
		[[ "$output" == *$'\r\n\r\n'"$want" ]]
	done <<-'EOF'
		GET /index.html|absolute-URI request required
		GET *|absolute-URI request required
		GET http:/nohost|invalid absolute URI
		GET http://user:pw@127.0.0.1/|invalid absolute URI
		GET example.com:80|invalid absolute URI
		GET https://127.0.0.1/|use CONNECT for https
	EOF
}

@test "dial failure is 502 Bad Gateway" {
	start_proxy
	run -0 pcurl -w '\n%{http_code}' "http://127.0.0.1:1/"
	[ "${lines[-1]}" = 502 ]
	[[ "${lines[0]}" == "connect to 127.0.0.1:1: Connection refused" ]]
	[ "$(audit_last .decision)" = allow ]
	[ "$(audit_last .status)" = 502 ]
	[ "$(audit_last .error)" = "connect to 127.0.0.1:1: Connection refused" ]
}

# ---- forwarding ---------------------------------------------------------------------

@test "hop-by-hop fields are stripped, Host comes from the URL" {
	start_origin WEB
	start_proxy
	run -0 pcurl "http://127.0.0.1:$WEB_PORT/headers" \
		-H 'Host: evil.example' -H 'Connection: X-Private, keep-alive' -H 'X-Private: secret' \
		-H 'Keep-Alive: timeout=5' -H 'Proxy-Authorization: Basic Zm9vOmJhcg==' \
		-H 'TE: trailers' -H 'Trailer: X-T' -H 'Upgrade: websocket' -H 'X-Kept: yes'
	echo "$output"
	[[ "$output" == "GET /headers HTTP/1.1"$'\r\n'"Host: 127.0.0.1:$WEB_PORT"$'\r\n'* ]]
	[[ "$output" == *$'\r\nX-Kept: yes\r\n'* ]]
	local f
	for f in evil.example X-Private Keep-Alive Proxy-Authorization Proxy-Connection 'TE:' 'Trailer:' Upgrade 'Connection:'; do
		[[ "$output" != *"$f"* ]] || { echo "leaked: $f"; return 1; }
	done
}

@test "hop-by-hop fields of the response are stripped too" {
	start_origin WEB
	start_proxy
	run -0 pcurl -D "$T/h" -o /dev/null "http://127.0.0.1:$WEB_PORT/hop"
	cat "$T/h"
	grep -q '^X-End: 1' "$T/h"
	! grep -Eqi '^(x-hop|keep-alive|proxy-authenticate|upgrade|trailer):' "$T/h"
	! grep -Eqi '^connection: (x-hop|upgrade)' "$T/h"
}

@test "keep-alive with the client: two requests, one connection; pipelined requests" {
	start_origin WEB
	start_proxy
	run -0 pcurl -w '%{num_connects}\n' "http://127.0.0.1:$WEB_PORT/bytes/3" "http://127.0.0.1:$WEB_PORT/chunked/2500"
	[ "${lines[0]}" = 0121 ]
	[ "${#lines[1]}" -eq 2501 ]
	[ "${lines[1]: -1}" = 0 ]
	# Two requests in one write: two responses, in order.
	run -0 bash -c "printf 'GET http://127.0.0.1:$WEB_PORT/bytes/4 HTTP/1.1\r\nHost: a\r\n\r\nGET http://127.0.0.1:$WEB_PORT/bytes/6 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
	[[ "$output" == *$'\r\n\r\n0123HTTP/1.1 200 OK\r\n'*$'\r\n\r\n012345' ]]
	[ "$(grep -c '"status":200' "$T/audit.log")" -eq 4 ]
}

@test "bodies: POST with Content-Length and chunked, 1 MiB both ways, HEAD, until-close, 100-continue" {
	start_origin WEB
	start_proxy
	head -c 1048576 /dev/urandom >"$T/blob"
	run -0 pcurl --data-binary @"$T/blob" -o "$T/back" "http://127.0.0.1:$WEB_PORT/echo"
	cmp "$T/blob" "$T/back"
	run -0 pcurl -H 'Transfer-Encoding: chunked' --data-binary @"$T/blob" -o "$T/back2" "http://127.0.0.1:$WEB_PORT/echo"
	cmp "$T/blob" "$T/back2"
	run -0 pcurl -H 'Expect: 100-continue' --data-binary @"$T/blob" -o "$T/back3" "http://127.0.0.1:$WEB_PORT/echo"
	cmp "$T/blob" "$T/back3"
	run -0 pcurl -o "$T/big" "http://127.0.0.1:$WEB_PORT/bytes/1048576"
	[ "$(stat -c %s "$T/big")" -eq 1048576 ]
	run -0 pcurl -I "http://127.0.0.1:$WEB_PORT/bytes/777"
	[[ "$output" == *"Content-Length: 777"* ]]
	run -0 pcurl -D "$T/h" -o "$T/close" "http://127.0.0.1:$WEB_PORT/close/5000"
	[ "$(stat -c %s "$T/close")" -eq 5000 ]
	grep -qi '^connection: close' "$T/h"
	[ "$(audit_last .bytes_down)" -eq 5000 ]
}

@test "--audit-log - writes the JSON lines to stdout" {
	start_origin WEB
	"${INNS[@]}" "$AGENTBOX" egress-proxy serve --listen 127.0.0.1:0 --audit-log - >"$T/stdout" 2>"$T/proxy.err" &
	BG_PIDS+=("$!")
	wait_for "$T/proxy.err" 'listening on'
	PROXY_PORT="$(sed -n 's/.* listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/proxy.err")"
	PROXY="http://127.0.0.1:$PROXY_PORT"
	run -0 pcurl "http://127.0.0.1:$WEB_PORT/bytes/1"
	wait_for "$T/stdout" '"decision":"allow"'
	jq -e '.status == 200 and .bytes_down == 1' "$T/stdout"
}
