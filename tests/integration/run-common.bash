# Shared helpers for the `agentbox run` integration tests (run-*.bats).
#
# The binaries come from the Makefile's integration target:
#   AGENTBOX  path to agentbox        (default build/agentbox)
#   HELPERS   dir holding probe       (default build/tests)
# Every test gets its own workspace under BATS_TEST_TMPDIR and a unique
# marker string; teardown ends only the processes the test started, by pid.

bats_require_minimum_version 1.5.0

# No test may hang the suite: bats ends any test after this long, and every
# agentbox call through abrun is bounded on its own.
: "${BATS_TEST_TIMEOUT:=60}"
AB_CALL_TIMEOUT="${AB_CALL_TIMEOUT:-15}"

ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
: "${HELPERS:=$ROOT_DIR/build/tests}"
AGENT_BIN="$(dirname "$AGENTBOX")/agentbox-agent"
PROBE="$HELPERS/probe"

# test_tmpdir: this test's own TMPDIR.  agentbox keeps every temporary
# file it makes on the host under $TMPDIR (or $XDG_RUNTIME_DIR for run's
# sockets, unset here), so what a test's sandboxes leave behind is judged
# there, not in a /tmp that every program on the host shares.
test_tmpdir() {
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	unset XDG_RUNTIME_DIR
	mkdir -p "$TMPDIR"
}

ab_setup() {
	# Set the marker and the cleanup lists first, before anything can fail:
	# teardown runs even when setup fails.
	MARK="abtest-$$-${BATS_TEST_NUMBER}-$RANDOM$RANDOM"
	BG_PIDS=()
	HOST_FILES=()
	HOST_DIRS=()
	test_tmpdir
	if [ ! -x "$AGENTBOX" ]; then
		echo "AGENTBOX=$AGENTBOX is not an executable (run make first)" >&2
		return 1
	fi
	if [ ! -x "$PROBE" ]; then
		echo "probe not found at $PROBE (make BUILD=... \$BUILD/tests/probe)" >&2
		return 1
	fi
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	cp "$PROBE" "$WS/probe"
	# CONFORMANCE_V2=1: `agentbox run` over protocol v2 even on native.
	if [ "${CONFORMANCE_V2:-0}" = 1 ]; then
		export AGENTBOX_RUN_SERVICE=1
	fi
}

# True when MARK is this suite's unique marker and nothing else: an empty
# or short pattern would make pgrep -f match every process on the host.
mark_ok() {
	[[ "${MARK:-}" =~ ^abtest-[0-9]+-[0-9]+-[0-9]{2,}$ ]]
}

