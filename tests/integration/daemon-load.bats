#!/usr/bin/env bats
# Many sandboxes, many concurrent execs, bounded in time.

load daemon-common.bash

setup() {
	daemon_setup
	daemon_start
}

teardown() {
	daemon_teardown
}

@test "100 sandboxes with 10 concurrent execs each, within 180 s; nothing left after rm" {
	start=$(date +%s)
	seq 1 100 | xargs -P 8 -I{} curl -sS --max-time 60 --unix-socket "$SOCK" \
		-d '{"workspace": null, "labels": {"load": "1"}}' http://agentbox/v1/sandboxes >"$D/created"
	# A create that failed: its answer, for the failure's output.
	grep -v '"id"' "$D/created" >&2 || true
	[ "$(jq -r .id "$D/created" | sort -u | wc -l)" = 100 ]
	jq -r .id "$D/created" >"$D/ids"
	# 1,000 execs, 10 per sandbox, 40 in flight at a time.
	while read -r id; do
		for i in $(seq 1 10); do echo "$id $i"; done
	done <"$D/ids" | xargs -P 40 -n 2 sh -c \
		'curl -sS --max-time 60 --unix-socket "$0" -d "{\"cmd\": [\"echo\", \"$1-$2\"], \"wait\": true}" "http://agentbox/v1/sandboxes/$1/exec" | jq -j .stdout' "$SOCK" \
		| sort >"$D/outputs"
	while read -r id; do
		for i in $(seq 1 10); do echo "$id-$i"; done
	done <"$D/ids" | sort >"$D/want"
	diff "$D/want" "$D/outputs"
	mid=$(date +%s)
	echo "100 sandboxes + 1000 execs in $((mid - start)) s" >&3
	((mid - start < 180))
	xargs -P 8 -I{} curl -sS --max-time 60 --unix-socket "$SOCK" -X DELETE "http://agentbox/v1/sandboxes/{}?force=1" <"$D/ids"
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 0 ]
	[ -z "$(ls "$STATE/sandboxes")" ]
	for p in $(pgrep -x agentbox-mon); do
		! tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$(head -1 "$D/ids")"
	done
	assert_nothing_left "$SNAPSHOT"
}
