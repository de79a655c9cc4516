#!/usr/bin/env bats
# agentbox preview-bridge: the command line, cdp-automation, `serve` (health,
# the signalling relay and its limits) driven with curl, and the `signal`
# client against `serve` and against relays that fail.

load preview/common

USAGE_TAIL="<serve|request|websocket-framed|cdp-automation|signal> [--stdio] [--listen host:port] [--signaling-relay]"

setup_file() {
	pv_setup_file
}

setup() {
	pv_setup
}

teardown() {
	pv_teardown
}

# sig DOC: POST DOC to the relay; body on stdout, then the status on its own line.
sig() {
	inns curl -sS --max-time 20 -H 'Content-Type: application/json' --data-binary "$1" \
		-w '\n%{http_code}' "$SERVE/signal"
}

# ---- the command line -------------------------------------------------------

@test "--help anywhere prints the usage line on stdout and exits 0" {
	run --separate-stderr "$AGENTBOX" preview-bridge --help
	[ "$status" -eq 0 ]
	[ "$output" = "usage: agentbox preview-bridge $USAGE_TAIL" ]
	[ -z "$stderr" ]
	run --separate-stderr "$AGENTBOX" preview-bridge serve --listen nonsense --help
	[ "$status" -eq 0 ]
	[ "$output" = "usage: agentbox preview-bridge $USAGE_TAIL" ]
}

@test "invoked as t3-preview-bridge (multi-call) it names itself so" {
	ln -s "$AGENTBOX" "$T/t3-preview-bridge"
	run --separate-stderr "$T/t3-preview-bridge" --help
	[ "$status" -eq 0 ]
	[ "$output" = "usage: t3-preview-bridge $USAGE_TAIL" ]
	inns_bg "$T/t3-preview-bridge" serve --listen 127.0.0.1:0 2>"$T/t3.err"
	wait_for "$T/t3.err" '^t3-preview-bridge listening on 127\.0\.0\.1:[0-9]+$'
}

@test "unknown commands, options and bad --listen: a message on stderr, exit 1, nothing served" {
	local args
	for args in "" "frobnicate" "serve --bogus" "serve --listen" "serve --listen nocolon" \
		"serve --listen 127.0.0.1:" "serve --listen 127.0.0.1:65536" "serve --listen 127.0.0.1:x" \
		"serve --listen 127.0.0.1:-1" "serve --listen 999.0.0.1:80" "signal --endpoint ftp://x/" \
		"signal --endpoint http://exa mple/"; do
		# shellcheck disable=SC2086
		run --separate-stderr inns timeout 10 "$AGENTBOX" preview-bridge $args </dev/null
		echo "[$args] -> $status: $stderr"
		[ "$status" -eq 1 ]
		[ -n "$stderr" ]
		[ -z "$output" ]
		[[ "$stderr" != *"listening on"* ]]
	done
}

@test "--stdio and --signaling-relay are accepted" {
	start_serve --signaling-relay --stdio
	run inns curl -sS "$SERVE/healthz"
	[ "$output" = ok ]
	run bash -c "echo '{}' | '$AGENTBOX' preview-bridge cdp-automation --stdio"
	[ "$status" -eq 0 ]
}

@test "cdp-automation answers the unsupported document, naming the operation, exit 0" {
	local want='{"ok":false,"operation":"%s","error":{"code":"automation_unsupported","message":"this sandbox image is headless; browser automation is unavailable"}}'
	run bash -c "echo '{\"operation\":\"screenshot\",\"params\":{}}' | '$AGENTBOX' preview-bridge cdp-automation"
	[ "$status" -eq 0 ]
	# shellcheck disable=SC2059
	[ "$output" = "$(printf "$want" screenshot)" ]
	run bash -c "echo 'not json' | '$AGENTBOX' preview-bridge cdp-automation"
	[ "$status" -eq 0 ]
	# shellcheck disable=SC2059
	[ "$output" = "$(printf "$want" unknown)" ]
	run bash -c "'$AGENTBOX' preview-bridge cdp-automation </dev/null"
	[ "$status" -eq 0 ]
	jq -e '.operation == "unknown" and .ok == false' <<<"$output"
}

# ---- serve ------------------------------------------------------------------------

@test "serve: GET /healthz is 200 ok; anything else is 404 not found" {
	start_serve
	run inns curl -sS -w ' %{http_code} %{content_type}' "$SERVE/healthz"
	[ "$output" = "ok 200 text/plain; charset=utf-8" ]
	local req
	for req in "GET /" "GET /signal" "POST /healthz" "PUT /signal" "GET /healthz/x" "DELETE /healthz" "GET /signals"; do
		run inns curl -sS -X "${req% *}" -w ' %{http_code}' "$SERVE${req#* }"
		echo "[$req] -> $output"
		[ "$output" = "not found 404" ]
	done
	# A query does not change the route.
	run inns curl -sS "$SERVE/healthz?probe=1"
	[ "$output" = ok ]
}

@test "serve: default --listen is 0.0.0.0:8080" {
	inns_bg "$AGENTBOX" preview-bridge serve 2>"$T/default.err"
	wait_for "$T/default.err" '^agentbox preview-bridge listening on 0\.0\.0\.0:8080$'
	run inns curl -sS http://127.0.0.1:8080/healthz
	[ "$output" = ok ]
}

