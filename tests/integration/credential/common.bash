# Shared helpers for the credential proxy's integration tests
# (credential-*.bats) and its benchmark.
#
# Every test runs the proxy, the fake TLS upstream (upstream.js, a Node
# https server with a certificate from a test CA made here with openssl)
# and its clients inside a network namespace of its own holding only lo,
# so nothing can leave the machine whatever the configuration says.
#
#   AGENTBOX   path to agentbox (default build/agentbox)
#   CRED_NPM   where the npm packages for the SDK tests are: the `sdk`
#              group of scripts/install-deps npm (default
#              $AGENTBOX_NPM_DIR/sdk, AGENTBOX_NPM_DIR default build/npm)

bats_require_minimum_version 1.5.0

CRED_HELPERS="$(cd "$BATS_TEST_DIRNAME/credential" && pwd)"
ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
# The sandboxes these tests make are native ones unless AB_BACKEND says.
export AGENTBOX_BACKEND="${AB_BACKEND:-native}"
: "${CRED_NPM:=${AGENTBOX_NPM_DIR:-$ROOT_DIR/build/npm}/sdk}"

# The secrets and the token: distinctive strings that a leak search can find.
TOKEN="thread-token-6f1c2a9e8d7b4c3a"
SECRET_ANT="sk-ant-SECRET-5b8e0c1d2f3a4b6c"
SECRET_OAI="sk-oai-SECRET-9a7c5e3b1d2f4e6a"

# cred_make_certs DIR: a test CA, a server certificate for localhost and
# 127.0.0.1 signed by it, one for another name only, and a second CA that
# nobody trusts with a certificate for localhost and 127.0.0.1.
cred_make_certs() {
	local d="$1" ca
	mkdir -p "$d"
	for ca in ca rogue; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-keyout "$d/$ca.key" -out "$d/$ca.pem" -subj "/CN=agentbox test $ca" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
			2>/dev/null
	done
	_cred_leaf "$d" srv ca "subjectAltName=DNS:localhost,IP:127.0.0.1"
	_cred_leaf "$d" other ca "subjectAltName=DNS:other.invalid"
	_cred_leaf "$d" rogue-srv rogue "subjectAltName=DNS:localhost,IP:127.0.0.1"
}

_cred_leaf() {
	local d="$1" name="$2" ca="$3" san="$4"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/$name.key" \
		-out "$d/$name.csr" -subj "/CN=$name" 2>/dev/null
	printf '%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" >"$d/$name.ext"
	openssl x509 -req -in "$d/$name.csr" -CA "$d/$ca.pem" -CAkey "$d/$ca.key" -CAcreateserial \
		-days 2 -out "$d/$name.pem" -extfile "$d/$name.ext" 2>/dev/null
}

# cred_npm_install: the SDKs are there (scripts/install-deps npm, which
# `make check` runs first, installs them from tests/npm/sdk's lock file).
cred_npm_install() {
	[ -d "$CRED_NPM/node_modules/openai" ] && [ -d "$CRED_NPM/node_modules/@anthropic-ai/sdk" ]
}

