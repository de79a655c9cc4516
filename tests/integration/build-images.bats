#!/usr/bin/env bats
# scripts/build-images: argument errors (2), --podman without podman (3), a
# missing binary (4), a blob whose bytes do not match its digest (5), and a
# real sidecar build (the static services binary, no mmdebstrap): its
# references, its layout as skopeo reads it, its layer's files, the same
# digests on a second run, and podman smoke runs in a podman store of the
# test's own.  The workspace image (mmdebstrap, minutes) only when
# BUILD_IMAGES_WORKSPACE=1.

bats_require_minimum_version 1.5.0
# The workspace build (mmdebstrap) takes minutes; everything else seconds.
if [ "${BUILD_IMAGES_WORKSPACE:-0}" = 1 ]; then
	: "${BATS_TEST_TIMEOUT:=1800}"
else
	: "${BATS_TEST_TIMEOUT:=120}"
fi

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT/build/agentbox}"
BUILD_DIR="$(cd "$(dirname "$AGENTBOX")" && pwd)"
SCRIPT="$ROOT/scripts/build-images"
REF_RE='^[a-z0-9][a-z0-9._/-]{0,200}@sha256:[a-f0-9]{64}$'

setup_file() {
	# Cheap: a link of the objects `make` already built.
	make -s -C "$ROOT" BUILD="$BUILD_DIR" static-services >&2
}

setup() {
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir -p "$TMPDIR"
	export AGENTBOX_SERVICES="$BUILD_DIR/agentbox-services-static"
	export AGENTBOX_AGENT="$BUILD_DIR/agentbox-agent"
	export AGENTBOX
	OUT="$BATS_TEST_TMPDIR/images"
	export BUILD_IMAGES_CACHE="${BUILD_IMAGES_CACHE:-$BATS_TEST_TMPDIR/cache}"
	cd "$ROOT" || return 1
}

# podman_env: a podman store, run root and tmpdir of this test's own.
podman_env() {
	command -v podman >/dev/null || skip "podman is not installed (scripts/install-deps test)"
	local p="$BATS_TEST_TMPDIR/podman"
	mkdir -p "$p"
	export BUILD_IMAGES_PODMAN_FLAGS="--root $p/root --runroot $p/run --tmpdir $p/tmp \
--storage-driver vfs --events-backend none --cgroup-manager cgroupfs"
}

# in_private_varlib CMD...: run CMD with private tmpfs mounts over /var/lib
# and /run: as root, containers/image writes its blob-info cache to
# /var/lib/containers/cache whatever --root says, and podman and runc keep
# state under /run (/run/libpod, /run/runc); the host's must stay untouched.
in_private_varlib() {
	unshare --mount --propagation private -- bash -c \
		'mount -t tmpfs -o mode=0755 tmpfs /var/lib && mount -t tmpfs -o mode=0755 tmpfs /run &&
		exec "$@"' bash "$@"
}

podman_t() {
	# shellcheck disable=SC2086
	in_private_varlib podman $BUILD_IMAGES_PODMAN_FLAGS "$@"
}

@test "bad arguments exit 2 with a message" {
	local args
	# --no-podman and --out-dir first: should a case not fail, it builds
	# into this test's directory and never into the host's podman.
	for args in "--bogus" "--output yaml" "--only both" "--output" "--mirror ftp://x" \
		"--only=" "--output=" "--out-dir=" "--mirror=" "--verify-only" "--out-dir"; do
		# shellcheck disable=SC2086
		run "$SCRIPT" --no-podman --out-dir "$OUT" $args
		echo "$args -> $status: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"build-images: "* ]]
		[[ "$output" != *"_IMAGE=localhost/"* ]]
	done
	[ ! -e "$OUT" ]
	run "$SCRIPT" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--output shell|env"* ]]
}

