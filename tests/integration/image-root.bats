#!/usr/bin/env bats
# A layered root (spec->root.layers: what `--image` resolves to) on every
# backend: layers in overlay form built here from busybox-static, run
# with `agentbox run --root-layer` on native, gVisor and Docker (the
# private dockerd of dockerd.bash), on the microVM (TCG, one boot) and
# through the daemon's REST "root" key; whiteouts and opaque directories honoured, writes to /usr kept for
# the sandbox's life only, --read-only refusing writes, an image user
# (uid 1000) writing where the image lets it, nothing left on the host.

load run-common.bash

# Layer 1: busybox and its links, /home/u owned by 1000.  Layer 2: a file
# and an opaque directory's old content.  Layer 3: a whiteout (0/0 char
# device) deleting layer 2's /usr/share/gone, /opaque made opaque
# (trusted.overlay.opaque=y) with new content.  All root's, as the store
# unpacks them.
make_layers() {
	local d="$1" a
	mkdir -p "$d/l1/bin" "$d/l1/usr/bin" "$d/l1/etc" "$d/l1/tmp" "$d/l1/home/u" \
		"$d/l2/usr/share/gone" "$d/l2/opaque" "$d/l3/usr/share" "$d/l3/opaque"
	cp /bin/busybox "$d/l1/bin/busybox"
	for a in sh ls cat echo touch mkdir rm id stat test env grep sort wget; do
		ln -s busybox "$d/l1/bin/$a"
	done
	chown 1000:1000 "$d/l1/home/u"
	chmod 1777 "$d/l1/tmp"
	echo "passwd-of-image" >"$d/l1/etc/marker"
	echo bye >"$d/l2/usr/share/gone/f"
	echo old >"$d/l2/opaque/old"
	mknod "$d/l3/usr/share/gone" c 0 0
	echo new >"$d/l3/opaque/new"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.overlay.opaque", b"y")' "$d/l3/opaque"
}

setup_file() {
	LAYERS="$BATS_FILE_TMPDIR/layers"
	export LAYERS
	if [ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked'; then
		make_layers "$LAYERS"
	fi
	load dockerd.bash
	start_dockerd || true
}

teardown_file() {
	load dockerd.bash
	stop_dockerd
}

setup() {
	[ -d "$LAYERS/l1" ] || skip "needs a static /bin/busybox (busybox-static)"
	ab_setup
	LAYER_ARGS=(--root-layer "$LAYERS/l1" --root-layer "$LAYERS/l2" --root-layer "$LAYERS/l3")
	host_snapshot >"$BATS_TEST_TMPDIR/before"
}

teardown() {
	ab_teardown
}

run_on() {
	local backend="$1"
	shift
	timeout -k 2 60 "$AGENTBOX" run --backend "$backend" --workspace "$WS" "$@" </dev/null
}

# The same checks on each backend.
check_backend() {
	local b="$1"
	# The image's tree, merged: whiteout and opaque directory applied.
	run run_on "$b" "${LAYER_ARGS[@]}" -- sh -c \
		'cat /etc/marker; ls /usr/share; ls /opaque; test -e /usr/bin/python3 || echo no-host-usr;
		 echo written >/usr/x && cat /usr/x; mkdir /newdir && echo mkdir-ok; id -u;
		 echo ws >/workspace/from-image && echo ws-ok'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *passwd-of-image* ]]
	[[ "$output" != *gone* ]]
	[[ "$output" == *new* ]] && [[ "$output" != *old* ]]
	[[ "$output" == *no-host-usr* ]]
	[[ "$output" == *written* ]] && [[ "$output" == *mkdir-ok* ]] && [[ "$output" == *ws-ok* ]]
	[ -f "$WS/from-image" ]
	# The layers never change, and the next sandbox starts from them again.
	[ ! -e "$LAYERS/l1/usr/x" ] && [ ! -e "$LAYERS/l3/usr/x" ] && [ ! -e "$LAYERS/l1/newdir" ]
	run run_on "$b" "${LAYER_ARGS[@]}" -- sh -c 'test -e /usr/x && echo still-there; test -e /newdir && echo dir-there; echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *done* ]] && [[ "$output" != *still-there* ]] && [[ "$output" != *dir-there* ]]
	# An image user writes where the image lets it, not into root's /usr.
	run run_on "$b" -u 1000:1000 "${LAYER_ARGS[@]}" -- sh -c \
		'id -u; echo mine >/home/u/f && cat /home/u/f; echo t >/tmp/t && echo tmp-ok; echo x >/usr/y || echo usr-denied'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *1000* ]] && [[ "$output" == *mine* ]] && [[ "$output" == *tmp-ok* ]]
	[[ "$output" == *usr-denied* ]]
	# --read-only: the same tree, no writes to it.
	run run_on "$b" --read-only "${LAYER_ARGS[@]}" -- sh -c \
		'ls /opaque; echo x >/usr/z || echo ro-denied; echo t >/tmp/t && echo tmp-ok'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *new* ]] && [[ "$output" == *ro-denied* ]] && [[ "$output" == *tmp-ok* ]]
	[[ "$output" == *"Read-only file system"* ]]
	assert_nothing_left "$BATS_TEST_TMPDIR/before"
}

