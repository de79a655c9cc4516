#!/usr/bin/env bats
# Warm pools (docs/pools.md): POST/GET/DELETE /v1/pools, claims through
# POST /v1/sandboxes {"pool": ...}, the replenisher's rules (refill,
# backoff, dead entries replaced), re-adoption after a daemon SIGKILL, and
# that `pool rm` leaves nothing.  Each test has its own daemon.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
}

teardown() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		for p in $(api /v1/pools 2>/dev/null | jq -r '.pools[].name' 2>/dev/null); do
			api -X DELETE "/v1/pools/$p" >/dev/null 2>&1 || true
		done
	fi
	daemon_teardown
}

# pool_new NAME MIN MAX [SPEC-JSON]
pool_new() {
	api /v1/pools -d "{\"name\": \"$1\", \"min_ready\": $2, \"max_ready\": $3, \"spec\": ${4:-{\}}}" \
		| jq -e .name >/dev/null
}

# wait_ready NAME N: the pool has N ready entries (30 s at most).
wait_ready() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(api "/v1/pools/$1" | jq .ready)" = "$2" ] && return 0
		sleep 0.1
	done
	api "/v1/pools/$1" >&2
	return 1
}

# claim BODY: prints the answer (201 expected unless told).
claim() {
	api /v1/sandboxes -d "$1"
}

entry_ids() {
	api "/v1/pools/$1" | jq -r '[.entries[] | select(.state == "running") | .id] | sort | join(",")'
}

@test "pools: bounds and requests are checked" {
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 3, "max_ready": 2}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 0, "max_ready": 0}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 1000}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "../x", "min_ready": 1}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 1, "spec": {"workspace": "/tmp"}}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 1, "spec": {"ttl": "1m"}}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 1, "spec": {"memory": "lots"}}')" = 400 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 0, "max_ready": 2}')" = 201 ]
	[ "$(api_status /v1/pools -d '{"name": "p", "min_ready": 0}')" = 409 ]
	[ "$(api_status /v1/sandboxes -d '{"pool": "nope"}')" = 404 ]
	[ "$(api_status /v1/sandboxes -d '{"pool": "p", "memory": "1g"}')" = 400 ]
	# Empty: pool_only is 503, else a cold sandbox of the pool's spec.
	[ "$(api_status /v1/sandboxes -d '{"pool": "p", "pool_only": true}')" = 503 ]
	[ "$(jq -r .error.code "$D/body")" = pool_empty ]
	[ "$(api_status /v1/sandboxes -d '{"pool": "p"}')" = 201 ]
	[ "$(jq .from_pool "$D/body")" = false ]
	[ "$(api /v1/pools/p | jq .misses)" = 2 ]
	run ab pool ls
	[ "$status" -eq 0 ]
	[[ "$output" == *"p "* ]]
}

@test "pools: claims faster than the replenisher drain the pool, and it refills" {
	pool_new p 2 2
	wait_ready p 2
	for i in 1 2; do
		[ "$(claim '{"pool": "p", "pool_only": true}' | jq .from_pool)" = true ]
	done
	# Drained: the next pool_only claim may find nothing (or a fresh entry
	# if the replenisher was quick); either way it refills to 2.
	run api_status /v1/sandboxes -d '{"pool": "p", "pool_only": true}'
	[[ "$output" == 201 || "$output" == 503 ]]
	wait_ready p 2
	j="$(api /v1/pools/p)"
	[ "$(echo "$j" | jq '.claims >= 2')" = true ]
	[ "$(echo "$j" | jq .failures)" = 0 ]
	# Claimed sandboxes are ordinary ones now, entries are not listed.
	[ "$(api /v1/sandboxes | jq '[.sandboxes[] | select(.state == "running")] | length')" -ge 2 ]
	for e in $(api /v1/pools/p | jq -r '.entries[].id'); do
		[ "$(api_status "/v1/sandboxes/$e")" = 404 ]
		[ "$(api_status "/v1/sandboxes/$e/exec" -d '{"cmd": ["true"], "wait": true}')" = 404 ]
	done
	run api /v1/metrics
	[[ "$output" == *'agentbox_pool_target{pool="p"} 2'* ]]
	[[ "$output" == *'agentbox_pool_ready{pool="p"} 2'* ]]
	[[ "$output" == *'agentbox_pool_claim_seconds_count{pool="p"} '* ]]
}