@test "--podman with podman hidden from PATH exits 3; without --podman the build goes on" {
	local bin="$BATS_TEST_TMPDIR/bin"
	mkdir -p "$bin"
	# Every command of /usr/bin (/bin is the same directory) but podman.
	ln -s /usr/bin/* "$bin/"
	rm -f "$bin/podman"
	run env PATH="$bin" bash -c 'command -v podman'
	[ "$status" -ne 0 ]
	run env PATH="$bin" "$SCRIPT" --only sidecar --podman --out-dir "$OUT"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"podman is not installed"* ]]
	[ ! -d "$OUT/sidecar" ]
	run env PATH="$bin" "$SCRIPT" --only sidecar --out-dir "$OUT"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"export T3_SANDBOX_EGRESS_PROXY_IMAGE="* ]]
}

@test "a missing binary exits 4 and names it" {
	run env AGENTBOX_SERVICES="$BATS_TEST_TMPDIR/none" "$SCRIPT" --only sidecar --no-podman \
		--out-dir "$OUT"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"static services binary is missing: $BATS_TEST_TMPDIR/none"* ]]
	# The workspace's agent is checked before mmdebstrap starts.
	run env AGENTBOX_AGENT="$BATS_TEST_TMPDIR/none" "$SCRIPT" --only workspace --no-podman \
		--out-dir "$OUT" --mirror http://127.0.0.1:9/debian
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"agentbox-agent is missing"* ]]
	[ ! -d "$OUT/workspace" ]
}

@test "a blob whose bytes do not match its digest exits 5, written or on disk" {
	local what
	for what in layer config manifest; do
		run env BUILD_IMAGES_TEST_CORRUPT=$what "$SCRIPT" --only sidecar --no-podman \
			--out-dir "$OUT"
		echo "$what -> $status: $output"
		[ "$status" -eq 5 ]
		[[ "$output" == *"content has digest sha256:"* ]]
		[[ "$output" != *"_IMAGE=localhost/"* ]]
	done
	# A good layout passes --verify-only; one flipped byte in a copy, or a
	# layer swapped for another gzip under its own (correct) name, fails.
	run "$SCRIPT" --only sidecar --no-podman --out-dir "$OUT"
	[ "$status" -eq 0 ]
	run "$SCRIPT" --verify-only "$OUT/sidecar"
	echo "$output"
	[ "$status" -eq 0 ]
	cp -r "$OUT/sidecar" "$BATS_TEST_TMPDIR/bad"
	local layer
	layer=$(jq -r '.manifests[0].digest' "$OUT/sidecar/index.json")
	layer=$(jq -r '.layers[0].digest | sub("sha256:"; "")' "$OUT/sidecar/blobs/sha256/${layer#sha256:}")
	printf 'X' | dd of="$BATS_TEST_TMPDIR/bad/blobs/sha256/$layer" bs=1 seek=100 conv=notrunc status=none
	run "$SCRIPT" --verify-only "$BATS_TEST_TMPDIR/bad"
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"/blobs/sha256/$layer: content has digest"* ]]
	# The diff_id check: the right blob name for the bytes, the wrong tar.
	cp -r "$OUT/sidecar" "$BATS_TEST_TMPDIR/swapped"
	echo other | gzip -n >"$BATS_TEST_TMPDIR/swapped/blobs/sha256/$layer.new"
	local man m2
	man=$(jq -r '.manifests[0].digest | sub("sha256:"; "")' "$OUT/sidecar/index.json")
	local d
	d=$(sha256sum "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$layer.new" | cut -d' ' -f1)
	mv "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$layer.new" "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$d"
	rm "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$layer"
	jq -c --arg d "sha256:$d" '.layers[0].digest = $d' "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$man" \
		>"$BATS_TEST_TMPDIR/m"
	m2=$(sha256sum "$BATS_TEST_TMPDIR/m" | cut -d' ' -f1)
	mv "$BATS_TEST_TMPDIR/m" "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$m2"
	rm "$BATS_TEST_TMPDIR/swapped/blobs/sha256/$man"
	jq --arg d "sha256:$m2" '.manifests[0].digest = $d' "$OUT/sidecar/index.json" \
		>"$BATS_TEST_TMPDIR/swapped/index.json"
	run "$SCRIPT" --verify-only "$BATS_TEST_TMPDIR/swapped"
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"not its diff_id"* ]]
}

@test "the static services binary: no interpreter, each t3-* --help in an empty root" {
	local bin="$BUILD_DIR/agentbox-services-static" root="$BATS_TEST_TMPDIR/root" n
	run readelf -lW "$bin"
	[ "$status" -eq 0 ]
	[[ "$output" != *"INTERP"* ]]
	[[ "$output" != *"DYNAMIC"*"NEEDED"* ]]
	run readelf -dW "$bin"
	[[ "$output" != *"(NEEDED)"* ]]
	mkdir -p "$root/usr/local/bin"
	cp "$bin" "$root/usr/local/bin/agentbox-services"
	for n in t3-egress-proxy t3-credential-proxy t3-preview-bridge; do
		ln -s agentbox-services "$root/usr/local/bin/$n"
		run chroot --userspec=65532:65532 "$root" "/usr/local/bin/$n" --help
		echo "$n: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == "usage: $n "* ]]
	done
	run chroot --userspec=65532:65532 "$root" /usr/local/bin/agentbox-services nothing
	[ "$status" -eq 125 ]
	[[ "$output" == *"usage: agentbox-services"* ]]
}

@test "a sidecar build: references, an OCI layout skopeo reads, its files, stable digests" {
	command -v skopeo >/dev/null || skip "skopeo is not installed (scripts/install-deps test)"
	run --separate-stderr "$SCRIPT" --only sidecar --no-podman --output env --out-dir "$OUT"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	local ref=
	local line
	for line in "${lines[@]}"; do
		[[ "$line" =~ ^(T3_SANDBOX_PREVIEW_PROXY_IMAGE|T3_SANDBOX_EGRESS_PROXY_IMAGE|T3_SANDBOX_CREDENTIAL_PROXY_IMAGE)=(.*)$ ]]
		[ -z "$ref" ] || [ "$ref" = "${BASH_REMATCH[2]}" ]
		ref=${BASH_REMATCH[2]}
		[[ "$ref" =~ $REF_RE ]]
	done
	# Until `agentbox image` exists the store import says it was skipped.
	if ! "$AGENTBOX" image --help >/dev/null 2>&1; then
		[[ "$stderr" == *"store import skipped"* ]]
	fi
	run skopeo inspect "oci:$OUT/sidecar"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r .Digest <<<"$output")" = "sha256:${ref#*@sha256:}" ]
	run skopeo inspect --config "oci:$OUT/sidecar"
	[ "$status" -eq 0 ]
	[ "$(jq -r .config.User <<<"$output")" = 65532:65532 ]
	[ "$(jq -c .config.Cmd <<<"$output")" = '["t3-preview-bridge","serve","--listen","0.0.0.0:8080"]' ]
	[ "$(jq -c .config.Entrypoint <<<"$output")" = null ]
	# The layer: the binary (0555), its links, the CA bundle; no shell.
	local man layer
	man=$(jq -r '.manifests[0].digest | sub("sha256:"; "")' "$OUT/sidecar/index.json")
	layer=$(jq -r '.layers[0].digest | sub("sha256:"; "")' "$OUT/sidecar/blobs/sha256/$man")
	run tar -tvzf "$OUT/sidecar/blobs/sha256/$layer"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"-r-xr-xr-x 0/0"*"./usr/local/bin/agentbox-services"* ]]
	[[ "$output" == *"./usr/local/bin/t3-egress-proxy -> agentbox-services"* ]]
	[[ "$output" == *"./usr/local/bin/t3-credential-proxy -> agentbox-services"* ]]
	[[ "$output" == *"./usr/local/bin/t3-preview-bridge -> agentbox-services"* ]]
	[[ "$output" == *"./etc/ssl/certs/ca-certificates.crt"* ]]
	[[ "$output" != *"bin/sh"* ]]
	[[ "$output" == *"1970-01-01 00:00"* ]]
	[ "$(tar -tzf "$OUT/sidecar/blobs/sha256/$layer" | grep -c -v '/$')" -eq 7 ]
	# A second run writes the same bytes.
	run "$SCRIPT" --only sidecar --no-podman --output env --out-dir "$BATS_TEST_TMPDIR/again"
	[ "$status" -eq 0 ]
	[[ "$output" == *"T3_SANDBOX_EGRESS_PROXY_IMAGE=$ref"* ]]
}

@test "the store: agentbox image import LAYOUT NAME, then agentbox run --image REF smoke runs" {
	# A stand-in agentbox with the commands the image-store branch adds,
	# recording how the script calls them; IMPORT_RC makes the import fail.
	local fake="$BATS_TEST_TMPDIR/agentbox" calls="$BATS_TEST_TMPDIR/calls"
	cat >"$fake" <<EOF
#!/bin/bash
echo "\$*" >>"$calls"
case "\$1 \${2:-}" in
"image --help") exit 0 ;;
"image import") [ -f "\$3/index.json" ] || exit 9; exit \${IMPORT_RC:-0} ;;
"run --help") echo "  --image REF"; exit 0 ;;
"run --image") exit 0 ;;
esac
exit 125
EOF
	chmod +x "$fake"
	run --separate-stderr env AGENTBOX="$fake" "$SCRIPT" --only sidecar --no-podman --out-dir "$OUT"
	echo "$output"
	echo "$stderr"
	cat "$calls"
	[ "$status" -eq 0 ]
	local ref
	ref=$(sed -n 's/^export T3_SANDBOX_EGRESS_PROXY_IMAGE=//p' <<<"$output")
	grep -qx "image import $OUT/sidecar localhost/agentbox-sidecar" "$calls"
	grep -qx "run --image $ref -- t3-egress-proxy --help" "$calls"
	grep -qx "run --image $ref -- t3-credential-proxy --help" "$calls"
	grep -qx "run --image $ref -- t3-preview-bridge --help" "$calls"
	[[ "$stderr" == *"agentbox: smoke run of $ref passed"* ]]
	# A failed import is a failure, not a skip.
	run env AGENTBOX="$fake" IMPORT_RC=1 "$SCRIPT" --only sidecar --no-podman --out-dir "$OUT"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"agentbox image import $OUT/sidecar localhost/agentbox-sidecar failed"* ]]
	[[ "$output" != *"_IMAGE=localhost/"* ]]
}

@test "podman: the sidecar loads into a store of the test's own and every t3-* --help runs" {
	podman_env
	run --separate-stderr in_private_varlib "$SCRIPT" --only sidecar --podman --out-dir "$OUT"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"podman: smoke run of localhost/agentbox-sidecar@sha256:"*" passed"* ]]
	local ref
	ref=$(sed -n 's/^export T3_SANDBOX_PREVIEW_PROXY_IMAGE=//p' <<<"$output")
	[[ "$ref" =~ $REF_RE ]]
	# By the printed reference, with no network; the image has no shell.
	run podman_t run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		"$ref" t3-credential-proxy --help
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"usage: t3-credential-proxy serve"* ]]
	run -127 podman_t run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		"$ref" sh -c true
	echo "$output"
	[[ "$output" == *'"sh": executable file not found'* ]]
	run podman_t image inspect --format '{{.Config.User}}' "$ref"
	[ "$output" = 65532:65532 ]
	[ -z "$(podman_t ps -aq)" ]
}

@test "the workspace image (mmdebstrap; only with BUILD_IMAGES_WORKSPACE=1)" {
	if [ "${BUILD_IMAGES_WORKSPACE:-0}" != 1 ]; then
		skip "the workspace build takes minutes (mmdebstrap from the Debian archive): set BUILD_IMAGES_WORKSPACE=1 to run it"
	fi
	podman_env
	# BUILD_IMAGES_CACHE: reuse a base tarball across runs when given.
	run --separate-stderr in_private_varlib "$SCRIPT" --only workspace --podman --out-dir "$OUT"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	local ref
	ref=$(sed -n 's/^export T3_SANDBOX_IMAGE=//p' <<<"$output")
	[[ "$ref" =~ $REF_RE ]]
	[[ "$stderr" == *"podman: smoke run of $ref passed"* ]]
	run podman_t run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		"$ref" sh -c 'id -u; id -g; pwd; stat -c %u:%g /workspace /home/user; command -v agentbox-agent tini rg node python3 git'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = 1000 ]
	[ "${lines[2]}" = /workspace ]
	[ "${lines[3]}" = 1000:1000 ]
	[ "${lines[4]}" = 1000:1000 ]
	[ "${lines[5]}" = /usr/local/bin/agentbox-agent ]
}
