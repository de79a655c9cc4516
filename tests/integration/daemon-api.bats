#!/usr/bin/env bats
# The daemon's REST API end to end over its real unix socket (curl
# --unix-socket): lifecycle, exec streams, stdin, signals, timeouts,
# files, errors and limits.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
}

teardown() {
	daemon_teardown
}

@test "health, metrics, and the socket is 0600 in a 0700 directory" {
	run api /v1/health
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .status)" = ok ]
	[ "$(stat -c %a "$SOCK")" = 600 ]
	[ "$(stat -c %a "$(dirname "$SOCK")")" = 700 ]
	[ "$(stat -c %a "$STATE")" = 700 ]
	run api /v1/metrics
	echo "$output" | grep -q '^# TYPE agentbox_sandboxes gauge$'
	echo "$output" | grep -q '^agentbox_sandboxes{state="running"} 0$'
	echo "$output" | grep -q '^agentbox_exec_start_seconds_bucket{le="+Inf"} '
	echo "$output" | grep -q '^agentbox_http_responses_total{code="200"} '
}

@test "create, list with a label filter, get, delete: nothing left behind" {
	id1="$(create '{"labels": {"team": "a"}}')"
	id2="$(create '{"labels": {"team": "b"}, "ttl": "1h"}')"
	run api "/v1/sandboxes?label=team=a"
	[ "$(echo "$output" | jq -r '.sandboxes | length')" = 1 ]
	[ "$(echo "$output" | jq -r '.sandboxes[0].id')" = "$id1" ]
	run api "/v1/sandboxes/$id2"
	[ "$(echo "$output" | jq -r .state)" = running ]
	[ "$(echo "$output" | jq -r .expires_at)" != null ]
	mon="$(echo "$output" | jq -r .monitor_pid)"
	[ "$(cat /proc/$mon/comm)" = agentbox-mon ]
	[ "$(stat -c %a "$STATE/sandboxes/$id2/agent.sock")" = 600 ]
	[ "$(api_status "/v1/sandboxes/$id1" -X DELETE)" = 204 ]
	[ "$(api_status "/v1/sandboxes/$id2" -X DELETE)" = 204 ]
	[ "$(api_status "/v1/sandboxes/$id2")" = 404 ]
	[ ! -e "$STATE/sandboxes/$id1" ]
	[ ! -e "$STATE/sandboxes/$id2" ]
	monitor_gone "$mon"
	assert_nothing_left "$SNAPSHOT"
}

@test "exec streams start, stdout and stderr in order, then exit" {
	id="$(create)"
	api "/v1/sandboxes/$id/exec" -N -d '{"cmd": "for i in $(seq 1 300); do echo out$i; echo err$i >&2; done; exit 3"}' >"$D/ev"
	[ "$(head -1 "$D/ev" | jq -r .type)" = start ]
	[ "$(tail -1 "$D/ev" | jq -c '[.type, .exit_code]')" = '["exit",3]' ]
	# Per stream, the bytes arrive in the order they were written.
	diff <(jq -j 'select(.type == "stdout") | .data' "$D/ev") <(seq 1 300 | sed 's/^/out/')
	diff <(jq -j 'select(.type == "stderr") | .data' "$D/ev") <(seq 1 300 | sed 's/^/err/')
	[ "$(grep -c '"type":"exit"' "$D/ev")" = 1 ]
}

@test "exec with wait answers once; output is capped with a truncated flag" {
	daemon_teardown
	daemon_start --output-cap 1k
	id="$(create)"
	run exec_wait "$id" '"head -c 5000 /dev/zero | tr \"\\\\0\" x; echo fin >&2"'
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '.stdout | length')" = 1024 ]
	[ "$(echo "$output" | jq -r .stdout_truncated)" = true ]
	[ "$(echo "$output" | jq -r .stderr)" = fin ]
	[ "$(echo "$output" | jq -r .stderr_truncated)" = false ]
	[ "$(echo "$output" | jq -r .exit_code)" = 0 ]
	run exec_wait "$id" '["/nonexistent/cmd"]'
	[ "$(echo "$output" | jq -r .exit_code)" = 127 ]
}