@test "serve: publish and poll, per-session sequences from 1, sender's own messages hidden" {
	start_serve
	run sig '{"sessionId":"s1","role":"host","type":"offer","payload":{"sdp":"v=0"}}'
	[ "$output" = $'{"sequence":1}\n200' ]
	run sig '{"sessionId":"s1","type":"candidate","payload":"c1"}'
	[ "$output" = $'{"sequence":2}\n200' ]
	run sig '{"sessionId":"s1","role":"host","type":"candidate","payload":"c2"}'
	[ "$output" = $'{"sequence":3}\n200' ]
	run sig '{"sessionId":"s2","role":"host","type":"offer"}'
	[ "$output" = $'{"sequence":1}\n200' ]
	# The viewer (default role) sees the host's messages, in order.
	run sig '{"sessionId":"s1","type":"poll"}'
	[ "${lines[1]}" = 200 ]
	[ "${lines[0]}" = '{"messages":[{"sessionId":"s1","role":"host","type":"offer","payload":{"sdp":"v=0"},"sequence":1},{"sessionId":"s1","role":"host","type":"candidate","payload":"c2","sequence":3}]}' ]
	run sig '{"sessionId":"s1","role":"viewer","type":"poll","sequence":1}'
	jq -e '[.messages[].sequence] == [3]' <<<"${lines[0]}"
	run sig '{"sessionId":"s1","role":"host","type":"poll","sequence":0}'
	jq -e '[.messages[] | [.sequence, .role, .payload]] == [[2, "viewer", "c1"]]' <<<"${lines[0]}"
	run sig '{"sessionId":"s1","type":"poll","sequence":3}'
	[ "${lines[0]}" = '{"messages":[]}' ]
	run sig '{"sessionId":"unknown","type":"poll"}'
	[ "${lines[0]}" = '{"messages":[]}' ]
}

@test "serve: only the last 256 messages of a session are kept" {
	start_serve
	local i
	for ((i = 1; i <= 300; i++)); do
		printf '{"sessionId":"w","role":"host","type":"candidate","payload":%d}\n' "$i"
	done >"$T/docs"
	# One connection, keep-alive: curl reads the bodies from files in order.
	split -l 1 -d -a 3 "$T/docs" "$T/doc."
	local args=()
	for f in "$T"/doc.*; do args+=(--data-binary "@$f" "$SERVE/signal" --next); done
	inns curl -sS --max-time 60 -H 'Content-Type: application/json' "${args[@]}" "$SERVE/healthz" >"$T/seqs"
	grep -o '"sequence":[0-9]*' "$T/seqs" | tail -1 | grep -qx '"sequence":300'
	run sig '{"sessionId":"w","type":"poll"}'
	jq -e '(.messages | length) == 256 and .messages[0].sequence == 45 and .messages[0].payload == 45 and
		.messages[-1].sequence == 300 and ([.messages[].sequence] == [range(45; 301)])' <<<"${lines[0]}"
	run sig '{"sessionId":"w","type":"poll","sequence":298}'
	jq -e '[.messages[].sequence] == [299, 300]' <<<"${lines[0]}"
}

@test "serve: bad JSON 400 {\"error\":\"bad json\"}; missing sessionId/type 400 invalid signal document" {
	start_serve
	local doc
	for doc in 'not json' '{"sessionId":' '' '{"sessionId":"a","type":"x"} trailing'; do
		run sig "$doc"
		echo "[$doc] -> $output"
		[ "$output" = $'{"error":"bad json"}\n400' ]
	done
	for doc in '{}' '{"type":"offer"}' '{"sessionId":"a"}' '{"sessionId":"","type":"offer"}' \
		'{"sessionId":1,"type":"offer"}' '{"sessionId":"a","type":null}' '[1]' '"s"' \
		'{"sessionId":"a","type":"poll","sequence":"1"}'; do
		run sig "$doc"
		echo "[$doc] -> $output"
		[ "$output" = $'{"error":"invalid signal document"}\n400' ]
	done
}

