#!/usr/bin/env bats
# agentbox preview-bridge request: one JSON document in, one HTTP/1.1
# request to a real Node http server, one JSON document out; every error
# document with its exact status and text.

load preview/common

setup_file() {
	pv_setup_file
}

setup() {
	pv_setup
	start_peer WEB http
}

teardown() {
	pv_teardown
}

target() {
	printf '{"hostname":"127.0.0.1","port":%s}' "${1:-$WEB_PORT}"
}

@test "GET with defaults: status, body, Host = hostname:port, exit 0" {
	run request "{\"target\":$(target),\"path\":\"/echo\"}"
	[ "$status" -eq 0 ]
	jq -e '.status == 200' "$T/answer.json"
	body | jq -e --arg h "127.0.0.1:$WEB_PORT" '.method == "GET" and .url == "/echo" and
		(.headers | index("Host")) as $i | .headers[$i + 1] == $h'
	# The default path is "/" (404 from this server: what matters is what was asked).
	request "{\"target\":$(target)}"
	jq -e '.status == 404' "$T/answer.json"
	[ "$(body)" = "no such route" ]
}

@test "a name target: Host carries the name as given" {
	request '{"target":{"hostname":"localhost","port":'"$WEB_PORT"'},"path":"/echo"}'
	jq -e '.status == 200' "$T/answer.json"
	body | jq -e --arg h "localhost:$WEB_PORT" '(.headers | index("Host")) as $i | .headers[$i + 1] == $h'
}

@test "response headers: lower-case, repeats joined with ', ', over-long names and values dropped" {
	request "{\"target\":$(target),\"path\":\"/hello\"}"
	jq -e '.status == 200' "$T/answer.json"
	[ "$(body)" = "hello world" ]
	jq -e '.headers["set-cookie"] == "a=1, b=2"' "$T/answer.json"
	jq -e '.headers["content-type"] == "text/plain"' "$T/answer.json"
	jq -e '.headers | has("x-long") | not' "$T/answer.json"
	jq -e '.headers["x-edge"] | length == 8192' "$T/answer.json"
	jq -e '[.headers | keys[] | select(length > 128)] == []' "$T/answer.json"
	# Hop-by-hop fields describe our connection, not the resource.
	jq -e '.headers | has("connection") | not' "$T/answer.json"
}

@test "POST: method, headers and bodyBase64 reach the server; framing and bad headers do not" {
	local long_name long_value
	long_name="$(printf 'n%.0s' {1..129})"
	long_value="$(printf 'v%.0s' {1..8193})"
	request "{\"target\":$(target),\"method\":\"POST\",\"path\":\"/echo?q=1\",
		\"headers\":{\"x-custom\":\"yes\",\"x-list\":[\"a\",\"b\"],\"host\":\"evil.example\",
		\"content-length\":\"999\",\"connection\":\"keep-alive\",\"$long_name\":\"x\",\"x-long\":\"$long_value\",
		\"x-inject\":\"a\\r\\nX-Evil: 1\"},
		\"bodyBase64\":\"$(printf 'hello\0world' | base64 -w0)\"}"
	jq -e '.status == 200' "$T/answer.json"
	body >"$T/echo.json"
	jq -e '.method == "POST" and .url == "/echo?q=1"' "$T/echo.json"
	[ "$(jq -r .body "$T/echo.json" | base64 -d | od -An -c | tr -s ' ')" = "$(printf 'hello\0world' | od -An -c | tr -s ' ')" ]
	# Header names in pairs: name, value, name, value...
	jq -e '[.headers as $h | range(0; $h | length; 2) | {($h[.] | ascii_downcase): $h[. + 1]}] | add |
		.["x-custom"] == "yes" and .["x-list"] == "a, b" and .["content-length"] == "11" and
		(.host | test("^127\\.0\\.0\\.1:")) and (has("x-long") | not) and (has("x-inject") | not) and
		(has("x-evil") | not) and .connection == "close"' "$T/echo.json"
	jq -e '[.headers[] | select(length > 128)] == []' "$T/echo.json"
}

@test "bodies: chunked decoded, until-close read to the end, interim 1xx skipped" {
	request "{\"target\":$(target),\"path\":\"/stream?n=1000\"}"
	jq -e '.status == 200' "$T/answer.json"
	[ "$(body | wc -c)" -eq 1000 ]
	[ "$(body | tr -d y | wc -c)" -eq 0 ]
	jq -e '.headers | has("transfer-encoding") | not' "$T/answer.json"
	request "{\"target\":$(target),\"path\":\"/until-close\"}"
	[ "$(body)" = "read until the end" ]
	jq -e '.headers["x-mode"] == "close"' "$T/answer.json"
	request "{\"target\":$(target),\"path\":\"/interim\"}"
	jq -e '.status == 200' "$T/answer.json"
	[ "$(body)" = "final" ]
	request "{\"target\":$(target),\"path\":\"/status?n=204\"}"
	jq -e '.status == 204 and .bodyBase64 == ""' "$T/answer.json"
	request "{\"target\":$(target),\"method\":\"HEAD\",\"path\":\"/bytes?n=50\"}"
	jq -e '.status == 200 and .bodyBase64 == "" and .headers["content-length"] == "50"' "$T/answer.json"
}

