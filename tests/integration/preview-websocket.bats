#!/usr/bin/env bats
# agentbox preview-bridge websocket-framed against a real WebSocket server
# (the `ws` npm package): the zero-length frame on open, frames both ways,
# header forwarding, oversize frames either way, upstream close and error,
# stdin EOF, the idle timeout, and openings that must fail.

load preview/common

setup_file() {
	pv_setup_file
}

setup() {
	pv_setup
	start_peer WS ws
}

teardown() {
	pv_teardown
}

# hs PATH [EXTRA-JSON-MEMBERS]: a handshake document for the ws peer.
hs() {
	printf '{"target":{"hostname":"127.0.0.1","port":%s},"path":"%s"%s}' "$WS_PORT" "$1" "${2:+,$2}"
}

# spec HANDSHAKE STEPS: a drive specification.
spec() {
	printf '{"handshake":%s,"steps":%s}' "$1" "$2"
}

@test "echo: 00 00 00 00 first, then each message as a frame; stdin EOF closes with 1000, exit 0" {
	drive "$(spec "$(hs /echo)" '[{"waitFrames":1},{"send":"hello"},{"send":"wörld"},{"sendBytes":70000},{"send":""},{"waitFrames":5},{"end":true}]')"
	jq -e '.exit == 0 and .killed == false and .trailing == 0' "$T/drive.json"
	jq -e '[.frames[].len] == [0, 5, 6, 70000, 0]' "$T/drive.json"
	jq -e '.frames[1].text == "hello" and .frames[2].text == "wörld"' "$T/drive.json"
	# stdin frames went up as binary messages; the close was a normal one.
	wait_for "$WS_LOG" '^EVENT /echo close 1000$'
	grep -q '^EVENT /echo message 5 binary$' "$WS_LOG"
	grep -q '^EVENT /echo message 70000 binary$' "$WS_LOG"
	grep -q '^EVENT /echo message 0 binary$' "$WS_LOG"
}

@test "the open frame comes before any message, even one the server sends at once" {
	drive "$(spec "$(hs /hello)" '[{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0 and [.frames[].len] == [0, 5] and .frames[1].text == "hello"' "$T/drive.json"
}

@test "frames that follow the handshake line in the same write are not lost" {
	local line
	line="$(hs /echo)"
	# One write: the line, then a whole frame (00 00 00 05 "early") behind it.
	drive "{\"rawHandshake\":$(jq -Rs '. + "\u0000\u0000\u0000\u0005early"' <<<"$line"),\"steps\":[{\"waitFrames\":2},{\"end\":true}]}"
	jq -e '.exit == 0 and [.frames[].len] == [0, 5] and .frames[1].text == "early"' "$T/drive.json"
}

@test "headers are forwarded except sec-websocket-*, upgrade and connection; Host is hostname:port" {
	drive "$(spec "$(hs /headers '"headers":{"x-custom":"1","origin":"http://preview.test","sec-websocket-protocol":"chat","sec-websocket-key":"AAAAAAAAAAAAAAAAAAAAAA==","upgrade":"h2c","connection":"close","x-bad":"a\r\nb: c"}')" '[{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0' "$T/drive.json"
	jq -r '.frames[1].text' "$T/drive.json" >"$T/h.json"
	jq -e --arg h "127.0.0.1:$WS_PORT" '.host == $h and .["x-custom"] == "1" and
		.origin == "http://preview.test" and .upgrade == "websocket" and
		(.connection | ascii_downcase) == "upgrade" and .["sec-websocket-version"] == "13" and
		(has("sec-websocket-protocol") | not) and (has("x-bad") | not) and
		.["sec-websocket-key"] != "AAAAAAAAAAAAAAAAAAAAAA=="' "$T/h.json"
}

@test "fragmented messages arrive as one frame; a ping is answered with its pong" {
	drive "$(spec "$(hs /fragments)" '[{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0 and [.frames[].len] == [0, 10] and .frames[1].text == "fragmented"' "$T/drive.json"
	drive "$(spec "$(hs /ping)" '[{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0 and .frames[1].text == "pong-received"' "$T/drive.json"
	grep -q '^EVENT /ping pong are-you-there$' "$WS_LOG"
}

@test "an upstream message of exactly maxFrameBytes passes" {
	drive "$(spec "$(hs '/send?bytes=1000' '"maxFrameBytes":1000')" '[{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0 and [.frames[].len] == [0, 1000]' "$T/drive.json"
}

@test "an upstream message over maxFrameBytes stops the relay: close 1009, exit 0, nothing relayed" {
	drive "$(spec "$(hs '/send?bytes=1001' '"maxFrameBytes":1000')" '[]')"
	jq -e '.exit == 0 and .killed == false and [.frames[].len] == [0]' "$T/drive.json"
	wait_for "$WS_LOG" '^EVENT /send close 1009$'
}

