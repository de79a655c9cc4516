#!/usr/bin/env bats
# scripts/check-layers (make layers): the tree passes, and a copy of the
# tree with a forbidden edge or a widened hard rule fails, naming the edge.

setup() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	COPY="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$COPY"
	cp -r "$ROOT/src" "$ROOT/docs" "$ROOT/scripts" "$COPY/"
}

@test "the tree's includes all follow the layer table" {
	run "$ROOT/scripts/check-layers" "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"agent    may use: base, proto"* ]]
}

@test "an upward include fails with FILE:LINE: LAYER -> LAYER and what the layer may use" {
	sed -i '1i #include "daemon/relay.h"' "$COPY/src/net/iobuf.c"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/net/iobuf.c:1: net -> daemon (net may use: base, policy)"* ]]
}

@test "the agent reaching the host side fails, also through a relative path" {
	sed -i '1i #include "../session/agent-client.h"' "$COPY/src/agent/ring.c"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/agent/ring.c:1: agent -> session"* ]]
}

@test "a table that lets proto reach net, even through another layer, fails" {
	sed -i 's/^| `proto` | base |/| `proto` | base, session |/' "$COPY/docs/architecture.md"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the table lets proto reach net (hard rule)"* ]]
	[[ "$output" == *"the table lets agent reach session (hard rule)"* ]]
}

@test "a folder missing from the table fails" {
	mkdir "$COPY/src/extra"
	echo '#include "base/error.h"' >"$COPY/src/extra/x.c"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/extra/: folder not in the layer table"* ]]
}