@test "maxResponseBytes: at the limit passes, one byte over is 502 upstream response exceeded limit" {
	request "{\"target\":$(target),\"path\":\"/bytes?n=100\",\"maxResponseBytes\":100}"
	jq -e '.status == 200' "$T/answer.json"
	[ "$(body | wc -c)" -eq 100 ]
	request "{\"target\":$(target),\"path\":\"/bytes?n=100\",\"maxResponseBytes\":99}"
	assert_error 502 "upstream response exceeded limit"
	request "{\"target\":$(target),\"path\":\"/stream?n=100\",\"maxResponseBytes\":99}"
	assert_error 502 "upstream response exceeded limit"
	request "{\"target\":$(target),\"path\":\"/until-close\",\"maxResponseBytes\":5}"
	assert_error 502 "upstream response exceeded limit"
}

@test "the default maxResponseBytes is 8 MiB" {
	request "{\"target\":$(target),\"path\":\"/bytes?n=8388608\"}"
	jq -e '.status == 200' "$T/answer.json"
	[ "$(body | wc -c)" -eq 8388608 ]
	request "{\"target\":$(target),\"path\":\"/bytes?n=8388609\"}"
	assert_error 502 "upstream response exceeded limit"
}

@test "malformed request documents: 400 malformed request document" {
	local doc
	for doc in 'not json' '' '[]' '"x"' \
		"{\"target\":$(target),\"method\":5}" \
		"{\"target\":$(target),\"method\":\"GE T\"}" \
		"{\"target\":$(target),\"path\":\"no-slash\"}" \
		"{\"target\":$(target),\"path\":\"/a b\"}" \
		"{\"target\":$(target),\"path\":\"/a\\r\\nX: y\"}" \
		"{\"target\":$(target),\"headers\":[]}" \
		"{\"target\":$(target),\"bodyBase64\":\"not base64!\"}" \
		"{\"target\":$(target),\"bodyBase64\":\"Zg\"}" \
		"{\"target\":$(target),\"maxResponseBytes\":-1}" \
		"{\"target\":$(target),\"maxResponseBytes\":\"8\"}" \
		"{\"target\":$(target),\"timeoutMs\":0}" \
		"{\"target\":$(target),\"timeoutMs\":1.5}"; do
		run request "$doc"
		echo "[$doc] -> $output"
		[ "$status" -eq 0 ]
		assert_error 400 "malformed request document"
	done
}

@test "invalid targets: 400 invalid preview target" {
	local t
	for t in 'null' '"127.0.0.1:80"' '{"hostname":"127.0.0.1"}' '{"port":80}' \
		'{"hostname":"127.0.0.1","port":0}' '{"hostname":"127.0.0.1","port":65536}' \
		'{"hostname":"127.0.0.1","port":"80"}' '{"hostname":"","port":80}' \
		'{"hostname":"-x","port":80}' '{"hostname":"a b","port":80}' '{"hostname":"a/b","port":80}' \
		'{"hostname":"[::1]","port":80}' '{"hostname":"2130706433","port":80}' \
		"{\"hostname\":\"$(printf 'a%.0s' {1..129})\",\"port\":80}"; do
		run request "{\"target\":$t,\"path\":\"/\"}"
		echo "[$t] -> $output"
		[ "$status" -eq 0 ]
		assert_error 400 "invalid preview target"
	done
	request '{"path":"/"}'
	assert_error 400 "invalid preview target"
}

@test "nothing listening: 502 upstream connection failed" {
	# A fresh namespace: nothing listens on 127.0.0.1:1; nor does "nx.invalid" resolve.
	request "{\"target\":$(target 1)}"
	assert_error 502 "upstream connection failed"
	request '{"target":{"hostname":"nx.invalid","port":80}}'
	assert_error 502 "upstream connection failed"
}

@test "a server that never answers: 504 upstream timed out, within timeoutMs" {
	local start end
	start=$(date +%s%N)
	request "{\"target\":$(target),\"path\":\"/slow\",\"timeoutMs\":400}"
	end=$(date +%s%N)
	assert_error 504 "upstream timed out"
	[ $(((end - start) / 1000000)) -ge 400 ]
	# The 400 ms timeout, not the 30 s default: 10 s leaves a loaded host room.
	[ $(((end - start) / 1000000)) -lt 10000 ]
}

@test "broken responses: 502 upstream response failed" {
	local path
	for path in /truncated /malformed; do
		request "{\"target\":$(target),\"path\":\"$path\"}"
		assert_error 502 "upstream response failed"
	done
}

@test "invoked as t3-preview-bridge it makes the same request" {
	ln -s "$AGENTBOX" "$T/t3-preview-bridge"
	printf '%s' "{\"target\":$(target),\"path\":\"/hello\"}" | inns "$T/t3-preview-bridge" request >"$T/answer.json"
	[ "$(body)" = "hello world" ]
}