@test "pools: a ready entry whose agent was killed is replaced, never handed out" {
	pool_new p 1 1
	wait_ready p 1
	old="$(api /v1/pools/p | jq -r '.entries[0].id')"
	mon="$(api /v1/pools/p | jq -r '.entries[0].monitor_pid')"
	agent="$(pgrep -P "$mon" -x agentbox-agent)"
	kill -KILL "$agent"
	run api_status /v1/sandboxes -d '{"pool": "p", "pool_only": true}'
	if [ "$output" = 201 ]; then
		[ "$(jq -r .id "$D/body")" != "$old" ]
		run exec_wait "$(jq -r .id "$D/body")" '["echo", "alive"]'
		[ "$(echo "$output" | jq -r .stdout)" = alive ]
	else
		[ "$output" = 503 ]
	fi
	wait_ready p 1
	[ "$(api /v1/pools/p | jq -r '.entries[0].id')" != "$old" ]
	[ ! -e "$STATE/sandboxes/$old" ]
	monitor_gone "$mon"
}

@test "pools: two claims in parallel get different entries" {
	pool_new p 2 2
	wait_ready p 2
	claim '{"pool": "p", "pool_only": true}' >"$D/c1" &
	p1=$!
	claim '{"pool": "p", "pool_only": true}' >"$D/c2" &
	p2=$!
	wait "$p1" "$p2"
	a="$(jq -r .id "$D/c1")"
	b="$(jq -r .id "$D/c2")"
	[ -n "$a" ] && [ "$a" != null ] && [ -n "$b" ] && [ "$b" != null ]
	[ "$a" != "$b" ]
	[ "$(jq .from_pool "$D/c1")" = true ] && [ "$(jq .from_pool "$D/c2")" = true ]
}

@test "pools: a claim carries its own env, labels, ttl and credentials, and none of another claim's files" {
	pool_new p 2 2 '{"network": "proxy"}'
	wait_ready p 2
	# A bad claim is refused before it takes an entry.
	[ "$(api_status /v1/sandboxes -d '{"pool": "p", "egress": {"allow": ["x"]}}')" = 400 ]
	[ "$(api /v1/pools/p | jq .ready)" = 2 ]
	cred='{"name": "openai", "baseUrl": "https://api.openai.example", "inject": [{"header": "authorization", "value": "Bearer sk-test-A"}]}'
	a="$(claim "{\"pool\": \"p\", \"pool_only\": true, \"env\": {\"WHO\": \"a\"}, \"labels\": {\"t\": \"a\"}, \"ttl\": \"10m\", \"credentials\": [$cred], \"egress\": {\"allow_hosts\": [\"example.com\"]}}")"
	echo "$a" | jq -e '.from_pool == true and .labels.t == "a" and .expires_at != null' >/dev/null
	a="$(echo "$a" | jq -r .id)"
	run exec_wait "$a" '["sh", "-c", "echo $WHO; echo secret-a > /workspace/mine; env | grep -c AGENTBOX_CREDENTIAL_TOKEN"]'
	[ "$(echo "$output" | jq -r .stdout)" = "$(printf 'a\n1')" ]
	[ -f "$STATE/sandboxes/$a/credentials.json" ]
	! grep -q sk-test-A "$STATE/sandboxes/$a/state.json"
	b="$(claim '{"pool": "p", "pool_only": true, "env": {"WHO": "b"}}' | jq -r .id)"
	[ "$b" != "$a" ]
	run exec_wait "$b" '["sh", "-c", "echo $WHO; ls -A /workspace | wc -l; env | grep -c AGENTBOX_CREDENTIAL_TOKEN"]'
	[ "$(echo "$output" | jq -r .stdout)" = "$(printf 'b\n0\n0')" ]
	[ ! -e "$STATE/sandboxes/$b/credentials.json" ]
	[ "$(api "/v1/sandboxes/$b" | jq -r .expires_at)" = null ]
}

@test "pools: a broken spec backs off (5 s, doubling) and reports its error" {
	api /v1/pools -d "{\"name\": \"broken\", \"min_ready\": 1, \"spec\": {\"rootfs\": \"/nonexistent-$MARK\"}}" >/dev/null
	sleep 10.5
	j="$(api /v1/pools/broken)"
	echo "$j" >&2
	# Attempts at 0 s and 5 s, the next at 15 s: two in 10 s, not a spin.
	[ "$(echo "$j" | jq .failures)" = 2 ]
	[ "$(echo "$j" | jq .ready)" = 0 ]
	[[ "$(echo "$j" | jq -r .last_error)" == *"nonexistent-$MARK"* ]]
	run api /v1/metrics
	[[ "$output" == *'agentbox_pool_replenish_failures_total{pool="broken"} 2'* ]]
	run ab pool ls
	[[ "$output" == *"nonexistent-$MARK"* ]]
	[ -z "$(ls "$STATE/sandboxes")" ]
}

