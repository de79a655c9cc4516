#!/usr/bin/env bats
# The browser inside a sandbox (docs/browser.md): Debian's Chromium (the
# host's /usr/bin/chromium: the native backend binds the host's /usr)
# started by the daemon through the agent, driven over CDP through the
# agent's port relay.  The daemon, its sandbox and the test origins
# (browser/origin.py on 127.0.0.2:8080, allowed; a second one on
# 127.0.0.3:8081, denied by the sandbox's egress policy) run in a network
# namespace holding only lo, so nothing leaves the machine.  One daemon,
# one sandbox and one browser session for the whole file.

bats_require_minimum_version 1.5.0

ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
: "${BATS_TEST_TIMEOUT:=120}"
export BROWSER_NPM="${AGENTBOX_NPM_DIR:-$ROOT_DIR/build/npm}/browser"
HERE="$BATS_TEST_DIRNAME/browser"

inns() { nsenter -t "$NS_PID" -n -- "$@"; }

api() {
	local path="$1"
	shift
	curl -sS --max-time 90 --unix-socket "$SOCK" "$@" "http://agentbox$path"
}

# op OP JSON: the operation on the file's session; body in $F/body, status printed.
op() {
	api "/v1/sandboxes/$ID/browser/$S/$1" -d "$2" -o "$F/body" -w '%{http_code}'
}

bg() {
	nsenter -t "$NS_PID" -n -- "$@" &
	echo $! >>"$F/bg.pids"
}

wait_http() {
	local i
	for ((i = 0; i < 100; i++)); do
		inns curl -s -o /dev/null --max-time 1 "$1" && return 0
		sleep 0.1
	done
	echo "nothing answers $1" >&2
	return 1
}