@test "native: the layered root is an overlay of the layers with a per-sandbox upper" {
	check_backend native
	# One layer, read-only: the layer's own bind (overlayfs wants two).
	run run_on native --read-only --root-layer "$LAYERS/l1" -- sh -c 'cat /etc/marker; touch /q || echo denied'
	[ "$status" -eq 0 ]
	[[ "$output" == *passwd-of-image* ]] && [[ "$output" == *denied* ]]
}

@test "gvisor: the layered root's overlay in the OCI bundle, writes in the sandbox's upper" {
	command -v runsc >/dev/null || skip "runsc not installed"
	check_backend gvisor
}

@test "docker: the merged layers imported once by their list, a writable container root" {
	load dockerd.bash
	require_dockerd
	check_backend docker
	"$DOCKER" image ls --format '{{.Repository}}' | grep -qx agentbox/layers
	[ "$("$DOCKER" image ls -q agentbox/layers | wc -l)" -eq 1 ]
	[ -z "$("$DOCKER" ps -aq --filter label=agentbox=1)" ]
}

@test "--network proxy with a layered root: the proxy variables set, the egress proxy answers" {
	local b
	for b in native gvisor; do
		[ "$b" = gvisor ] && ! command -v runsc >/dev/null && continue
		run run_on "$b" --network proxy "${LAYER_ARGS[@]}" -- sh -c \
			'env | grep -i "^https*_proxy=" | sort; wget -O- http://127.0.0.1:9/ 2>&1; true'
		echo "$b: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"HTTPS_PROXY=http://127.0.0.1:3128"* ]]
		[[ "$output" == *"http_proxy=http://127.0.0.1:3128"* ]]
		# Loopback is denied by the egress policy: the proxy's own answer.
		[[ "$output" == *"403 Forbidden"* ]]
	done
	assert_nothing_left "$BATS_TEST_TMPDIR/before"
}