@test "serve: a body over 512 KiB is 413, by Content-Length or chunked; 512 KiB exactly is accepted" {
	start_serve
	# Exactly 524288 bytes of valid JSON.
	local prefix='{"sessionId":"big","type":"blob","payload":"' suffix='"}'
	local pad=$((524288 - ${#prefix} - ${#suffix}))
	{ printf '%s' "$prefix"; head -c "$pad" /dev/zero | tr '\0' a; printf '%s' "$suffix"; } >"$T/exact"
	[ "$(wc -c <"$T/exact")" -eq 524288 ]
	run inns curl -sS -H 'Content-Type: application/json' --data-binary "@$T/exact" -w '\n%{http_code}' "$SERVE/signal"
	[ "$output" = $'{"sequence":1}\n200' ]
	{ cat "$T/exact"; printf ' '; } >"$T/over"
	run inns curl -sS --data-binary "@$T/over" -w '\n%{http_code}' "$SERVE/signal"
	[ "$output" = $'{"error":"payload too large"}\n413' ]
	run inns curl -sS -H 'Transfer-Encoding: chunked' --data-binary "@$T/over" -w '\n%{http_code}' "$SERVE/signal"
	[ "$output" = $'{"error":"payload too large"}\n413' ]
	head -c $((8 << 20)) /dev/zero >"$T/huge"
	run inns curl -sS --data-binary "@$T/huge" -w '\n%{http_code}' "$SERVE/signal"
	[ "$output" = $'{"error":"payload too large"}\n413' ]
	# And the server is still there.
	run inns curl -sS "$SERVE/healthz"
	[ "$output" = ok ]
}

@test "serve: malformed heads get the strict parser's status and a closed connection" {
	start_serve
	run inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$SERVE_PORT; printf 'GET /healthz HTTP/1.1\nHost: x\n\n' >&3; timeout 5 cat <&3"
	[[ "${lines[0]}" == "HTTP/1.1 400 "* ]]
	run inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$SERVE_PORT; printf 'POST /signal HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}' >&3; timeout 5 cat <&3"
	[[ "${lines[0]}" == "HTTP/1.1 400 "* ]]
	# Two requests in one write (pipelining) get two answers in order.
	run inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$SERVE_PORT; printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3; timeout 5 cat <&3"
	[ "$(grep -o 'HTTP/1.1 200 OK' <<<"$output" | wc -l)" -eq 1 ]
	[ "$(grep -o 'HTTP/1.1 404 Not Found' <<<"$output" | wc -l)" -eq 1 ]
	[[ "$output" == *"200 OK"*"404 Not Found"* ]]
}

@test "serve: stops on SIGTERM with exit 0" {
	start_serve
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
}

# ---- the signal client ---------------------------------------------------------------

@test "signal: posts stdin to --endpoint, then \$T3_PREVIEW_BRIDGE_ENDPOINT, then 127.0.0.1:8080" {
	start_serve
	run signal '{"sessionId":"c","role":"host","type":"offer","payload":1}' --endpoint "$SERVE"
	[ "$status" -eq 0 ]
	[ "$output" = '{"sequence":1}' ]
	# A trailing slash and a path prefix of "" are the same endpoint.
	run signal '{"sessionId":"c","type":"poll"}' --endpoint "$SERVE/"
	jq -e '[.messages[].payload] == [1]' <<<"$output"
	T3_PREVIEW_BRIDGE_ENDPOINT="$SERVE" run signal '{"sessionId":"c","role":"host","type":"answer"}'
	[ "$output" = '{"sequence":2}' ]
	# --endpoint wins over the environment.
	T3_PREVIEW_BRIDGE_ENDPOINT="http://127.0.0.1:1" run signal '{"sessionId":"c","role":"host","type":"x"}' --endpoint "$SERVE"
	[ "$output" = '{"sequence":3}' ]
	# The relay's own errors pass through as they are.
	run signal 'not json' --endpoint "$SERVE"
	[ "$output" = '{"error":"bad json"}' ]
	run signal '{}' --endpoint "$SERVE"
	[ "$output" = '{"error":"invalid signal document"}' ]
	head -c 600000 /dev/zero | tr '\0' ' ' >"$T/big"
	run inns "$AGENTBOX" preview-bridge signal --endpoint "$SERVE" <"$T/big"
	[ "$output" = '{"error":"payload too large"}' ]
	# No flag, no variable: the default endpoint.
	inns_bg "$AGENTBOX" preview-bridge serve --listen 127.0.0.1:8080 2>"$T/8080.err"
	wait_for "$T/8080.err" 'listening on 127\.0\.0\.1:8080$'
	run env -u T3_PREVIEW_BRIDGE_ENDPOINT bash -c "printf '%s' '{\"sessionId\":\"d\",\"type\":\"t\"}' | nsenter -t $NS_PID -n -- '$AGENTBOX' preview-bridge signal"
	[ "$output" = '{"sequence":1}' ]
}

@test "signal: relay unavailable, timed out after 10 s, malformed JSON" {
	start_peer WEB http
	run signal '{"sessionId":"a","type":"poll"}' --endpoint http://127.0.0.1:1
	[ "$status" -eq 0 ]
	[ "$output" = '{"error":"signaling relay unavailable"}' ]
	run signal '{"sessionId":"a","type":"poll"}' --endpoint "http://127.0.0.1:$WEB_PORT/text"
	[ "$output" = '{"error":"signaling relay returned malformed JSON"}' ]
	# A relay answering 404 with text is malformed JSON too.
	run signal '{"sessionId":"a","type":"poll"}' --endpoint "http://127.0.0.1:$WEB_PORT/elsewhere"
	[ "$output" = '{"error":"signaling relay returned malformed JSON"}' ]
	local start end
	start=$(date +%s)
	run signal '{"sessionId":"a","type":"poll"}' --endpoint "http://127.0.0.1:$WEB_PORT/slow"
	end=$(date +%s)
	[ "$output" = '{"error":"signaling relay timed out"}' ]
	[ $((end - start)) -ge 9 ]
	[ $((end - start)) -le 15 ]
}
