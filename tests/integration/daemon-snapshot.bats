#!/usr/bin/env bats
# Filesystem snapshots and fork of daemon sandboxes (docs/snapshots.md):
# a workspace of 10,000 files and a 1 GiB (sparse, with data) file comes
# back byte for byte; a fork taken while a process writes gets a
# consistent copy; tampered, stale or foreign metadata is refused with the
# reason; a memory snapshot on native is a clear error; nothing is left
# after `snapshot rm` and `rm`.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
}

teardown() {
	daemon_teardown
}

# A listing of a tree that is equal exactly when the trees are: names,
# types, modes, owners, sizes, mtimes and every byte (GNU tar, sorted).
tree_sum() {
	tar -C "$1" --sort=name --numeric-owner -cf - . | sha256sum | cut -d' ' -f1
}

ws() {
	echo "$STATE/sandboxes/$1/workspace"
}

@test "snapshot of 10,000 files and a 1 GiB file, restored byte for byte by create --from-snapshot" {
	# Copying and removing 10,000 files is quick on an idle disk, slow on a
	# shared and loaded one: wider bounds for the calls that do it.
	export AB_CALL_TIMEOUT=180 API_TIMEOUT=180
	id="$(create '{"backend": "native"}')"
	# The tree is made on the host side of the workspace (a shell loop in
	# the sandbox takes far longer); the big file and the rest inside.
	python3 -c 'import os, sys
for d in range(100):
    os.mkdir("%s/t/d%d" % (sys.argv[1], d)) if d else os.makedirs("%s/t/d0" % sys.argv[1])
    for f in range(100):
        with open("%s/t/d%d/f%d" % (sys.argv[1], d, f), "w") as o:
            o.write("%d-%d\n" % (d, f))' "$(ws "$id")"
	run exec_wait "$id" '"truncate -s 1G big && printf head | dd of=big conv=notrunc status=none && head -c 1048576 /dev/urandom | dd of=big bs=1M seek=512 conv=notrunc status=none && ln -s /etc/passwd link && chmod 0751 t/d7"'
	[ "$(echo "$output" | jq .exit_code)" = 0 ]
	[ "$(find "$(ws "$id")/t" -type f | wc -l)" = 10000 ]
	run ab snapshot create "$id" --name full
	[ "$status" -eq 0 ]
	[ "$output" = full ]
	info="$(api /v1/snapshots/full)"
	echo "snapshot: $(echo "$info" | jq -c '{paused_us, took_us, content}')" >&3
	[ "$(echo "$info" | jq .content.files)" = 10001 ]
	[ "$(echo "$info" | jq -r .source)" = "$id" ]
	# The source keeps running, unpaused.
	[ "$(api "/v1/sandboxes/$id" | jq -r .state)" = running ]
	run ab snapshot ls
	echo "$output" | grep -E "^full +$id +native +10001"
	run ab create --from-snapshot full
	[ "$status" -eq 0 ]
	new="$output"
	[ "$new" != "$id" ]
	[ "$(tree_sum "$(ws "$new")")" = "$(tree_sum "$(ws "$id")")" ]
	# Holes stayed holes: 1 GiB apparent, about 1 MiB on disk.
	[ "$(du -k "$(ws "$new")/big" | cut -f1)" -lt 10240 ]
	run exec_wait "$new" '"cd /workspace && cat t/d42/f17 && head -c 4 big && readlink link"'
	[ "$(echo "$output" | jq -r .stdout)" = "$(printf '42-17\nhead/etc/passwd')" ]
	run ab snapshot rm full
	[ "$status" -eq 0 ]
	[ -z "$(ls "$STATE/snapshots")" ]
	run ab rm -f "$id" "$new"
	[ "$status" -eq 0 ]
	[ -z "$(ls "$STATE/sandboxes")" ]
	assert_nothing_left "$SNAPSHOT"
}

@test "fork while a process writes: each fork has its own id, token and a consistent copy" {
	id="$(create '{"backend": "native", "labels": {"k": "v"}}')"
	api "/v1/sandboxes/$id/exec" -d '{"cmd": "i=0; while :; do i=$((i+1)); echo line-$i >> log; done", "detach": true}' >/dev/null
	wait_until 50 test -s "$(ws "$id")/log"
	run ab fork "$id" --count 2 --json
	[ "$status" -eq 0 ]
	echo "fork: $(echo "$output" | jq -c '{took_us, memory}')" >&3
	[ "$(echo "$output" | jq '.sandboxes | length')" = 2 ]
	[ "$(echo "$output" | jq .memory)" = false ]
	f1="$(echo "$output" | jq -r '.sandboxes[0].id')"
	f2="$(echo "$output" | jq -r '.sandboxes[1].id')"
	[ "$f1" != "$f2" ] && [ "$f1" != "$id" ]
	[ "$(echo "$output" | jq -r '.sandboxes[0].port_token')" != "$(echo "$output" | jq -r '.sandboxes[1].port_token')" ]
	[ "$(api "/v1/sandboxes/$f1" | jq -r .labels.k)" = v ]
	for f in "$f1" "$f2"; do
		# Every line complete and in order: the copy was taken paused.
		n="$(wc -l <"$(ws "$f")/log")"
		[ "$n" -gt 0 ]
		[ "$(tail -1 "$(ws "$f")/log")" = "line-$n" ]
		[ "$(cat "$(ws "$f")/log" | tr -d '\n' | wc -c)" = "$(seq 1 "$n" | sed 's/^/line-/' | tr -d '\n' | wc -c)" ]
		# Filesystem only: the writer does not run in a fork.
		run exec_wait "$f" '"sleep 0.2; wc -l < log"'
		[ "$(echo "$output" | jq -r .stdout)" = "$n" ]
	done
	# The parent writes on.
	n0="$(wc -l <"$(ws "$id")/log")"
	sleep 0.2
	[ "$(wc -l <"$(ws "$id")/log")" -gt "$n0" ]
	# The fork's temporary snapshot is gone.
	[ -z "$(ls "$STATE/snapshots")" ]
	run ab rm -f "$id" "$f1" "$f2"
	[ "$status" -eq 0 ]
	assert_nothing_left "$SNAPSHOT"
}