@test "keep-alive execs: one agent connection kept per HTTP connection, never across sandboxes" {
	a="$(create '{"hostname": "boxa"}')"
	b="$(create '{"hostname": "boxb"}')"
	hn="cat /proc/sys/kernel/hostname"
	run python3 "$BATS_TEST_DIRNAME/exec-keepalive.py" "$SOCK" "$DAEMON_PID" \
		"exec:$a:$hn" "exec:$a:$hn" sockets "exec:$b:$hn" "exec:$a:$hn" \
		"exec:$a:grep -E '^(SigIgn|CapBnd|CapEff):' /proc/self/status" \
		"exec:$b:true" "pause:$b" "exec:$b:true" "exec:$a:$hn" "delete:$a" "exec:$a:true"
	echo "$output"
	[ "$status" -eq 0 ]
	line() { sed -n "${1}p" <<<"$output"; }
	[ "$(line 1 | jq -r .body.stdout)" = boxa ]
	[ "$(line 2 | jq -r .body.stdout)" = boxa ]
	# The HTTP connection, and the agent connection kept for its next exec.
	[ "$(line 3 | jq -r .sockets)" = 2 ]
	[ "$(line 4 | jq -r .body.stdout)" = boxb ]
	[ "$(line 5 | jq -r .body.stdout)" = boxa ]
	# Every command starts with default dispositions (none of 1..31
	# ignored; 32 and 33 are glibc's own) and no capability at all.
	st="$(line 6 | jq -r .body.stdout)"
	ign=$((16#$(awk '/^SigIgn/ { print $2 }' <<<"$st")))
	[ $((ign & 0x7fffffff)) -eq 0 ]
	[ "$(awk '/^CapBnd/ { print $2 }' <<<"$st")" = 0000000000000000 ]
	[ "$(awk '/^CapEff/ { print $2 }' <<<"$st")" = 0000000000000000 ]
	# A paused sandbox still answers 409 with a connection kept to it; the
	# next exec into another sandbox gets a connection of its own.
	[ "$(line 7 | jq -r .body.exit_code)" = 0 ]
	[ "$(line 8 | jq -r .status)" = 200 ]
	[ "$(line 9 | jq -c '[.status, .body.error.code]')" = '[409,"paused"]' ]
	[ "$(line 10 | jq -r .body.stdout)" = boxa ]
	[ "$(line 11 | jq -r .status)" = 204 ]
	[ "$(line 12 | jq -r .status)" = 404 ]
	# Gone with the HTTP connection.
	[ "$(line 13 | jq -r .released)" = true ]
}

@test "stdin is streamed to the process, then closed" {
	id="$(create)"
	api "/v1/sandboxes/$id/exec" -N -d '{"cmd": ["sh", "-c", "cat; echo closed"], "stdin": true}' >"$D/ev" &
	BG_PIDS+=($!)
	wait_for "$D/ev" '"type":"start"'
	pid="$(head -1 "$D/ev" | jq .pid)"
	[ "$(api "/v1/sandboxes/$id/processes/$pid/stdin" --data-binary 'line one
')" = '{"written":9}' ]
	api "/v1/sandboxes/$id/processes/$pid/stdin?close=1" --data-binary 'line two' >/dev/null
	wait_for "$D/ev" '"type":"exit"'
	[ "$(jq -j 'select(.type == "stdout") | .data' "$D/ev")" = "line one
line twoclosed" ]
	# Stdin of a process started without it is a conflict.
	[ "$(api_status "/v1/sandboxes/$id/processes/$pid/stdin" --data-binary x)" -ge 400 ]
}

@test "signals reach the process; list shows running and finished processes" {
	id="$(create)"
	api "/v1/sandboxes/$id/exec" -N -d '{"cmd": "trap \"echo got-term; exit 7\" TERM; echo ready; while :; do sleep 0.1; done"}' >"$D/ev" &
	BG_PIDS+=($!)
	wait_for "$D/ev" 'ready'
	pid="$(head -1 "$D/ev" | jq .pid)"
	run api "/v1/sandboxes/$id/processes"
	[ "$(echo "$output" | jq ".processes[] | select(.pid == $pid) | .running")" = true ]
	[ "$(api_status "/v1/sandboxes/$id/processes/$pid/signal" -d '{"signal": "TERM"}')" = 204 ]
	wait_for "$D/ev" '"type":"exit"'
	grep -q got-term "$D/ev"
	[ "$(tail -1 "$D/ev" | jq .exit_code)" = 7 ]
	run api "/v1/sandboxes/$id/processes"
	[ "$(echo "$output" | jq ".processes[] | select(.pid == $pid) | .exit_code")" = 7 ]
	[ "$(api_status "/v1/sandboxes/$id/processes/$pid/signal" -d '{"signal": "NOPE"}')" = 400 ]
}

@test "a timeout kills the whole process group" {
	id="$(create)"
	start=$(date +%s%N)
	run api "/v1/sandboxes/$id/exec" -d '{"cmd": "sleep 1000 & echo $! > /workspace/bg; sleep 1000", "timeout": "1s"}'
	end=$(date +%s%N)
	[ "$(echo "$output" | tail -1 | jq -c '[.exit_code, .timed_out]')" = '[124,true]' ]
	(( (end - start) / 1000000 < 10000 ))
	# The background sleep was in the group: gone too.
	run exec_wait "$id" '"kill -0 $(cat /workspace/bg) 2>/dev/null && echo alive || echo gone"'
	[ "$(echo "$output" | jq -r .stdout)" = gone ]
}

@test "100 MiB of output to a slow reader: daemon and agent memory stay bounded" {
	id="$(create)"
	apid="$(agent_pid "$id")"
	daemon_before="$(vm_rss_kib "$DAEMON_PID")"
	api "/v1/sandboxes/$id/exec" -N --limit-rate 40M \
		-d '{"cmd": "head -c 104857600 /dev/zero | tr \"\\\\0\" a"}' -o "$D/big" &
	reader=$!
	BG_PIDS+=($reader)
	max_d=0 max_a=0
	for ((i = 0; i < 600; i++)); do
		kill -0 "$reader" 2>/dev/null || break
		d="$(vm_rss_kib "$DAEMON_PID")"; a="$(vm_rss_kib "$apid")"
		((d > max_d)) && max_d=$d
		((a > max_a)) && max_a=$a
		sleep 0.1
	done
	wait "$reader"
	echo "daemon RSS before ${daemon_before} KiB, max ${max_d} KiB; agent max ${max_a} KiB" >&3
	[ "$(tail -1 "$D/big" | jq -r .type)" = exit ]
	bytes="$(jq -j 'select(.type == "stdout") | .data' "$D/big" | wc -c)"
	[ "$bytes" = 104857600 ]
	(( max_d - daemon_before < 32768 ))
	(( max_a < 32768 ))
}

@test "1 GiB upload and download stream through (memory bounded)" {
	id="$(create)"
	head -c 1073741824 /dev/urandom >"$D/big.in"
	want="$(sha256sum <"$D/big.in" | cut -d' ' -f1)"
	before="$(vm_rss_kib "$DAEMON_PID")"
	API_TIMEOUT=300 run api "/v1/sandboxes/$id/files?path=/workspace/big" -T "$D/big.in"
	[ "$(echo "$output" | jq .size)" = 1073741824 ]
	[ "$(sha256sum <"$STATE/sandboxes/$id/workspace/big" | cut -d' ' -f1)" = "$want" ]
	rm -f "$D/big.in"
	API_TIMEOUT=300 api "/v1/sandboxes/$id/files?path=/workspace/big" -o "$D/big.out"
	[ "$(sha256sum <"$D/big.out" | cut -d' ' -f1)" = "$want" ]
	after="$(vm_hwm_kib "$DAEMON_PID")"
	echo "daemon RSS before ${before} KiB, high-water mark after ${after} KiB" >&3
	(( after - before < 65536 ))
}

@test "files: write, read, list, stat, mkdir, move, delete" {
	id="$(create)"
	[ "$(printf 'hello' | api "/v1/sandboxes/$id/files?path=/workspace/a.txt&mode=0600" -T - | jq .size)" = 5 ]
	[ "$(api "/v1/sandboxes/$id/files?path=/workspace/a.txt")" = hello ]
	[ "$(api "/v1/sandboxes/$id/files/stat?path=/workspace/a.txt" | jq -r '[.type, .size, .mode] | @tsv')" = "file	5	0600" ]
	[ "$(api_status "/v1/sandboxes/$id/files/mkdir" -d '{"path": "/workspace/x/y"}')" = 204 ]
	[ "$(api_status "/v1/sandboxes/$id/files/move" -d '{"from": "/workspace/a.txt", "to": "/workspace/x/y/b.txt"}')" = 204 ]
	[ "$(api "/v1/sandboxes/$id/files?path=/workspace/x/y&list=1" | jq -r '.entries[].name')" = b.txt ]
	[ "$(cat "$STATE/sandboxes/$id/workspace/x/y/b.txt")" = hello ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/x&recursive=1" -X DELETE)" = 204 ]
	[ ! -e "$STATE/sandboxes/$id/workspace/x" ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/nope")" = 404 ]
}

@test "reads see the sandbox's files; .., /proc, writes outside and host-only paths refused" {
	id="$(create)"
	# A read anywhere the sandbox sees gives what its processes read.
	want="$(exec_wait "$id" '"sha256sum /etc/os-release /etc/passwd"' | jq -r .stdout)"
	[ -n "$want" ]
	got="$(cd "$D" && api "/v1/sandboxes/$id/files?path=/etc/os-release" -o os-release &&
		api "/v1/sandboxes/$id/files?path=/etc/passwd" -o passwd &&
		sha256sum os-release passwd | awk '{print $1}')"
	[ "$got" = "$(echo "$want" | awk '{print $1}')" ]
	[ "$(api "/v1/sandboxes/$id/files/stat?path=/etc/passwd" | jq -r .type)" = file ]
	api "/v1/sandboxes/$id/files?path=/etc&list=1" | jq -e '.entries[] | select(.name == "os-release")' >/dev/null
	for p in ../etc/passwd /workspace/../etc/passwd /proc/self/environ /proc/1/root/etc/passwd; do
		[ "$(api_status "/v1/sandboxes/$id/files?path=$p")" = 403 ]
	done
	# Symlinks resolve inside the sandbox's root (for reads); writes
	# through them, or anywhere outside the writable roots, are refused.
	exec_wait "$id" '"ln -s /etc /workspace/out && ln -s ../../etc /workspace/rel && ln -s /proc/1/root /workspace/p1"' >/dev/null
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/out/passwd")" = 200 ]
	cmp "$D/body" "$D/passwd"
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/rel/passwd")" = 200 ]
	cmp "$D/body" "$D/passwd"
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/p1/etc/passwd")" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/workspace/out/x" -T /dev/null)" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/etc/x" -T /dev/null)" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/usr/x" -T /dev/null)" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files/mkdir" -d '{"path": "/etc/x"}')" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files?path=/etc/passwd" -X DELETE)" = 403 ]
	[ "$(api_status "/v1/sandboxes/$id/files/move" -d '{"from": "/etc/passwd", "to": "/workspace/p"}')" = 403 ]
	[ "$(exec_wait "$id" '"ls /etc/x /usr/x /workspace/p 2>/dev/null | wc -l"' | jq -r .stdout)" = 0 ]
	# A host path the sandbox does not see (this test's directory): not
	# found, and never reached while a symlink to it is swapped in.
	mkdir -p "$D/hostonly"
	echo "host-secret-$MARK" >"$D/hostonly/passwd"
	[ "$(api_status "/v1/sandboxes/$id/files?path=$D/hostonly/passwd")" = 404 ]
	exec_wait "$id" '"mkdir -p /workspace/d && echo inside > /workspace/d/passwd"' >/dev/null
	api "/v1/sandboxes/$id/exec" -d '{"cmd": "i=0; while [ $i -lt 20000 ]; do mv /workspace/d /workspace/d.real; ln -s '"$D/hostonly"' /workspace/d; rm /workspace/d; mv /workspace/d.real /workspace/d; i=$((i+1)); done", "detach": true}' >/dev/null
	for ((i = 0; i < 300; i++)); do
		out="$(api "/v1/sandboxes/$id/files?path=/workspace/d/passwd" 2>/dev/null || true)"
		if [[ "$out" == *host-secret* ]]; then
			echo "read a host-only file through a swapped symlink" >&2
			return 1
		fi
	done
}