@test "pools: a daemon SIGKILLed and restarted keeps the pool, its entries and its counts" {
	pool_new p 2 2
	wait_ready p 2
	[ "$(claim '{"pool": "p", "pool_only": true}' | jq .from_pool)" = true ]
	wait_ready p 2
	sleep 0.5 # the counters are saved by the replenisher's next round
	before="$(entry_ids p)"
	daemon_kill9
	daemon_start
	wait_ready p 2
	[ "$(entry_ids p)" = "$before" ]
	[ "$(api /v1/pools/p | jq .claims)" = 1 ]
	id="$(claim '{"pool": "p", "pool_only": true, "env": {"X": "y"}}' | jq -r .id)"
	[[ ",$before," == *",$id,"* ]]
	run exec_wait "$id" '["sh", "-c", "echo $X"]'
	[ "$(echo "$output" | jq -r .stdout)" = y ]
}

@test "pools: pool rm destroys its entries and leaves nothing; a claimed sandbox stays" {
	ab pool create p --min 2 --max 2 --no-workspace >/dev/null
	wait_ready p 2
	mons="$(api /v1/pools/p | jq -r '.entries[].monitor_pid')"
	id="$(ab create --pool p --env K=v)"
	run ab pool rm p
	[ "$status" -eq 0 ]
	[ "$(api_status /v1/pools/p)" = 404 ]
	[ "$(jq '.pools | length' "$STATE/pools.json")" = 0 ]
	[ "$(ls "$STATE/sandboxes")" = "$id" ]
	for m in $mons; do monitor_gone "$m" || [ "$m" = "$(api "/v1/sandboxes/$id" | jq .monitor_pid)" ]; done
	run ab exec "$id" -- sh -c 'echo $K'
	[ "$output" = v ]
	[ "$(api_status "/v1/sandboxes/$id?force=1" -X DELETE)" = 204 ]
	[ -z "$(ls "$STATE/sandboxes")" ]
	assert_nothing_left "$SNAPSHOT"
}

# no_claimed: nothing but the pool's own entries is left (10 s at most:
# a one-shot's teardown runs after its caller got the exit status).
no_claimed() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 0 ] \
			&& [ "$(ls "$STATE/sandboxes" | wc -l)" = "$(api "/v1/pools/$1" | jq '.entries | length')" ] \
			&& return 0
		sleep 0.1
	done
	api /v1/sandboxes >&2
	return 1
}

@test "pools: agentbox run --pool claims, runs and streams in one request; the teardown follows" {
	pool_new p 1 1
	wait_ready p 1
	mon="$(api /v1/pools/p | jq -r '.entries[0].monitor_pid')"
	run ab run --pool p -e W=x -- sh -c 'echo $W; echo e >&2; exit 3'
	[ "$status" -eq 3 ]
	[ "$output" = "$(printf 'x\ne')" ]
	[ "$(api /v1/pools/p | jq .claims)" = 1 ]
	monitor_gone "$mon"
	no_claimed p
	run -127 ab run --pool p -- /nonexistent/cmd
	[ "$status" -eq 127 ]
	run ab run --pool p --memory 1g -- true
	[ "$status" -ne 0 ]
	# The API: one answer, the exec's NDJSON stream with the sandbox's id.
	wait_ready p 1
	api /v1/sandboxes -d '{"pool": "p", "run": {"cmd": ["sh", "-c", "echo out"]}}' >"$D/stream"
	[ "$(jq -r 'select(.type == "start") | .id' "$D/stream" | wc -c)" = 17 ]
	[ "$(jq -r 'select(.type == "stdout") | .data' "$D/stream")" = out ]
	[ "$(jq -r 'select(.type == "exit") | .exit_code' "$D/stream")" = 0 ]
	no_claimed p
	# A bad command is a 400 that costs the pool nothing.
	wait_ready p 1
	[ "$(api_status /v1/sandboxes -d '{"pool": "p", "run": {"cmd": []}}')" = 400 ]
	[ "$(api_status /v1/sandboxes -d '{"pool": "p", "run": {"cmd": ["true"], "detach": true}}')" = 400 ]
	[ "$(api /v1/pools/p | jq .ready)" = 1 ]
	[ "$(api /v1/pools/p | jq .claims)" = 3 ]
}

