# A private Docker daemon for the tests (Debian's docker.io), reusable by
# any suite:
#
#   setup_file()    { load dockerd.bash; start_dockerd || true; }
#   setup()         { load dockerd.bash; require_dockerd; ... }
#   teardown_file() { load dockerd.bash; stop_dockerd; }
#
# (or `start_dockerd || skip "docker: $DOCKERD_WHY"` in setup_file and
# `dockerd_env || skip ...` in setup).  Everything it sets is exported, so
# the tests of the file see it.
#
# start_dockerd runs its own containerd and dockerd with every path in one
# temporary directory (data root, exec root, pid files, sockets, config,
# the legacy key.json), no bridge, no iptables/ip6tables rules, no
# ip_forward or masquerading change, containers under a cgroup parent of
# its own; it exports DOCKER_HOST (which agentbox honours) and
# AGENTBOX_DOCKER / DOCKER (the client to use).  stop_dockerd ends both
# daemons by pid, waits for them, and removes the directory and the few
# host paths they create that no flag moves (/run/docker/plugins,
# /run/containerd/s, the cgroup parent) when they did not exist before and
# are empty.
#
# Client: the docker on PATH (what a user of this machine runs: Debian's
# 20.10, or a newer one such as 28.x in /usr/local/bin, which negotiates
# the API version down to the daemon's by itself) unless DOCKER is set.
# The tests read its output only through --format templates, -q and exit
# codes, which both clients keep alike.
#
# When the daemon cannot start (no dockerd installed, or it fails here),
# DOCKERD_WHY says why, with the end of its log; require_dockerd then skips
# the test printing that reason, or fails it when AGENTBOX_REQUIRE_DOCKER=1
# (CI on a machine known to run Docker).

: "${DOCKERD_START_TIMEOUT:=30}"

# Host paths the daemons create outside their directory (hard-coded in
# containerd 1.6 shims and dockerd's plugin discovery).
_DOCKERD_HOST_DIRS=(/run/docker/plugins /run/docker /run/containerd/s /run/containerd)

_dockerd_log_tail() {
	tail -n 5 "$1" 2>/dev/null | tr '\n' ' ' | cut -c1-600
}

_dockerd_pick_client() {
	if [ -n "${DOCKER:-}" ]; then
		echo "$DOCKER"
	else
		command -v docker || true
	fi
}

_containerd_config() {
	local d="$1"
	cat <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
# No plugin that would load kernel modules (aufs), scan other filesystems,
# serve CRI or write to /opt/containerd.
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
oom_score = 0

[grpc]
  address = "$d/containerd.sock"

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "warn"

[metrics]
  address = ""
EOF
}