@test "tampered, stale and foreign snapshots are refused with the reason; memory on native is an error" {
	id="$(create '{"backend": "native"}')"
	exec_wait "$id" '"echo data > f"' >/dev/null
	for n in a b c d; do
		[ "$(api_status "/v1/sandboxes/$id/snapshots" -d "{\"name\": \"$n\"}")" = 201 ]
	done
	[ "$(api_status "/v1/sandboxes/$id/snapshots" -d '{"name": "a"}')" = 409 ]
	[ "$(api_status "/v1/sandboxes/$id/snapshots" -d '{"name": "../x"}')" = 400 ]
	# Content changed after the snapshot.
	echo evil >"$STATE/snapshots/a/workspace/f"
	[ "$(api_status /v1/sandboxes -d '{"from_snapshot": "a"}')" = 409 ]
	grep -q 'tampered' "$D/body"
	# Metadata out of range.
	jq -c '.vcpu_count = 99' "$STATE/snapshots/b/snapshot.json" >"$D/m" && cp "$D/m" "$STATE/snapshots/b/snapshot.json"
	[ "$(api_status /v1/sandboxes -d '{"from_snapshot": "b"}')" -ge 400 ]
	grep -q 'vcpu_count' "$D/body"
	# Stale: another format version.
	jq -c '.format_version = 0' "$STATE/snapshots/c/snapshot.json" >"$D/m" && cp "$D/m" "$STATE/snapshots/c/snapshot.json"
	[ "$(api_status /v1/sandboxes -d '{"from_snapshot": "c"}')" -ge 400 ]
	grep -qi 'stale\|format' "$D/body"
	# Another backend.
	[ "$(api_status /v1/sandboxes -d '{"from_snapshot": "d", "backend": "gvisor"}')" = 409 ]
	grep -q 'taken on the native backend, not gvisor' "$D/body"
	[ "$(api_status /v1/sandboxes -d '{"from_snapshot": "nosuch"}')" = 404 ]
	# A refused restore leaves no sandbox behind.
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 1 ]
	# Memory: native cannot, and says why.
	[ "$(api_status "/v1/sandboxes/$id/snapshots" -d '{"memory": true}')" = 409 ]
	grep -q 'CRIU' "$D/body"
	[ "$(api "/v1/sandboxes/$id/snapshots" | jq '.snapshots | length')" = 4 ]
	run ab snapshot rm a b c d
	[ "$status" -eq 0 ]
	[ "$(api_status /v1/snapshots/a -X DELETE)" = 404 ]
	[ -z "$(ls "$STATE/snapshots")" ]
	run ab rm -f "$id"
	assert_nothing_left "$SNAPSHOT"
}

@test "gvisor: a filesystem snapshot and a fork; a memory snapshot is refused naming why" {
	command -v runsc >/dev/null || skip "runsc is not installed"
	id="$(create '{"backend": "gvisor"}')"
	run exec_wait "$id" '"mkdir -p /workspace/d && echo gv > /workspace/d/f && ln -s d /workspace/l"'
	[ "$(echo "$output" | jq .exit_code)" = 0 ]
	[ "$(api_status "/v1/sandboxes/$id/snapshots" -d '{"memory": true}')" = 409 ]
	grep -q 'bound host socket' "$D/body"
	[ "$(api_status "/v1/sandboxes/$id/snapshots" -d '{"name": "g"}')" = 201 ]
	[ "$(jq -r .backend "$D/body")" = gvisor ]
	new="$(create '{"from_snapshot": "g"}')"
	[ "$(api "/v1/sandboxes/$new" | jq -r .backend)" = gvisor ]
	run exec_wait "$new" '"cat /workspace/l/f"'
	[ "$(echo "$output" | jq -r .stdout)" = gv ]
	[ "$(tree_sum "$(ws "$new")")" = "$(tree_sum "$(ws "$id")")" ]
	[ "$(api_status "/v1/sandboxes/$id/fork" -d '{"count": 1}')" = 201 ]
	f="$(jq -r '.sandboxes[0].id' "$D/body")"
	run exec_wait "$f" '"cat /workspace/d/f"'
	[ "$(echo "$output" | jq -r .stdout)" = gv ]
	# While paused, every agent call is refused (the MCP and exec-server
	# doors too: they connect through the same place).
	api "/v1/sandboxes/$f/pause" -X POST >/dev/null
	[ "$(api_status "/v1/sandboxes/$f/processes")" = 409 ]
	run ab snapshot rm g
	[ -z "$(ls "$STATE/snapshots")" ]
	run ab rm -f "$id" "$new" "$f"
	[ "$status" -eq 0 ]
	[ -z "$(ls "$STATE/sandboxes")" ]
	assert_nothing_left "$SNAPSHOT"
}