@test "the default maxFrameBytes is 1 MiB" {
	drive "$(spec "$(hs '/send?bytes=1048576')" '[{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0 and [.frames[].len] == [0, 1048576]' "$T/drive.json"
	drive "$(spec "$(hs '/send?bytes=1048577')" '[]')"
	jq -e '.exit == 0 and [.frames[].len] == [0]' "$T/drive.json"
	wait_for "$WS_LOG" '^EVENT /send close 1009$'
}

@test "a stdin frame over maxFrameBytes stops the relay: close 1009, exit 0, nothing sent" {
	drive "$(spec "$(hs /echo '"maxFrameBytes":1000')" '[{"waitFrames":1},{"send":"ok"},{"waitFrames":2},{"sendHeader":1001}]')"
	jq -e '.exit == 0 and .killed == false and [.frames[].len] == [0, 2]' "$T/drive.json"
	wait_for "$WS_LOG" '^EVENT /echo close 1009$'
	[ "$(grep -c '^EVENT /echo message' "$WS_LOG")" -eq 1 ]
	# Exactly maxFrameBytes is fine.
	drive "$(spec "$(hs /echo '"maxFrameBytes":1000')" '[{"sendBytes":1000},{"waitFrames":2},{"end":true}]')"
	jq -e '.exit == 0 and [.frames[].len] == [0, 1000]' "$T/drive.json"
}

@test "upstream close stops the relay with stdin still open: exit 0" {
	drive "$(spec "$(hs '/close?code=4000')" '[]')"
	jq -e '.exit == 0 and .killed == false and [.frames[].len] == [0] and .ms < 5000' "$T/drive.json"
	wait_for "$WS_LOG" '^EVENT /close close 4000$'
}

@test "upstream error (TCP dropped without a close frame) stops the relay: exit 0" {
	drive "$(spec "$(hs /drop)" '[]')"
	jq -e '.exit == 0 and .killed == false and [.frames[].len] == [0] and .ms < 5000' "$T/drive.json"
}

@test "idle timeout: no traffic for idleTimeoutMs stops the relay, close 1000, exit 0" {
	drive "$(spec "$(hs /echo '"idleTimeoutMs":500')" '[]')"
	jq -e '.exit == 0 and .killed == false and [.frames[].len] == [0]' "$T/drive.json"
	jq -e '.ms >= 500 and .ms < 4000' "$T/drive.json"
	wait_for "$WS_LOG" '^EVENT /echo close 1000$'
}

@test "traffic keeps the relay alive past idleTimeoutMs" {
	drive "$(spec "$(hs /echo '"idleTimeoutMs":1500')" '[{"send":"1"},{"wait":700},{"send":"2"},{"wait":700},{"send":"3"},{"wait":700},{"send":"4"},{"waitFrames":5},{"end":true}]')"
	jq -e '.exit == 0 and [.frames[].text] == ["", "1", "2", "3", "4"] and .ms >= 2100' "$T/drive.json"
}

@test "openings that fail: message on stderr, exit 1, not even the open frame" {
	local h
	for h in "$(hs /bad-accept)" "$(hs /refuse)" \
		'{"target":{"hostname":"127.0.0.1","port":1},"path":"/"}' \
		'{"target":{"hostname":"bad host","port":80}}' \
		'{"target":{"hostname":"127.0.0.1","port":'"$WS_PORT"'},"path":"no-slash"}' \
		'{"target":{"hostname":"127.0.0.1","port":'"$WS_PORT"'},"maxFrameBytes":0}' \
		'not json'; do
		drive "{\"rawHandshake\":$(jq -Rs . <<<"$h"),\"steps\":[]}"
		echo "[$h] -> $(cat "$T/drive.json")"
		jq -e '.exit == 1 and .frames == [] and .trailing == 0 and (.stderr | test("websocket-framed: .+"))' "$T/drive.json"
	done
	grep -q '^EVENT /bad-accept upgrade 13$' "$WS_LOG"
}

@test "a handshake line over 1 MiB is refused; stdin that ends first too" {
	head -c 1100000 /dev/zero | tr '\0' ' ' | inns timeout 20 "$AGENTBOX" preview-bridge websocket-framed \
		>"$T/out" 2>"$T/err" && false || [ $? -eq 1 ]
	[ ! -s "$T/out" ]
	grep -q '1 MiB' "$T/err"
	printf '{"target":{"hostname":"127.0.0.1","port":1}}' | inns timeout 20 "$AGENTBOX" preview-bridge websocket-framed \
		>"$T/out" 2>"$T/err" && false || [ $? -eq 1 ]
	[ ! -s "$T/out" ]
}