@test "malformed requests get the right 4xx and change nothing" {
	id="$(create)"
	before="$(ls -R "$STATE" | sort)"
	[ "$(api_status /v1/sandboxes -d '{bad json')" = 400 ]
	[ "$(echo "$(cat "$D/body")" | jq -r .error.code)" = invalid ]
	[ "$(api_status /v1/sandboxes -d '{"limits": {"memory": true}}')" = 400 ]
	[ "$(api_status /v1/sandboxes -d '{"mounts": "nope"}')" = 400 ]
	[ "$(api_status /v1/sandboxes -d '{"unknown": 1}')" = 400 ]
	[ "$(api_status /v1/sandboxes -d '[1, 2]')" = 400 ]
	[ "$(api_status /v1/sandboxes -d '{"workspace": "/nonexistent/dir"}')" = 400 ]
	[ "$(api_status /v1/sandboxes -d '{"mounts": [{"type": "rw", "source": "/tmp", "destination": "/proc"}]}')" = 400 ]
	head -c 3000000 /dev/zero | tr '\0' ' ' >"$D/huge"
	[ "$(api_status /v1/sandboxes -H 'Content-Type: application/json' --data-binary @"$D/huge")" = 413 ]
	[ "$(echo "$(cat "$D/body")" | jq -r .error.code)" = too_large ]
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": 42}')" = 400 ]
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"], "timeout": "forever"}')" = 400 ]
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"], "bogus": 1}')" = 400 ]
	[ "$(api_status /v1/sandboxes/0123456789abcdef/exec -d '{"cmd": ["true"]}')" = 404 ]
	[ "$(api_status /v1/sandboxes/0123456789abcdef -X DELETE)" = 404 ]
	[ "$(api_status /v1/nothing)" = 404 ]
	[ "$(api_status /v1/sandboxes -X PATCH)" = 405 ]
	[ "$(api_status /v1/health -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)")" = 431 ]
	# Smuggling-shaped framing is refused by the strict head parser.
	raw="$(perl -MIO::Socket::UNIX -e '
		my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die;
		print $s "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}";
		my $line = <$s>; $line =~ s/\r\n$//; print $line' "$SOCK")"
	[ "$raw" = "HTTP/1.1 400 Error" ]
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 1 ]
	[ "$(ls -R "$STATE" | sort)" = "$before" ]
	run api "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"], "wait": true}'
	[ "$(echo "$output" | jq .exit_code)" = 0 ]
}