# start_oneshot: `run --pool p -- sleep 60` in the background (its pid in
# $cli), once its sandbox is listed (10 s at most).
start_oneshot() {
	local i
	"$AGENTBOX" run --pool p -- sleep 60 &
	cli=$!
	BG_PIDS+=("$cli")
	for ((i = 0; i < 100; i++)); do
		[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

@test "pools: a one-shot whose caller or daemon dies is torn down (at once, or at the restart)" {
	pool_new p 2 2
	wait_ready p 2
	# The caller goes away: the sandbox goes with it.
	start_oneshot
	mon="$(api /v1/sandboxes | jq -r '.sandboxes[0].monitor_pid')"
	kill -KILL "$cli"
	monitor_gone "$mon"
	wait_ready p 2
	no_claimed p
	# The daemon dies mid-command: its next start finishes the teardown.
	start_oneshot
	id="$(api /v1/sandboxes | jq -r '.sandboxes[0].id')"
	mon="$(api /v1/sandboxes | jq -r '.sandboxes[0].monitor_pid')"
	[ -e "$STATE/sandboxes/$id/oneshot" ]
	daemon_kill9
	st=0
	wait "$cli" || st=$?
	[ "$st" -ne 0 ] # the stream ended before the exit
	[ -d "$STATE/sandboxes/$id" ]
	daemon_start
	[ ! -e "$STATE/sandboxes/$id" ]
	monitor_gone "$mon"
	grep -q "finished the teardown of one-shot sandbox $id" "$D/daemon.log"
	wait_ready p 2
	no_claimed p
}

@test "pools: serve --pool-file declares pools; a changed spec makes its entries stale" {
	echo '{"pools": [{"name": "f", "min_ready": 1, "spec": {"env": {"V": "1"}}}]}' >"$D/pools.json"
	daemon_kill9
	daemon_start --pool-file "$D/pools.json"
	wait_ready f 1
	old="$(entry_ids f)"
	echo '{"pools": [{"name": "f", "min_ready": 1, "spec": {"env": {"V": "2"}}}]}' >"$D/pools.json"
	daemon_kill9
	daemon_start --pool-file "$D/pools.json"
	wait_ready f 1
	[ "$(entry_ids f)" != "$old" ]
	[ ! -e "$STATE/sandboxes/$old" ]
	id="$(claim '{"pool": "f", "pool_only": true}' | jq -r .id)"
	run exec_wait "$id" '["sh", "-c", "echo $V"]'
	[ "$(echo "$output" | jq -r .stdout)" = 2 ]
}

@test "pools: a claim on gVisor" {
	if ! command -v runsc >/dev/null 2>&1; then
		skip "runsc is not installed (scripts/install-deps test)"
	fi
	if ! api /v1/sandboxes -d '{"backend": "gvisor"}' >"$D/probe" || ! jq -e .id "$D/probe" >/dev/null; then
		skip "runsc is unusable here: $(jq -r .error.message "$D/probe" 2>/dev/null)"
	fi
	api -X DELETE "/v1/sandboxes/$(jq -r .id "$D/probe")?force=1" >/dev/null
	pool_new g 1 1 '{"backend": "gvisor"}'
	wait_ready g 1
	j="$(claim '{"pool": "g", "pool_only": true, "env": {"G": "v"}}')"
	[ "$(echo "$j" | jq -r .backend)" = gvisor ]
	run exec_wait "$(echo "$j" | jq -r .id)" '["sh", "-c", "echo $G"]'
	[ "$(echo "$output" | jq -r .stdout)" = v ]
}

@test "pools: a disk limit below one entry's size evicts it and does not spin" {
	api /v1/pools -d '{"name": "small", "min_ready": 2, "max_ready": 2, "disk_limit": 1}' >/dev/null
	for ((i = 0; i < 300; i++)); do
		[[ "$(api /v1/pools/small | jq -r .last_error)" == *disk_limit* ]] && break
		sleep 0.1
	done
	[[ "$(api /v1/pools/small | jq -r .last_error)" == *disk_limit* ]]
	created() { api /v1/metrics | awk '$1 == "agentbox_sandboxes_created_total" { print $2 }'; }
	n="$(created)"
	sleep 2
	[ "$(created)" = "$n" ]
	[ "$(api /v1/pools/small | jq .ready)" = 0 ]
	[ -z "$(ls "$STATE/sandboxes")" ]
}
