#!/usr/bin/env bats
# agentbox run --credential NAME=FILE: the sandbox reaches an upstream
# through the credential proxy on 127.0.0.1:8288 inside (served on the
# host, so it works with --network none), sees only base URLs and a
# per-sandbox token, and the real secret is nowhere it can read: not in
# its environment, files or any process's readable memory.  Each test runs
# agentbox and a fake TLS upstream (credential/upstream.js, test CA) in a
# network namespace holding only lo (credential/common.bash).

load credential/common

: "${BATS_TEST_TIMEOUT:=120}"

setup() {
	cred_setup
}

teardown() {
	cred_teardown
}

# abrun ARGS...: agentbox run in the test's namespace, trusting the test CA,
# with no outbound proxy of the host's, bounded in time.
abrun() {
	inns env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy \
		-u NO_PROXY -u no_proxy -u SSL_CERT_FILE NODE_EXTRA_CA_CERTS="$CERTS/ca.pem" \
		timeout 90 "$AGENTBOX" run "$@"
}

# entry FILE BASEURL HEADER VALUE: one upstream entry.
entry() {
	printf '{"baseUrl": "%s", "inject": [{"header": "%s", "value": "%s"}], "stripRequestHeaders": ["x-strip-me"]}\n' \
		"$2" "$3" "$4" >"$1"
}

@test "curl inside reaches the upstream with the secret injected, never the token" {
	start_upstream up
	entry "$T/openai.json" "https://127.0.0.1:$up_PORT/v1" authorization "Bearer $SECRET_OAI"
	run --separate-stderr abrun --no-workspace --credential "openai=$T/openai.json" -- sh -c '
		echo "$AGENTBOX_CREDENTIAL_TOKEN"
		curl -sS --max-time 20 -H "Authorization: Bearer $AGENTBOX_CREDENTIAL_TOKEN" \
			-H "x-strip-me: 1" "$OPENAI_BASE_URL/echo?q=1"'
	echo "status $status; stdout: $output; stderr: $stderr"
	[ "$status" -eq 0 ]
	token="${lines[0]}"
	[[ "$token" =~ ^[0-9a-f]{64}$ ]]
	[ "$(printf '%s\n' "${lines[1]}" | jq -r .url)" = "/v1/echo?q=1" ]
	[ "$(received_header up authorization)" = "Bearer $SECRET_OAI" ]
	[ -z "$(received_header up x-strip-me)" ]
	run ! grep -qF -- "$token" "$T/up.log"
	# (the echo answer does hold the injected header: this upstream echoes)
}

@test "a wrong token is refused (401), nothing goes upstream" {
	start_upstream up
	entry "$T/openai.json" "https://127.0.0.1:$up_PORT/v1" authorization "Bearer $SECRET_OAI"
	run --separate-stderr abrun --no-workspace --credential "openai=$T/openai.json" -- \
		curl -sS --max-time 20 -H "Authorization: Bearer not-the-token" -w ' %{http_code}' \
		http://127.0.0.1:8288/openai/echo
	echo "status $status; stdout: $output; stderr: $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "unauthorized
 401" ]
	[ -z "$(log_requests up)" ]
}

