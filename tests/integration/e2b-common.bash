# The E2B SDK tests (e2b.bats, e2b-gvisor.bats): one daemon per file with
# --e2b-listen on a loopback port, the unmodified `e2b` npm package at the
# two pinned versions of tests/npm/e2b driving it (tests/e2b/*.js).

load daemon-common.bash

E2B_VERSIONS="e2b-2-45 e2b-2-51"

e2b_need() {
	: "${AGENTBOX_NPM_DIR:=$ROOT_DIR/build/npm}"
	export AGENTBOX_NPM_DIR
	command -v node >/dev/null || skip "node is missing"
	for v in $E2B_VERSIONS; do
		[ -d "$AGENTBOX_NPM_DIR/e2b/node_modules/$v" ] ||
			skip "$v is not installed (scripts/install-deps npm)"
	done
}

# e2b_daemon_start: the daemon of this file, its key and a gVisor template;
# "ownwd" names its own workdir; --max-upload 256M so that the gzip bomb of files.js meets it in a second.
e2b_daemon_start() {
	local try
	printf '{"backend": "gvisor", "user": "1000:1000"}\n' >"$D/gvisor.json"
	printf '{"user": "1000:1000", "workdir": "/workspace"}\n' >"$D/ownwd.json"
	for try in 1 2 3 4 5; do
		E2B_PORT=$((20000 + RANDOM % 20000))
		daemon_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-api-key-file "$D/key" \
			--e2b-generate-key --e2b-template "gvisor=$D/gvisor.json" --e2b-template "ownwd=$D/ownwd.json" --max-upload 256M \
			2>/dev/null && break
		grep -q 'Address already in use' "$D/daemon.log" || return 1
		: >"$D/daemon.log"
	done
	export E2B_API_URL="http://127.0.0.1:$E2B_PORT" E2B_SANDBOX_URL="http://127.0.0.1:$E2B_PORT"
	E2B_API_KEY="$(cat "$D/key")"
	export E2B_API_KEY
}

# e2b_node SCRIPT [ARGS]: run tests/e2b/SCRIPT.js with each pinned SDK.
e2b_node() {
	local script="$1" v
	shift
	for v in $E2B_VERSIONS; do
		E2B_PKG="$v" timeout -k 2 170 node "$ROOT_DIR/tests/e2b/$script.js" "$@" || {
			echo "FAILED with $v" >&2
			return 1
		}
	done
}

e2b_setup_file() {
	# daemon-common.bash's per-test state, made once for the whole file.
	BATS_TEST_TMPDIR="$BATS_FILE_TMPDIR"
	BATS_TEST_NUMBER=0
	daemon_setup
	export D SOCK STATE AGENTBOX_HOST TMPDIR
	e2b_daemon_start
	export DAEMON_PID E2B_PORT
}

e2b_teardown_file() {
	# A daemon a test restarted (its pid is not in this shell's DAEMON_PID).
	[ -s "$D/daemon.pid" ] && DAEMON_PID="$(cat "$D/daemon.pid")"
	daemon_teardown
}