setup_file() {
	local f i
	for f in chromium node curl jq python3 unshare nsenter; do
		command -v "$f" >/dev/null || { echo "$f is missing (scripts/install-deps)" >&2; return 1; }
	done
	export F="$BATS_FILE_TMPDIR"
	export SOCK="$F/d/run/agentbox.sock" STATE="$F/d/state"
	mkdir -p "$F/d"
	: >"$F/bg.pids"
	unshare --net sleep 900 </dev/null >/dev/null 2>&1 &
	export NS_PID=$!
	echo "$NS_PID" >>"$F/bg.pids"
	for ((i = 0; i < 50; i++)); do
		[ "$(readlink "/proc/$NS_PID/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.05
	done
	[ "$(readlink "/proc/$NS_PID/ns/net")" != "$(readlink /proc/self/ns/net)" ]
	inns ip link set lo up
	bg python3 "$HERE/origin.py" 127.0.0.2 8080 "$F/origin.log"
	bg python3 "$HERE/origin.py" 127.0.0.3 8081 "$F/denied.log"
	wait_http http://127.0.0.2:8080/red
	wait_http http://127.0.0.3:8081/red
	: >"$F/origin.log"
	: >"$F/denied.log"
	echo "daemon-token-0123456789abcdef" >"$F/token"
	chmod 600 "$F/token"
	export TPORT=18731
	nsenter -t "$NS_PID" -n -- env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy \
		-u ALL_PROXY -u all_proxy -u NO_PROXY -u no_proxy setsid "$AGENTBOX" serve \
		--socket "$SOCK" --state-dir "$STATE" --listen "127.0.0.1:$TPORT" --token-file "$F/token" \
		>>"$F/daemon.log" 2>&1 </dev/null &
	export DAEMON_PID=$!
	for ((i = 0; i < 100; i++)); do
		curl -s --max-time 2 --unix-socket "$SOCK" http://agentbox/v1/health >/dev/null 2>&1 && break
		sleep 0.1
	done
	# each Chromium is ~60 tasks: ten of them need more than the default 512 pids
	# the machine's own name is allowed by name: the URL policy resolves it
	# and refuses its answers (a host address); the build directory is
	# the sandbox's /opt/agentbox, for the preview bridge's cdp-automation
	export HOSTNAME_ALLOWED
	HOSTNAME_ALLOWED="$(hostname)"
	api /v1/sandboxes -d "{\"backend\": \"native\", \"network\": \"proxy\", \"limits\": {\"pids\": 4096},
		\"mounts\": [{\"type\": \"ro\", \"source\": \"$(dirname "$AGENTBOX")\", \"destination\": \"/opt/agentbox\"}],
		\"egress\": {\"allow_hosts\": [\"127.0.0.2\", \"$HOSTNAME_ALLOWED\"], \"allow_cidrs\": [\"127.0.0.2/32\"],
		 \"audit_log\": \"$F/audit.log\"}}" >"$F/created"
	export ID PORT_TOKEN S
	ID="$(jq -er .id "$F/created")"
	PORT_TOKEN="$(jq -er .port_token "$F/created")"
	api "/v1/sandboxes/$ID/browser" -d '{"viewport": {"width": 640, "height": 480}}' >"$F/launched"
	S="$(jq -er .session "$F/launched")"
}

teardown_file() {
	local p
	if [ -n "${DAEMON_PID:-}" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		[ -n "${ID:-}" ] && api "/v1/sandboxes/$ID?force=1" -X DELETE >/dev/null 2>&1
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	for p in $(cat "$F/bg.pids" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

@test "launch: a headless Chromium in the sandbox as the sandbox user, DevTools on its loopback only" {
	[ -n "$S" ]
	pid="$(jq -r .pid "$F/launched")"
	run api "/v1/sandboxes/$ID/exec" -d "{\"cmd\": \"cat /proc/$pid/cmdline | tr '\\\\0' ' '; echo; id -u\", \"wait\": true}"
	echo "$output"
	cmd="$(jq -r .stdout <<<"$output")"
	[[ "$cmd" == *"--headless"* ]]
	[[ "$cmd" == *"--remote-debugging-address=127.0.0.1"* ]]
	[[ "$cmd" == *"--proxy-server=http://127.0.0.1:3128"* ]]
	[[ "$cmd" == *"--proxy-bypass-list=<-loopback>"* ]]
	[[ "$cmd" == *"--disable-background-networking"* ]]
	[[ "$cmd" == *"--user-data-dir=/tmp/agentbox-browser-$S"* ]]
	# no DevTools port on the host: the daemon's namespace has only our listeners
	! inns ss -ltn | grep -v -e ":$TPORT " -e ':8080 ' -e ':8081 ' | grep -q LISTEN
}

@test "navigate, type and click: the form's POST arrives at the origin" {
	[ "$(op navigate '{"url": "http://127.0.0.2:8080/"}')" = 200 ]
	[ "$(jq -r .title "$F/body")" = "form page" ]
	[ "$(jq -r .url "$F/body")" = "http://127.0.0.2:8080/" ]
	[ "$(op type '{"selector": "#q", "text": "hello browser"}')" = 200 ]
	[ "$(op click '{"selector": "#go"}')" = 200 ]
	[ "$(op wait_for_selector '{"selector": "#done", "timeout": 10000}')" = 200 ]
	grep -q '^POST /submit q=hello+browser$' "$F/origin.log"
	[ "$(op page_info '{}')" = 200 ]
	[ "$(jq -r .title "$F/body")" = thanks ]
	[ "$(op click '{"selector": "#nothing"}')" = 400 ]
	jq -r .error.message "$F/body" | grep -q "no element matches"
}

@test "evaluate returns JSON; extract returns text and html" {
	[ "$(op navigate '{"url": "http://127.0.0.2:8080/"}')" = 200 ]
	[ "$(op evaluate '{"expression": "({n: 1 + 2, s: document.title, a: [true, null]})"}')" = 200 ]
	[ "$(jq -c .value "$F/body")" = '{"n":3,"s":"form page","a":[true,null]}' ]
	[ "$(op evaluate '{"expression": "Promise.resolve(41).then(x => x + 1)"}')" = 200 ]
	[ "$(jq -c .value "$F/body")" = 42 ]
	[ "$(op evaluate '{"expression": "throw new Error(\"boom\")"}')" = 400 ]
	jq -r .error.message "$F/body" | grep -q boom
	[ "$(op extract '{"selector": "#msg"}')" = 200 ]
	[ "$(jq -r .text "$F/body")" = "hello origin" ]
	[ "$(jq -r .html "$F/body")" = '<p id="msg">hello <b>origin</b></p>' ]
	[ "$(op wait_for_selector '{"selector": "#never", "timeout": 300}')" = 429 ]
}

@test "screenshot: a PNG of the viewport, the known pixel red; streamed in chunks" {
	[ "$(op navigate '{"url": "http://127.0.0.2:8080/red"}')" = 200 ]
	api "/v1/sandboxes/$ID/browser/$S/screenshot" -d '{}' -D "$F/head" -o "$F/shot.png"
	grep -qi '^content-type: image/png' "$F/head"
	grep -qi '^transfer-encoding: chunked' "$F/head"
	run python3 "$HERE/png.py" "$F/shot.png" 10 10
	echo "$output"
	[ "$output" = "640 480 255 0 0" ]
	run "$AGENTBOX" browser --host "$SOCK" "$ID" screenshot "$S" '{"format": "jpeg", "quality": 50}' -o "$F/shot.jpg"
	[ "$status" -eq 0 ]
	[ "$(head -c 3 "$F/shot.jpg" | od -An -tx1 | tr -d ' ')" = ffd8ff ]
}

@test "screenshot over 10 MB is refused (413) and the session keeps working" {
	[ "$(op navigate '{"url": "http://127.0.0.2:8080/huge", "timeout": 60000}')" = 200 ]
	[ "$(op screenshot '{"full_page": true}')" = 413 ]
	jq -r .error.message "$F/body" | grep -q "10 MB"
	[ "$(op page_info '{}')" = 200 ]
	[ "$(jq -r .title "$F/body")" = huge ]
}

# cdp-automation DOC: the preview bridge inside the sandbox, its answer in $F/cdp
cdp() {
	jq -n --arg d "$1" '{cmd: ["sh", "-c", "printf %s \"$1\" | /opt/agentbox/agentbox preview-bridge cdp-automation", "sh", $d], wait: true}' >"$F/cdp-req"
	api "/v1/sandboxes/$ID/exec" -d @"$F/cdp-req" >"$F/cdp-exec"
	jq -r .stdout "$F/cdp-exec" >"$F/cdp"
	cat "$F/cdp"
}

@test "t3-preview-bridge cdp-automation inside the sandbox drives the session's browser" {
	cdp "{\"operation\": \"navigate\", \"input\": {\"url\": \"http://127.0.0.2:8080/\", \"session\": \"$S\"}, \"timeoutMs\": 20000}"
	[ "$(jq -r .ok "$F/cdp")" = true ]
	[ "$(jq -r .result.title "$F/cdp")" = "form page" ]
	# no session named: the newest (the file's only one so far)
	cdp '{"operation": "type", "input": {"selector": "#q", "text": "from the bridge"}}'
	[ "$(jq -r .ok "$F/cdp")" = true ]
	cdp '{"operation": "click", "input": {"selector": "#go"}}'
	cdp '{"operation": "waitForSelector", "input": {"selector": "#done"}, "timeoutMs": 10000}'
	[ "$(jq -r .result.found "$F/cdp")" = true ]
	grep -q '^POST /submit q=from+the+bridge$' "$F/origin.log"
	cdp '{"operation": "navigate", "input": {"url": "http://127.0.0.2:8080/red"}}'
	cdp '{"operation": "screenshot", "input": {"fullPage": false}}'
	[ "$(jq -r .result.mimeType "$F/cdp")" = image/png ]
	jq -r .result.data "$F/cdp" | base64 -d >"$F/bridge.png"
	[ "$(python3 "$HERE/png.py" "$F/bridge.png" 10 10 | cut -d' ' -f3-)" = "255 0 0" ]
	cdp '{"operation": "evaluate", "input": {"expression": "6 * 7"}}'
	[ "$(jq -c .result.value "$F/cdp")" = 42 ]
	# the URL policy: a metadata address and a redirect to one
	cdp '{"operation": "navigate", "input": {"url": "http://169.254.169.254/"}}'
	[ "$(jq -r .error.code "$F/cdp")" = blocked_url ]
	cdp '{"operation": "navigate", "input": {"url": "http://127.0.0.2:8080/redirect?to=http://169.254.169.254/x"}}'
	[ "$(jq -r .error.code "$F/cdp")" = blocked_url ]
	jq -r .error.message "$F/cdp" | grep -q '^blocked redirect URL: http://169.254.169.254/x'
	# timeoutMs is clamped to 1,000..60,000: 5 ms waits a second
	start=$(date +%s%N)
	cdp '{"operation": "wait_for_selector", "input": {"selector": "#never"}, "timeoutMs": 5}'
	[ "$(jq -r .error.code "$F/cdp")" = timeout ]
	[ $(( ($(date +%s%N) - start) / 1000000 )) -ge 1000 ]
	cdp '{"operation": "fly"}'
	[ "$(jq -r .error.code "$F/cdp")" = unknown_operation ]
	cdp '{"operation": "click", "input": {"session": "0000000000000000", "selector": "a"}}'
	[ "$(jq -r .error.code "$F/cdp")" = automation_unsupported ]
}

@test "URL policy: a name is resolved and every answer checked" {
	getent hosts "$HOSTNAME_ALLOWED" >/dev/null || skip "$HOSTNAME_ALLOWED does not resolve on this machine"
	[ "$(op navigate "{\"url\": \"http://$HOSTNAME_ALLOWED:8080/\"}")" = 403 ]
	jq -r .error.message "$F/body" | grep -q "^$HOSTNAME_ALLOWED resolves to "
}

@test "URL policy: every other scheme and every odd spelling of an address is refused" {
	local u
	for u in "file:///etc/passwd" "chrome://settings" "chrome-extension://abc/x" "data:text/html,x" \
		"javascript:alert(1)" "vbscript:x" "ftp://127.0.0.2/" "view-source:http://127.0.0.2:8080/" \
		"blob:http://127.0.0.2:8080/x" "ws://127.0.0.2:8080/"; do
		[ "$(op navigate "{\"url\": \"$u\"}")" = 403 ] || { echo "$u: $(cat "$F/body")"; false; }
		jq -r .error.message "$F/body" | grep -q "blocked URL scheme" || { echo "$u"; false; }
	done
	for u in "http://2130706433/" "http://0x7f.1/" "http://0177.0.0.1/" "http://127.1/" \
		"http://127.000.000.001/" "http://0x7f000001/" "http://%31%32%37.0.0.1/" "http://[::1]/" \
		"http://[::ffff:127.0.0.1]/" "http://[::ffff:a9fe:a9fe]/" "http://169.254.169.254/" \
		"http://10.0.0.1/" "http://100.100.100.200/" "http://[fd00:ec2::254]/" "http://localhost/" \
		"http://metadata.google.internal/" "http://127.0.0.3:8081/" "http://user@127.0.0.2:8080/" \
		"http://[::1%25lo]/"; do
		code="$(op navigate "{\"url\": \"$u\"}")"
		[ "$code" = 403 ] || [ "$code" = 400 ] || { echo "$u: $code $(cat "$F/body")"; false; }
	done
	# none of them reached the denied origin
	[ ! -s "$F/denied.log" ]
}

@test "a redirect to 169.254.169.254 or 127.0.0.1 leaves the tab at about:blank" {
	local to
	for to in "http://169.254.169.254/latest/meta-data/" "http://127.0.0.1:8080/"; do
		[ "$(op navigate "{\"url\": \"http://127.0.0.2:8080/redirect?to=$to\"}")" = 403 ]
		jq -r .error.message "$F/body" | grep -q "^blocked redirect URL: $to"
		[ "$(op page_info '{}')" = 200 ]
		[ "$(jq -r .url "$F/body")" = about:blank ]
	done
}

@test "a subresource at a denied address never reaches it; the audit log shows the denial" {
	[ "$(op navigate '{"url": "http://127.0.0.2:8080/sub?src=http://127.0.0.3:8081/pixel.png"}')" = 200 ]
	[ "$(jq -r .title "$F/body")" = sub ]
	sleep 0.5
	[ ! -s "$F/denied.log" ]
	grep -q '"host":"127.0.0.3".*"decision":"deny"' "$F/audit.log"
	grep -q '"host":"127.0.0.2".*"decision":"allow"' "$F/audit.log"
}

@test "playwright-core connectOverCDP and puppeteer-core connect drive it end to end" {
	[ -d "$BROWSER_NPM/node_modules/playwright-core" ] || skip "scripts/install-deps npm (tests/npm/browser)"
	# playwright straight at the daemon's TCP listener with the sandbox's port token
	ws="ws://127.0.0.1:$TPORT/v1/sandboxes/$ID/browser/$S/cdp?token=$PORT_TOKEN"
	run inns timeout 60 node "$HERE/cdp-clients.js" playwright "$ws" http://127.0.0.2:8080/
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "title=form page done=got it" ]
	grep -q '^POST /submit q=from-playwright$' "$F/origin.log"
	# puppeteer through `agentbox browser ID --cdp-listen`
	# nsenter itself (not a function's subshell): it execs agentbox, so $! is its pid
	nsenter -t "$NS_PID" -n -- "$AGENTBOX" browser --host "$SOCK" "$ID" --session "$S" --cdp-listen 127.0.0.1:0 \
		>"$F/listen.out" 2>"$F/listen.err" &
	lpid=$!
	for ((i = 0; i < 50; i++)); do
		grep -q '^listening on' "$F/listen.out" && break
		sleep 0.1
	done
	port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$F/listen.out")"
	run inns timeout 60 node "$HERE/cdp-clients.js" puppeteer "ws://127.0.0.1:$port/" http://127.0.0.2:8080/
	kill -TERM "$lpid"
	wait "$lpid" || true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "title=form page done=got it" ]
	grep -q '^POST /submit q=from-puppeteer$' "$F/origin.log"
}

@test "the CDP door: wrong or missing token, another sandbox's, a foreign Origin are refused" {
	base="http://127.0.0.1:$TPORT/v1/sandboxes/$ID/browser/$S/cdp"
	up=(-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13'
		-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==')
	[ "$(inns curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${up[@]}" "$base")" = 401 ]
	[ "$(inns curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${up[@]}" "$base?token=$(tr 0-9a-f 1-9a-f0 <<<"$PORT_TOKEN")")" = 401 ]
	[ "$(inns curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${up[@]}" \
		-H "Authorization: Bearer $PORT_TOKEN" -H 'Origin: http://evil.example' "$base")" = 403 ]
	# the port token opens only the CDP door, not the rest of the API
	[ "$(inns curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $PORT_TOKEN" \
		"http://127.0.0.1:$TPORT/v1/sandboxes/$ID/browser")" = 401 ]
	# no upgrade, with the daemon's own token: 400
	[ "$(inns curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		-H 'Authorization: Bearer daemon-token-0123456789abcdef' "$base")" = 400 ]
}

@test "tab limit: the eleventh session is refused; close frees a slot" {
	local i s
	: >"$F/more"
	for ((i = 0; i < 9; i++)); do
		api "/v1/sandboxes/$ID/browser" -d '{}' >"$F/body"
		s="$(jq -er .session "$F/body")" || { cat "$F/body"; false; }
		echo "$s" >>"$F/more"
	done
	[ "$(api "/v1/sandboxes/$ID/browser" | jq '.sessions | length')" = 10 ]
	code="$(api "/v1/sandboxes/$ID/browser" -d '{}' -o "$F/body" -w '%{http_code}')"
	[ "$code" = 429 ]
	[ "$(jq -r .error.message "$F/body")" = "tab limit reached: 10" ]
	for s in $(cat "$F/more"); do
		[ "$(api "/v1/sandboxes/$ID/browser/$s" -X DELETE -o /dev/null -w '%{http_code}')" = 204 ]
	done
	[ "$(api "/v1/sandboxes/$ID/browser" | jq '.sessions | length')" = 1 ]
	# their Chromiums are gone, and their profiles
	sleep 0.5
	run api "/v1/sandboxes/$ID/exec" -d '{"cmd": "ls -d /tmp/* | grep -c -v /tmp/agentbox-browser-'"$S"'; ps -e -o args | grep -v -e agentbox-browser-'"$S"' -e grep | grep -c chromium", "wait": true}'
	echo "$output"
	[ "$(jq -r .stdout <<<"$output")" = "$(printf '0\n0')" ]
}

@test "a browser crash is reported and the session is gone" {
	s="$(api "/v1/sandboxes/$ID/browser" -d '{}' | jq -er .session)"
	pid="$(api "/v1/sandboxes/$ID/browser" | jq -r ".sessions[] | select(.session == \"$s\") | .pid")"
	# the agent's signal (a command in the sandbox may not signal another's group)
	[ "$(api "/v1/sandboxes/$ID/processes/$pid/signal" -d '{"signal": "KILL"}' -o /dev/null -w '%{http_code}')" = 204 ]
	sleep 0.3
	code="$(api "/v1/sandboxes/$ID/browser/$s/page_info" -d '{}' -o "$F/body" -w '%{http_code}')"
	cat "$F/body"
	[ "$code" = 410 ]
	jq -r .error.message "$F/body" | grep -q "the browser crashed (killed by signal 9)"
	[ "$(api "/v1/sandboxes/$ID/browser/$s/page_info" -d '{}' -o /dev/null -w '%{http_code}')" = 404 ]
}

@test "the sandbox's memory limit holds for the browser: a page past it is killed, the sandbox lives" {
	id3="$(api /v1/sandboxes -d '{"backend": "native", "limits": {"memory": "768M", "pids": 1024}}' | jq -er .id)"
	s3="$(api "/v1/sandboxes/$id3/browser" -d '{}' | jq -er .session)"
	hpid="$(pgrep -f "agentbox-browser-$s3" | head -1)"
	mcg="$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' "/proc/$hpid/cgroup")"
	[ -n "$mcg" ] && [ "$mcg" != / ]
	mdir="/sys/fs/cgroup/memory$mcg"
	# 2 GiB touched in the page
	code="$(api "/v1/sandboxes/$id3/browser/$s3/evaluate" -o "$F/body" -w '%{http_code}' \
		-d '{"expression": "(() => { const a = []; for (let i = 0; i < 32; i++) { const b = new Uint8Array(64 << 20); b.fill(1); a.push(b); } return a.length; })()"}')"
	cat "$F/body"
	[ "$code" != 200 ]
	jq -r .error.message "$F/body" | grep -q "the page crashed"
	limit="$(cat "$mdir/memory.limit_in_bytes")"
	[ "$limit" -le $((768 * 1024 * 1024)) ]
	[ "$(cat "$mdir/memory.max_usage_in_bytes")" -le "$limit" ]
	# the kernel's OOM killer of this group ended the renderer
	[ "$(sed -n 's/^oom_kill //p' "$mdir/memory.oom_control")" -ge 1 ]
	[ "$(api "/v1/sandboxes/$id3/exec" -d '{"cmd": "echo alive", "wait": true}' | jq -r .stdout)" = alive ]
	[ "$(api "/v1/sandboxes/$id3?force=1" -X DELETE -o /dev/null -w '%{http_code}')" = 204 ]
}

@test "nothing of the browser outlives the sandbox" {
	# a sandbox of its own, so the file's session stays for the tests above
	id2="$(api /v1/sandboxes -d '{"backend": "native"}' | jq -er .id)"
	s2="$(api "/v1/sandboxes/$id2/browser" -d '{}' | jq -er .session)"
	pgrep -f "agentbox-browser-$s2" >/dev/null
	[ "$(api "/v1/sandboxes/$id2?force=1" -X DELETE -o /dev/null -w '%{http_code}')" = 204 ]
	for ((i = 0; i < 50; i++)); do
		pgrep -f "agentbox-browser-$s2" >/dev/null || break
		sleep 0.1
	done
	! pgrep -f "agentbox-browser-$s2"
}