# _dockerd_wait SECONDS PID CMD...: poll CMD every 0.1 s while PID lives; 1 when it never succeeded.
_dockerd_wait() {
	local n=$(($1 * 10)) pid="$2" i
	shift 2
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# The ones of those that do not exist yet (space-separated, exported).
_dockerd_note_host_dirs() {
	local p
	export DOCKERD_NEW_HOST_DIRS=""
	for p in "${_DOCKERD_HOST_DIRS[@]}"; do
		[ -e "$p" ] || DOCKERD_NEW_HOST_DIRS="$DOCKERD_NEW_HOST_DIRS $p"
	done
}

start_dockerd() {
	local d client
	export DOCKERD_WHY="" DOCKERD_PID="" CONTAINERD_PID="" DOCKERD_DIR="" DOCKERD_CGROUP_PARENT=""
	if ! command -v dockerd >/dev/null || ! command -v containerd >/dev/null \
		|| ! command -v runc >/dev/null; then
		DOCKERD_WHY="dockerd, containerd or runc not installed (Debian docker.io; scripts/install-deps test)"
		return 1
	fi
	client="$(_dockerd_pick_client)"
	if [ -z "$client" ]; then
		DOCKERD_WHY="no docker client installed"
		return 1
	fi
	# Short: containerd and dockerd put unix sockets below it (108-byte limit).
	d="$(mktemp -d /tmp/abdk.XXXXXX)"
	DOCKERD_DIR="$d"
	DOCKERD_CGROUP_PARENT="/abtest-dockerd-${d##*.}"
	mkdir -p "$d/data" "$d/exec" "$d/containerd"
	_containerd_config "$d" >"$d/containerd.toml"
	# DOCKERD_EXTRA_CONFIG: more top-level members, e.g. `, "runtimes": {...}`.
	printf '{"deprecated-key-path": "%s/key.json"%s}\n' "$d" "${DOCKERD_EXTRA_CONFIG:-}" >"$d/daemon.json"
	_dockerd_note_host_dirs
	setsid containerd --config "$d/containerd.toml" >"$d/containerd.log" 2>&1 </dev/null &
	CONTAINERD_PID=$!
	if ! _dockerd_wait 10 "$CONTAINERD_PID" test -S "$d/containerd.sock"; then
		DOCKERD_WHY="containerd did not start: $(_dockerd_log_tail "$d/containerd.log")"
		return 1
	fi
	setsid dockerd --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/dockerd.pid" \
		-H "unix://$d/docker.sock" --containerd "$d/containerd.sock" \
		--config-file "$d/daemon.json" --bridge=none --iptables=false --ip6tables=false \
		--ip-forward=false --ip-masq=false --userland-proxy=false \
		--cgroup-parent "$DOCKERD_CGROUP_PARENT" --log-level warn \
		>"$d/dockerd.log" 2>&1 </dev/null &
	DOCKERD_PID=$!
	export DOCKER_HOST="unix://$d/docker.sock" DOCKER="$client" AGENTBOX_DOCKER="$client"
	if ! _dockerd_wait "$DOCKERD_START_TIMEOUT" "$DOCKERD_PID" "$client" version; then
		DOCKERD_WHY="dockerd did not start: $(_dockerd_log_tail "$d/dockerd.log")"
		return 1
	fi
	return 0
}

# dockerd_env: 0 when the daemon start_dockerd started is up (DOCKER_HOST,
# DOCKER and AGENTBOX_DOCKER point at it); else 1 with DOCKERD_WHY.
dockerd_env() {
	if [ -n "${DOCKERD_WHY:-}" ]; then
		return 1
	fi
	if [ -z "${DOCKERD_PID:-}" ] || ! kill -0 "$DOCKERD_PID" 2>/dev/null; then
		export DOCKERD_WHY="the test dockerd is not running (start_dockerd not called, or it died)"
		return 1
	fi
	return 0
}

# require_dockerd: in setup(); skips the test saying why the daemon could
# not run, or fails it when AGENTBOX_REQUIRE_DOCKER=1.
require_dockerd() {
	dockerd_env && return 0
	if [ "${AGENTBOX_REQUIRE_DOCKER:-0}" = 1 ]; then
		echo "Docker required (AGENTBOX_REQUIRE_DOCKER=1) but: $DOCKERD_WHY" >&2
		return 1
	fi
	skip "Docker daemon cannot run here: $DOCKERD_WHY"
}

_dockerd_stop_pid() {
	local pid="$1" i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && break # ended, not yet reaped
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# Mounts left below the directory (a daemon killed mid-way): lazily detached.
_dockerd_unmount_below() {
	local m
	awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r \
		| while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done
}

stop_dockerd() {
	local d="${DOCKERD_DIR:-}" p dir
	if [ -n "${DOCKERD_PID:-}" ] && [ -n "${DOCKER:-}" ]; then
		# Containers first: dockerd's shutdown only stops them gracefully.
		"$DOCKER" ps -aq 2>/dev/null | xargs -r "$DOCKER" rm -f >/dev/null 2>&1 || true
	fi
	_dockerd_stop_pid "${DOCKERD_PID:-}"
	_dockerd_stop_pid "${CONTAINERD_PID:-}"
	DOCKERD_PID=""
	CONTAINERD_PID=""
	if [[ "$d" =~ ^/tmp/abdk\.[A-Za-z0-9]+$ ]]; then
		_dockerd_unmount_below "$d"
		rm -rf -- "$d"
	fi
	for dir in /sys/fs/cgroup/*/"${DOCKERD_CGROUP_PARENT#/}" /sys/fs/cgroup/"${DOCKERD_CGROUP_PARENT#/}"; do
		[ -n "${DOCKERD_CGROUP_PARENT:-}" ] && [ -d "$dir" ] && rmdir "$dir" 2>/dev/null
	done
	for p in ${DOCKERD_NEW_HOST_DIRS:-}; do
		rmdir "$p" 2>/dev/null || true
	done
	DOCKERD_DIR=""
	true
}