@test "limits: sandboxes (429) and exec streams per sandbox" {
	daemon_teardown
	daemon_start --max-sandboxes 2 --max-execs 1
	id="$(create)"
	create >/dev/null
	[ "$(api_status /v1/sandboxes -d '{}')" = 429 ]
	[ "$(jq -r .error.code "$D/body")" = limit ]
	api "/v1/sandboxes/$id/exec" -N -d '{"cmd": "echo up; sleep 30"}' >"$D/ev" &
	BG_PIDS+=($!)
	wait_for "$D/ev" up
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"]}')" = 429 ]
}

@test "TTLs expire: the sandbox and its monitor go" {
	id="$(create '{"ttl": "1s"}')"
	mon="$(api "/v1/sandboxes/$id" | jq .monitor_pid)"
	for ((i = 0; i < 100; i++)); do
		[ "$(api_status "/v1/sandboxes/$id")" = 404 ] && break
		sleep 0.1
	done
	[ "$(api_status "/v1/sandboxes/$id")" = 404 ]
	[ ! -e "$STATE/sandboxes/$id" ]
	monitor_gone "$mon"
}

@test "a sandbox whose agent dies is reported dead and cleaned up" {
	id="$(create)"
	apid="$(agent_pid "$id")"
	kill -KILL "$apid"
	for ((i = 0; i < 50; i++)); do
		[ "$(api "/v1/sandboxes/$id" | jq -r .state)" = dead ] && break
		sleep 0.1
	done
	run api "/v1/sandboxes/$id"
	[ "$(echo "$output" | jq -r .state)" = dead ]
	echo "$output" | jq -r .dead_reason | grep -q monitor
	[ ! -e "$STATE/sandboxes/$id/agent.sock" ]
	[ ! -e "$STATE/sandboxes/$id/workspace" ]
	[ "$(api_status "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"]}')" = 409 ]
	[ "$(api_status "/v1/sandboxes/$id" -X DELETE)" = 204 ]
	[ ! -e "$STATE/sandboxes/$id" ]
}