cred_setup() {
	local f i
	if [ ! -x "$AGENTBOX" ]; then
		echo "$AGENTBOX is not an executable (make all)" >&2
		return 1
	fi
	for f in node openssl curl jq unshare nsenter; do
		command -v "$f" >/dev/null || { echo "$f is missing (scripts/install-deps)" >&2; return 1; }
	done
	BG_PIDS=()
	T="$BATS_TEST_TMPDIR"
	CERTS="$BATS_FILE_TMPDIR/certs"
	[ -f "$CERTS/srv.pem" ] || cred_make_certs "$CERTS"
	mkdir -p "$T/cfg"
	CONFIG="$T/cfg/credential.json"
	unshare --net sleep 600 </dev/null >/dev/null 2>&1 &
	NS_PID=$!
	BG_PIDS+=("$NS_PID")
	# Never act on the host's namespace: wait until the holder is in a new one.
	for ((i = 0; i < 50; i++)); do
		[ "$(readlink "/proc/$NS_PID/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.05
	done
	if [ "$(readlink "/proc/$NS_PID/ns/net")" = "$(readlink /proc/self/ns/net)" ]; then
		echo "could not create a test network namespace" >&2
		return 1
	fi
	inns ip link set lo up
}

cred_teardown() {
	local p d ns
	# Everything still running in the test's namespace was started by the
	# test: end it (a process that forked away from BG_PIDS included).
	ns="$(readlink "/proc/$NS_PID/ns/net" 2>/dev/null || true)"
	if [ -n "$ns" ] && [ "$ns" != "$(readlink /proc/self/ns/net)" ]; then
		for d in /proc/[0-9]*; do
			if [ "$(readlink "$d/ns/net" 2>/dev/null)" = "$ns" ] && [ "${d#/proc/}" != "$NS_PID" ]; then
				kill -KILL "${d#/proc/}" 2>/dev/null || true
			fi
		done
	fi
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# inns CMD...: run CMD in the test's network namespace.
inns() {
	nsenter -t "$NS_PID" -n -- "$@"
}

# inns_bg CMD...: the same in the background; nsenter execs CMD, so BG_LAST
# (also appended to BG_PIDS) is CMD's own pid and killing it ends CMD.
inns_bg() {
	nsenter -t "$NS_PID" -n -- "$@" &
	BG_LAST=$!
	BG_PIDS+=("$BG_LAST")
}

# wait_for FILE REGEX [TENTHS]: until FILE has a line matching REGEX (5 s).
wait_for() {
	local file="$1" re="$2" n="${3:-50}" i
	for ((i = 0; i < n; i++)); do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for /$re/ in $file; it holds:" >&2
	cat "$file" >&2 2>/dev/null || true
	return 1
}

# wait_count FILE REGEX N: until FILE has N lines matching REGEX (5 s).
wait_count() {
	local file="$1" re="$2" want="$3" i
	for ((i = 0; i < 50; i++)); do
		[ "$(grep -Ec -- "$re" "$file" 2>/dev/null)" -ge "$want" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $want lines /$re/ in $file; it holds:" >&2
	cat "$file" >&2 2>/dev/null || true
	return 1
}

# start_upstream NAME [CERT] [ARGS...]: the fake upstream in the namespace
# with certificate CERT (default srv; "plain" for HTTP); sets NAME_PORT;
# its request log is $T/NAME.log.
start_upstream() {
	local name="$1" cert="${2:-srv}"
	shift
	if [ $# -gt 0 ]; then shift; fi
	local tls=(--cert "$CERTS/$cert.pem" --key "$CERTS/$cert.key")
	[ "$cert" = plain ] && tls=(--plain)
	: >"$T/$name.log"
	inns_bg node "$CRED_HELPERS/upstream.js" "${tls[@]}" --log "$T/$name.log" \
		--release "$T/$name.release" "$@" >"$T/$name.out" 2>&1
	wait_for "$T/$name.out" '^[0-9]+$'
	printf -v "${name}_PORT" '%s' "$(head -1 "$T/$name.out")"
}

# write_config JSON: replace the configuration file atomically (rename),
# as an operator's tooling would.
write_config() {
	printf '%s\n' "$1" >"$CONFIG.tmp"
	mv "$CONFIG.tmp" "$CONFIG"
}

# default_config PORT: three upstreams on the fake upstream at PORT.
default_config() {
	cat <<EOF
{"threadToken": "$TOKEN",
 "upstreams": [
  {"name": "anthropic", "baseUrl": "https://127.0.0.1:$1",
   "inject": [{"header": "x-api-key", "value": "$SECRET_ANT"}],
   "stripRequestHeaders": ["x-strip-me", "Anthropic-Beta"]},
  {"name": "openai", "baseUrl": "https://localhost:$1/v1",
   "inject": [{"header": "authorization", "value": "Bearer $SECRET_OAI"}]},
  {"name": "sub.path_1-x", "baseUrl": "https://127.0.0.1:$1/deep/base/"}
 ]}
EOF
}

# start_cp [VAR=VALUE...]: the credential proxy in the namespace on
# 127.0.0.1:0 with $CONFIG, trusting the test CA through
# NODE_EXTRA_CA_CERTS, with extra environment; sets CP_PORT and CP_PID,
# stderr in $T/cp.err.
start_cp() {
	: >"$T/cp.err"
	inns_bg env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy \
		-u NO_PROXY -u no_proxy -u SSL_CERT_FILE NODE_EXTRA_CA_CERTS="$CERTS/ca.pem" "$@" \
		"$AGENTBOX" credential-proxy serve --listen 127.0.0.1:0 --config "$CONFIG" \
		2>"$T/cp.err" </dev/null
	CP_PID=$BG_LAST
	wait_for "$T/cp.err" '^agentbox credential-proxy listening on 127\.0\.0\.1:[0-9]+$'
	CP_PORT="$(sed -n 's/.* listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/cp.err")"
	CP="http://127.0.0.1:$CP_PORT"
}

# ccurl ARGS: curl in the namespace, bounded in time.
ccurl() {
	inns curl -sS --max-time 20 "$@"
}

# auth: the header that carries the thread token.
auth() {
	printf 'Authorization: Bearer %s' "$TOKEN"
}

# log_requests NAME: the upstream's request records (not connections).
log_requests() {
	grep -v '"event"' "$T/$1.log" || true
}

# received_header NAME HEADER: values of HEADER (any case) in the last
# request the upstream NAME received, one per line.
received_header() {
	log_requests "$1" | tail -n 1 |
		jq -r --arg h "$2" '.headers as $r | range(0; $r | length; 2) | select($r[.] | ascii_downcase == ($h | ascii_downcase)) | $r[. + 1]'
}
