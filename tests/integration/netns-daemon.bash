# A daemon in the test's network namespace (credential/common.bash makes it:
# only lo), trusting the test CA, with no outbound proxy of the host's.
# Used by daemon-credential.bats, daemon-egress-stream.bats and
# exec-server-http.bats.
#
#   D      the daemon's directory (its socket and state under it)
#   SOCK   its socket, STATE its state directory

load credential/common

# netns_daemon_start [STREAM]: agentbox serve (STREAM=1 forces the egress
# stream path); waits (10 s) for its socket.
netns_daemon_start() {
	nsenter -t "$NS_PID" -n -- env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy \
		-u ALL_PROXY -u all_proxy -u NO_PROXY -u no_proxy -u SSL_CERT_FILE \
		NODE_EXTRA_CA_CERTS="$CERTS/ca.pem" AGENTBOX_EGRESS_STREAM="${1:-}" setsid "$AGENTBOX" serve \
		--socket "$SOCK" --state-dir "$STATE" >>"$D/daemon.log" 2>&1 </dev/null &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		curl -s --max-time 2 --unix-socket "$SOCK" http://agentbox/v1/health >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "daemon did not start; its log:" >&2
	cat "$D/daemon.log" >&2
	return 1
}

api() {
	local path="$1"
	shift
	curl -sS --max-time 60 --unix-socket "$SOCK" "$@" "http://agentbox$path"
}

# netns_daemon_teardown: its sandboxes removed, the daemon ended, then
# cred_teardown.
netns_daemon_teardown() {
	local id
	if [ -n "${DAEMON_PID:-}" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		for id in $(api /v1/sandboxes 2>/dev/null | jq -r '.sandboxes[].id' 2>/dev/null); do
			api -X DELETE "/v1/sandboxes/$id?force=1" >/dev/null 2>&1 || true
		done
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	cred_teardown
}