@test "base URLs and keys in the environment follow the SDK conventions" {
	entry "$T/o1.json" "https://api.openai.example/v1" authorization "Bearer $SECRET_OAI"
	entry "$T/o2.json" "https://api.openai.example" authorization "Bearer $SECRET_OAI"
	entry "$T/a.json" "https://api.anthropic.example" x-api-key "$SECRET_ANT"
	entry "$T/g.json" "https://git.example/api" authorization "Bearer $SECRET_OAI"
	run --separate-stderr abrun --no-workspace --credential "openai=$T/o1.json" \
		--credential "anthropic=$T/a.json" --credential "my-git.host=$T/g.json" -- env
	echo "$output"
	[ "$status" -eq 0 ]
	token="$(sed -n 's/^AGENTBOX_CREDENTIAL_TOKEN=//p' <<<"$output")"
	[[ "$token" =~ ^[0-9a-f]{64}$ ]]
	grep -qx "OPENAI_BASE_URL=http://127.0.0.1:8288/openai" <<<"$output"
	grep -qx "OPENAI_API_KEY=$token" <<<"$output"
	grep -qx "AGENTBOX_OPENAI_BASE_URL=http://127.0.0.1:8288/openai" <<<"$output"
	grep -qx "ANTHROPIC_BASE_URL=http://127.0.0.1:8288/anthropic" <<<"$output"
	grep -qx "ANTHROPIC_AUTH_TOKEN=$token" <<<"$output"
	grep -qx "AGENTBOX_ANTHROPIC_BASE_URL=http://127.0.0.1:8288/anthropic" <<<"$output"
	grep -qx "AGENTBOX_MY_GIT_HOST_BASE_URL=http://127.0.0.1:8288/my-git.host" <<<"$output"
	# a baseUrl without a path: the SDK's /v1 goes into the base URL
	run --separate-stderr abrun --no-workspace --credential "openai=$T/o2.json" -- env
	[ "$status" -eq 0 ]
	grep -qx "OPENAI_BASE_URL=http://127.0.0.1:8288/openai/v1" <<<"$output"
	# every sandbox gets a token of its own
	grep -q "^OPENAI_API_KEY=[0-9a-f]\{64\}$" <<<"$output"
	run ! grep -qx "OPENAI_API_KEY=$token" <<<"$output"
}

@test "with --network proxy both doors work: credential proxy and egress proxy" {
	start_upstream up
	entry "$T/openai.json" "https://127.0.0.1:$up_PORT/v1" authorization "Bearer $SECRET_OAI"
	run --separate-stderr abrun --no-workspace --network proxy --allow-host 127.0.0.1 \
		--allow-cidr 127.0.0.1/32 --credential "openai=$T/openai.json" -- sh -c '
		curl -sS --max-time 20 -H "Authorization: Bearer $AGENTBOX_CREDENTIAL_TOKEN" "$OPENAI_BASE_URL/echo"
		echo
		curl -sS --max-time 20 -o /dev/null -w "%{http_code}\n" -x http://127.0.0.1:3128 \
			http://198.51.100.1/ || true'
	echo "status $status; stdout: $output; stderr: $stderr"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[0]}" | jq -r .url)" = "/v1/echo" ]
	[ "$(received_header up authorization)" = "Bearer $SECRET_OAI" ]
	# the egress proxy answered (a policy refusal), so port 3128 is routed to it
	[[ "${lines[1]}" =~ ^[0-9]{3}$ ]] && [ "${lines[1]}" != 000 ]
}

@test "a bad --credential is one clear line, exit 125, never the secret" {
	printf '{"baseUrl": "https://x.example", "inject": [{"header": "authorization", "value": "%s\\n"}]}' \
		"$SECRET_OAI" >"$T/bad-value.json"
	printf '{"baseUrl": "https://x.example", "inject": [{"header": "a", "value": %s}]}' \
		"$SECRET_OAI" >"$T/bad-json.json"
	entry "$T/http.json" "http://x.example" authorization "Bearer $SECRET_OAI"
	entry "$T/ok.json" "https://x.example" authorization "Bearer $SECRET_OAI"
	local a
	for a in "openai=$T/bad-value.json" "openai=$T/bad-json.json" "openai=$T/http.json" \
		"openai=$T/missing.json" "openai" "=$T/ok.json" "bad/name=$T/ok.json" "-x=$T/ok.json"; do
		run --separate-stderr abrun --no-workspace --credential "$a" -- touch /tmp/ran
		echo "[$a] -> $status: $stderr"
		[ "$status" -eq 125 ]
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ "$stderr" == *--credential* ]]
		[[ "$stderr" != *"$SECRET_OAI"* ]]
		[ -z "$output" ]
	done
	run --separate-stderr abrun --no-workspace --credential "a=$T/ok.json" --credential "a=$T/ok.json" -- true
	echo "$stderr"
	[ "$status" -eq 125 ]
	[ "$stderr" = "agentbox: --credential a=$T/ok.json: a given twice" ]
}

