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

@test "a library header a layer may not use fails with FILE:LINE: LAYER -> <HEADER>" {
	sed -i '1i #include <jansson.h>' "$COPY/src/agent/ring.c"
	sed -i '1i #include <event2/event.h>' "$COPY/src/backend/monitor.c"
	sed -i '1i #  include <seccomp.h>' "$COPY/src/isolate/userns.c"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/agent/ring.c:1: agent -> <jansson.h> (library jansson; agent may use: no library)"* ]]
	[[ "$output" == *"src/backend/monitor.c:1: backend -> <event2/event.h> (library libevent; backend may use: jansson, openssl)"* ]]
	[[ "$output" == *"src/isolate/userns.c:1: isolate -> <seccomp.h> (library libseccomp"* ]]
	[[ "$output" == *"check-layers: 3 forbidden edge(s)"* ]]
}

@test "a library limited to some files fails in the others; the agent cannot reach one through base" {
	# base may use jansson in json*.c only (the agent build leaves them out).
	printf '#include <jansson.h>\n' >"$COPY/src/base/json-extra.c"
	printf '#include <jansson.h>\n' >"$COPY/src/base/json.h"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 0 ]
	sed -i '1i #include <jansson.h>' "$COPY/src/base/log.c"
	sed -i '1i #include "base/json.h"' "$COPY/src/agent/ring.c"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/base/log.c:1: base -> <jansson.h> (library jansson; base may use: jansson (json* only))"* ]]
	[[ "$output" == *"src/agent/ring.c: agent reaches <jansson.h> through src/base/json.h:1 (hard rule: no library)"* ]]
}

@test "a table that gives the agent a library fails (hard rule); an unknown library name fails" {
	sed -i 's/^| `agent` | base, proto | — |/| `agent` | base, proto | jansson |/' "$COPY/docs/architecture.md"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the table lets agent use jansson (hard rule: no library)"* ]]
	sed -i 's/^| `policy` | base | jansson |/| `policy` | base | libfoo |/' "$COPY/docs/architecture.md"
	run "$COPY/scripts/check-layers" "$COPY"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"layer policy: unknown library 'libfoo'"* ]]
}

@test "the layer archives link in layer order: a call from base up into net fails at link time" {
	LIB="$ROOT/build/lib"
	[ -f "$LIB/libab-net.a" ] && [ -f "$LIB/libab-base.a" ] || skip "no build/lib (run make first)"
	T="$BATS_TEST_TMPDIR"
	printf 'const char *ab_http_status_text (int);\nconst char *ab_base_upcall (void);\nconst char *ab_base_upcall (void) { return ab_http_status_text (200); }\n' >"$T/upcall.c"
	printf 'const char *ab_base_upcall (void);\nint main (void) { return !ab_base_upcall (); }\n' >"$T/main.c"
	gcc -c -o "$T/upcall.o" "$T/upcall.c"
	cp "$LIB/libab-base.a" "$T/libab-base.a"
	ar rs "$T/libab-base.a" "$T/upcall.o"
	# The Makefile's order (net before base): the upward call is undefined.
	run gcc -o "$T/a" "$T/main.c" "$LIB/libab-net.a" "$T/libab-base.a"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"undefined reference to \`ab_http_status_text'"* ]]
	# The same object with the callee's layer after it links: the failure
	# above is the order's doing.
	run gcc -o "$T/b" "$T/main.c" "$T/libab-base.a" "$LIB/libab-net.a" "$LIB/libab-policy.a" "$T/libab-base.a" \
		-ljansson -levent_core -lssl -lcrypto
	echo "$output"
	[ "$status" -eq 0 ]
}