ab_teardown() {
	local p
	for p in "${BG_PIDS[@]}"; do
		[[ "$p" =~ ^[0-9]+$ ]] || continue
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	# Anything still carrying this test's unique marker was started by it.
	for p in $(marker_pids); do
		kill -KILL "$p" 2>/dev/null || true
	done
	# Only what the tests create: marker files and mktemp dirs under /tmp.
	for p in "${HOST_FILES[@]}"; do
		case "$p" in /*/abtest-*) rm -f -- "$p" ;; esac
	done
	for p in "${HOST_DIRS[@]}"; do
		[[ "$p" =~ ^/tmp/abtest-open\.[A-Za-z0-9]+$ ]] && rm -rf -- "$p"
	done
	true
}

# pids_bound N [BACKEND]: the most processes a sandbox of --pids N may
# reach, plus one (BACKEND: AB_BACKEND's, native by default).  N everywhere but gVisor: runsc 2022-12's pids controller lets a
# fork loop past pids.max on a busy host (61-62 of 64 when idle; 67, 76
# and 87 seen under load), and what bounds the overshoot there is the
# host cgroup's pids backstop around the sentry (about 10 host tasks per
# sandbox process, AB_OCI_HOST_TASKS_* in backend/oci-bundle.h): about
# 110 processes for --pids 64, so 2N.  docs/security.md lists it.
pids_bound() {
	if [ "${2:-${AB_BACKEND:-native}}" = gvisor ]; then
		echo $(($1 * 2))
	else
		echo "$1"
	fi
}

# AB_BACKEND (default native) is the backend of every sandbox these tests
# make (`agentbox run` and the daemon's, through AGENTBOX_BACKEND): the
# conformance target runs the suites once per backend.  Without it, auto
# would pick the strongest backend that works here (gVisor when runsc works).
export AGENTBOX_BACKEND="${AB_BACKEND:-native}"
AB_BACKEND_ARGS=(--backend "$AGENTBOX_BACKEND")

# agentbox run with this test's workspace and stdin from /dev/null (so the
# outcome does not depend on whether bats itself runs on a terminal).
abrun() {
	timeout -k 2 "$AB_CALL_TIMEOUT" "$AGENTBOX" run "${AB_BACKEND_ARGS[@]}" --workspace "$WS" "$@" </dev/null
}

# Same, keeping the caller's stdin.
abrun_stdin() {
	timeout -k 2 "$AB_CALL_TIMEOUT" "$AGENTBOX" run "${AB_BACKEND_ARGS[@]}" --workspace "$WS" "$@"
}

# native_only REASON: this test checks how the native backend builds its
# wall (host uids, cgroup paths, the runtime binary's inode...), not a
# behaviour every backend shares; on another backend it is skipped, and
# says why.
native_only() {
	if [ -n "${AB_BACKEND:-}" ] && [ "$AB_BACKEND" != native ]; then
		skip "native backend only on $AB_BACKEND: $1"
	fi
}

# open_tmpdir: a fresh directory under /tmp with mode 0755 all the way up
# (BATS_TEST_TMPDIR sits below a 0700 directory); removed by teardown.
open_tmpdir() {
	local dir
	dir="$(mktemp -d /tmp/abtest-open.XXXXXX)"
	chmod 0755 "$dir"
	echo "$dir"
}

# wait_for FILE REGEX [TENTHS]: poll until FILE has a line matching REGEX,
# at most TENTHS tenths of a second (default 50 = 5 s).
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

# bounded_wait PID [SECONDS]: wait for our background child PID, at most
# SECONDS (default 10); then kill it and fail.  Sets WAIT_RC.
bounded_wait() {
	local pid="$1" n=$((${2:-10} * 10)) i
	WAIT_RC=0
	for ((i = 0; i < n; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "pid $pid still running after ${2:-10} s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		WAIT_RC=255
		return 1
	fi
	wait "$pid" || WAIT_RC=$?
	return 0
}

# wait_gone CMD... : poll (at most 3 s) until CMD fails.
wait_gone() {
	local i
	for ((i = 0; i < 30; i++)); do
		"$@" || return 0
		sleep 0.1
	done
	return 1
}

# Pids of processes whose command line contains this test's marker.  While
# agentbox runs, its own argv holds the marker too.
marker_pids() {
	mark_ok || return 0
	pgrep -f -- "$MARK" 2>/dev/null | grep -vx -e "$$" -e "${BASHPID:-$$}" || true
}

# The marker processes that are the probe itself (comm "probe").
marker_probe_pids() {
	local p
	for p in $(marker_pids); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = probe ] && echo "$p"
	done
	true
}

# descendants PID: every live descendant of PID, one per line.
descendants() {
	local frontier="$1" next p all="" depth
	for ((depth = 0; depth < 16 && ${#frontier} > 0; depth++)); do
		next=""
		for p in $frontier; do
			next="$next $(pgrep -P "$p" 2>/dev/null | tr '\n' ' ')"
		done
		all="$all $next"
		frontier="$(echo $next)"
	done
	echo $all | tr ' ' '\n' | grep . || true
}

# "PID:STARTTIME" so a reused pid is not mistaken for the original.
pid_ident() {
	local st
	st="$(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null)" || return 1
	echo "$1:$st"
}

ident_alive() {
	[ -n "$1" ] || return 1
	local pid="${1%%:*}"
	[ "$(pid_ident "$pid" 2>/dev/null)" = "$1" ]
}

# The cgroup directories (on this host's cgroup mounts) holding PID.
cgroup_dirs_of() {
	local line ctrls path mnt
	while IFS= read -r line; do
		ctrls="$(echo "$line" | cut -d: -f2)"
		path="$(echo "$line" | cut -d: -f3-)"
		if [ -z "$ctrls" ]; then
			mnt="$(cgroup2_mount)"
		else
			mnt="$(cgroup1_mount "$ctrls")"
		fi
		[ -n "$mnt" ] && echo "$mnt$path"
	done <"/proc/$1/cgroup"
}

cgroup2_mount() {
	awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo
}

# Mount point of the v1 hierarchy with exactly these controllers.
cgroup1_mount() {
	local want="$1"
	awk -v want="$want" '$9 == "cgroup" {
		n = split($NF, opts, ",")
		got = ""
		for (i = 1; i <= n; i++) {
			o = opts[i]
			if (o ~ /^(rw|ro|relatime|noatime|nosuid|nodev|noexec|clone_children|nsdelegate|xattr)$/ || o ~ /^release_agent=/)
				continue
			got = got == "" ? o : got "," o
		}
		if (got == want) { print $5; exit }
	}' /proc/self/mountinfo
}

# True when PID or one of its ancestors runs with this test's TMPDIR in
# its environment (test_tmpdir): a sandbox's monitor, keeper and init are
# forks of the agentbox this test started (or of its daemon, which it
# started), so every sandbox process of this test descends from one.
of_this_test() {
	local p="$1" i
	[ -n "${TMPDIR:-}" ] || return 1
	for ((i = 0; i < 32 && p > 1; i++)); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "TMPDIR=$TMPDIR" && return 0
		p="$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2)"
		[ -n "$p" ] || return 1
	done
	return 1
}

# True when cgroup directory DIR is a sandbox of this test's: one of its
# processes (at any depth) is of_this_test, or it holds none at all.  An
# empty group cannot say whose it is; another suite's is empty only for
# the moment it is made or removed, which assert_nothing_left's retries
# outlast, so an empty one that stays is a leak of ours.
cgroup_of_this_test() {
	local p any=0
	for p in $(find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null); do
		any=1
		of_this_test "$p" && return 0
	done
	[ "$any" = 0 ]
}

# Every agentbox-* cgroup directory below our own cgroups that belongs to
# this test (cgroup_of_this_test), sorted.  Other sessions on this host may
# run sandboxes at the same time: a sandbox whose group sits outside our
# own cgroup in any hierarchy (here: memory, where each session has its
# own) is theirs, and is left out in every hierarchy; other suites of this
# run (two run side by side) are told apart by their processes.
our_agentbox_cgroups() {
	local ours mine="" foreign="" d mnt
	for ours in $(cgroup_dirs_of self); do
		[ -d "$ours" ] || continue
		mnt="$(stat -c %m "$ours" 2>/dev/null)" || continue
		for d in $(find "$mnt" -maxdepth 6 -type d -name 'agentbox-*' -prune 2>/dev/null); do
			case "$d/" in
			"${ours%/}/"*) mine="$mine $d" ;;
			*) foreign="$foreign $(basename "$d")" ;;
			esac
		done
	done
	for d in $mine; do
		case " $foreign " in *" $(basename "$d") "*) continue ;; esac
		cgroup_of_this_test "$d" && echo "$d"
	done | sort -u
}

# Every file agentbox made in this test's TMPDIR (test_tmpdir), at any
# depth.  That agentbox puts nothing in the shared temporary places
# instead is checked on its own, in a mount namespace whose /tmp, /var/tmp
# and /dev/shm are empty (run-cleanup.bats).
agentbox_temp_files() {
	[ -n "${TMPDIR:-}" ] && [ -d "$TMPDIR" ] || return 0
	find "$TMPDIR" -mindepth 1 2>/dev/null | sort
}

# Mounts in this mount namespace at or below this bats run's own
# directories (workspaces, state and temporary dirs, a test dockerd's
# roots): where a sandbox of ours could leave one.  Mounts elsewhere are
# other programs' (a dockerd of a parallel suite, the host's own).
our_mounts() {
	local root="${BATS_RUN_TMPDIR:-$BATS_TEST_TMPDIR}"
	cut -d' ' -f5,10 /proc/self/mountinfo | awk -v r="$root" 'index($1, r) == 1' | sort
}

# A snapshot of what a sandbox of this test could leave on the host;
# compare two of them with diff.  A failure names what appeared.
host_snapshot() {
	echo "# mounts"
	our_mounts
	echo "# cgroups"
	our_agentbox_cgroups
	echo "# temp"
	agentbox_temp_files
}

# Compare the snapshot in $1 with now; print what is new and fail if
# anything is.  Only additions count: something of another run that ended
# meanwhile is not ours to judge.  Retries for at most 3 s to let a killed
# sandbox finish its teardown.
assert_nothing_left() {
	local before="$1" i
	for ((i = 0; i < 30; i++)); do
		if [ -z "$(comm -13 <(sort "$before") <(host_snapshot | sort))" ]; then
			return 0
		fi
		sleep 0.1
	done
	echo "left behind on the host:" >&2
	comm -13 <(sort "$before") <(host_snapshot | sort) >&2
	return 1
}

# in_pty SHELL-COMMAND: run it on a fresh pty (script(1)), bounded in time.
# script's stdin is a FIFO it holds open for writing itself, so it never
# sees data nor EOF: at EOF script would "type" the terminal's VEOF
# character, which is NUL once agentbox has made the terminal raw, and that
# byte would be echoed into the output.
in_pty() {
	local fifo="$BATS_TEST_TMPDIR/pty-stdin"
	[ -p "$fifo" ] || mkfifo "$fifo"
	timeout -k 2 "$AB_CALL_TIMEOUT" script -qec "$1" /dev/null <>"$fifo"
}

# Strip the carriage returns a pty adds.
crlf() {
	tr -d '\r'
}

# json_get FILE JQ-EXPR
json_get() {
	jq -c "$2" "$1"
}

# ---- bounded waits (tests audit) ----

# wait_until TENTHS CMD...: poll CMD every 0.1 s until it succeeds, at most
# TENTHS tenths of a second; 1 (saying what it waited for) when it never
# did.  For a test that waits on an event: a pid gone, a file there.
wait_until() {
	local n="$1" i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "waited $((n / 10)) s in vain for: $*" >&2
	return 1
}

# pid_gone PID: PID no longer exists (reaped) or is a zombie.
pid_gone() {
	[ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}