@test "DELETE without force refuses a sandbox with running processes" {
	id="$(create)"
	api "/v1/sandboxes/$id/exec" -d '{"cmd": ["sleep", "60"], "detach": true}' >/dev/null
	[ "$(api_status "/v1/sandboxes/$id" -X DELETE)" = 409 ]
	[ "$(api "/v1/sandboxes/$id" | jq -r .state)" = running ]
	[ "$(api_status "/v1/sandboxes/$id?force=1" -X DELETE)" = 204 ]
}

@test "--listen refuses non-loopback addresses and needs a token" {
	printf 'a-test-token-of-32-characters-xx\n' >"$D/token"
	run "$AGENTBOX" serve --socket "$D/s2/a.sock" --state-dir "$D/st2" --listen 0.0.0.0:1 --token-file "$D/token"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q 'not a loopback'
	run "$AGENTBOX" serve --socket "$D/s2/a.sock" --state-dir "$D/st2" --listen 127.0.0.1:1
	[ "$status" -ne 0 ]
	echo "$output" | grep -q 'token'
}

@test "--listen on loopback serves only requests with the bearer token" {
	daemon_teardown
	printf 'a-test-token-of-32-characters-xx\n' >"$D/token"
	chmod 600 "$D/token"
	port=$((20000 + RANDOM % 20000))
	daemon_start --listen "127.0.0.1:$port" --token-file "$D/token"
	grep -q warning "$D/daemon.log"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/health")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong-token-wrong-token' "http://127.0.0.1:$port/v1/health")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer a-test-token-of-32-characters-xx' "http://127.0.0.1:$port/v1/health")" = 200 ]
}