@test "the real secret is nowhere in the sandbox: env, files, process memory" {
	mkdir -p "$T/ws"
	cp "$CRED_HELPERS/sandbox-scan.sh" "$CRED_HELPERS/sandbox-scan-mem.pl" "$T/ws/"
	# outside the workspace, as a user would keep it
	entry "$T/openai.json" "https://127.0.0.1:1/v1" authorization "Bearer $SECRET_OAI"
	entry "$T/anthropic.json" "https://127.0.0.1:1" x-api-key "$SECRET_ANT"
	local name secret
	for name in openai anthropic; do
		secret="$SECRET_OAI"
		[ "$name" = anthropic ] && secret="$SECRET_ANT"
		run --separate-stderr abrun --workspace "$T/ws" -e "REV=$(printf '%s' "$secret" | rev)" \
			-e "START=$(date +%s)" --credential "openai=$T/openai.json" \
			--credential "anthropic=$T/anthropic.json" -- /workspace/sandbox-scan.sh
		echo "[$name] status $status; stdout:"
		echo "$output"
		echo "stderr: $stderr"
		[ "$status" -eq 0 ]
		[ "${#lines[@]}" -eq 5 ]
		grep -qx "env secret=0 token=1" <<<"$output"
		grep -qx "files secret=0 token=1" <<<"$output"
		grep -qx "usr-changed secret=0 token=0 files=[0-9]*" <<<"$output"
		grep -qx "proc secret=0 token=1" <<<"$output"
		grep -qx "mem secret=0 token=1 pids=[1-9][0-9]* bytes=[1-9][0-9]* unreadable=[0-9]*" <<<"$output"
	done
}

@test "the secret search finds a secret that does enter the sandbox (control)" {
	mkdir -p "$T/ws"
	cp "$CRED_HELPERS/sandbox-scan.sh" "$CRED_HELPERS/sandbox-scan-mem.pl" "$T/ws/"
	entry "$T/ws/openai.json" "https://127.0.0.1:1/v1" authorization "Bearer $SECRET_OAI"
	run --separate-stderr abrun --workspace "$T/ws" -e "REV=$(printf '%s' "$SECRET_OAI" | rev)" \
		-e "START=$(date +%s)" --credential "openai=$T/ws/openai.json" -- \
		sh -c 'export LEAKED="$(cat /workspace/openai.json)"; exec /workspace/sandbox-scan.sh'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "env secret=1 token=1" <<<"$output"
	grep -qx "files secret=1 token=1" <<<"$output"
	grep -qx "proc secret=1 token=1" <<<"$output"
	grep -q "^mem secret=1 token=1 " <<<"$output"
}

@test "--credentials FILE takes every upstream of a credential-proxy config; bad files are refused" {
	printf '{"threadToken": "not-used", "upstreams": [
	  {"name": "openai", "baseUrl": "https://api.openai.example/v1", "inject": [{"header": "authorization", "value": "Bearer %s"}]},
	  {"name": "anthropic", "baseUrl": "https://api.anthropic.example", "inject": [{"header": "x-api-key", "value": "%s"}]}]}\n' \
		"$SECRET_OAI" "$SECRET_ANT" >"$T/all.json"
	run --separate-stderr abrun --no-workspace --credentials "$T/all.json" -- env
	[ "$status" -eq 0 ]
	grep -qx "OPENAI_BASE_URL=http://127.0.0.1:8288/openai" <<<"$output"
	grep -qx "ANTHROPIC_BASE_URL=http://127.0.0.1:8288/anthropic" <<<"$output"
	run ! grep -qF -- "$SECRET_OAI" <<<"$output"
	run ! grep -qF -- "not-used" <<<"$output"
	# a name given twice (file and flag), and an entry without a name
	run --separate-stderr abrun --credentials "$T/all.json" --credential "openai=$T/all.json" -- true
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"openai given twice"* ]]
	printf '{"upstreams": [{"baseUrl": "https://x.example", "inject": [{"header": "a", "value": "%s"}]}]}\n' "$SECRET_OAI" >"$T/bad.json"
	run --separate-stderr abrun --credentials "$T/bad.json" -- true
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"has no name"* ]]
	[[ "$stderr" != *"$SECRET_OAI"* ]]
}