# One TCG boot (seconds under emulation): every check on one VM, through
# the daemon so several commands (and users) share it.
@test "microvm: the layers' ext4 disk (built once) under a tmpfs overlay, writable, gone with the VM" {
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
	PATH="$PATH:/usr/sbin:/sbin" command -v mke2fs >/dev/null || skip "mke2fs (e2fsprogs) is not installed"
	load daemon-common.bash
	export AGENTBOX_CACHE_DIR="$BATS_TEST_TMPDIR/cache"
	microvm_guest "$BATS_TEST_TMPDIR/guest"
	daemon_setup
	daemon_start
	body="$(jq -nc --arg a "$LAYERS/l1" --arg b "$LAYERS/l2" --arg c "$LAYERS/l3" --arg ws "$WS" \
		'{backend: "microvm", microvm_accel: "tcg", workspace: $ws, root: {layers: [$a, $b, $c]}}')"
	id="$(create "$body")"
	[ -n "$id" ]
	run ab exec "$id" -- sh -c \
		'cat /etc/marker; ls /usr/share; ls /opaque; test -e /usr/bin/python3 || echo no-host-usr;
		 echo written >/usr/x && cat /usr/x; mkdir /newdir && echo mkdir-ok;
		 echo ws >/workspace/from-image && echo ws-ok; grep " / " /proc/mounts'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *passwd-of-image* ]] && [[ "$output" != *gone* ]]
	[[ "$output" == *new* ]] && [[ "$output" != *old* ]]
	[[ "$output" == *no-host-usr* ]] && [[ "$output" == *written* ]] && [[ "$output" == *mkdir-ok* ]]
	[[ "$output" == *ws-ok* ]] && [ -f "$WS/from-image" ]
	[[ "$output" == *"overlay / overlay rw"* ]]
	# An image user: its own home, not root's /usr (ownership kept by the disk).
	run ab exec -u 1000:1000 "$id" -- sh -c \
		'id -u; echo mine >/home/u/f && cat /home/u/f; echo x >/usr/y || echo usr-denied; cat /usr/x'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *1000* ]] && [[ "$output" == *mine* ]] && [[ "$output" == *usr-denied* ]]
	[[ "$output" == *written* ]]
	# One disk for this layer list, nothing half-built; the layers unchanged.
	[ "$(find "$AGENTBOX_CACHE_DIR/microvm-roots" -mindepth 1 | wc -l)" -eq 1 ]
	disk="$(ls "$AGENTBOX_CACHE_DIR"/microvm-roots/*.ext4)"
	[ ! -e "$LAYERS/l1/usr/x" ] && [ ! -e "$LAYERS/l3/usr/x" ] && [ ! -e "$LAYERS/l1/newdir" ]
	run ab rm "$id"
	[ "$status" -eq 0 ]
	daemon_teardown
	# The next sandbox of the same layers takes the same disk, not a copy:
	# one whose kernel command line cannot fit (60 tmpfs mounts) gets past
	# the disk step and fails before any boot.
	before="$(stat -c '%i %Y' "$disk")"
	tmpfs=()
	for i in $(seq 60); do tmpfs+=(--tmpfs "/tmpfs-mount-point-$i"); done
	run run_on microvm --microvm-accel tcg "${LAYER_ARGS[@]}" "${tmpfs[@]}" -- true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"does not fit on the kernel command line"* ]]
	[ "$(stat -c '%i %Y' "$disk")" = "$before" ]
	[ "$(find "$AGENTBOX_CACHE_DIR/microvm-roots" -mindepth 1 | wc -l)" -eq 1 ]
	assert_nothing_left "$BATS_TEST_TMPDIR/before"
}

@test "daemon: REST create with a \"root\" of layers; the upper is gone after rm" {
	load daemon-common.bash
	daemon_setup
	daemon_start
	body="$(jq -nc --arg a "$LAYERS/l1" --arg b "$LAYERS/l2" --arg c "$LAYERS/l3" \
		'{backend: "native", root: {layers: [$a, $b, $c], read_only: false}}')"
	id="$(create "$body")"
	[ -n "$id" ]
	run ab exec "$id" -- sh -c 'echo kept >/usr/k; cat /usr/k; ls /opaque'
	echo "$output"
	[[ "$output" == *kept* ]] && [[ "$output" == *new* ]]
	run ab exec "$id" -- cat /usr/k
	[[ "$output" == *kept* ]]
	upper="$STATE/sandboxes/$id/root-upper"
	[ -f "$upper/upper/usr/k" ]
	run ab rm "$id"
	[ "$status" -eq 0 ]
	[ ! -e "$upper" ]
	daemon_teardown
	assert_nothing_left "$SNAPSHOT"
}
