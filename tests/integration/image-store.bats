#!/usr/bin/env bats
# The image store (docs/images.md): pulls from a registry this file starts
# on 127.0.0.1 (Debian's docker-registry, TLS with a test CA, htpasswd
# basic auth), a fake registry for what a real one never serves (a blob
# that does not match its digest, a slow one to interrupt), imports, and
# every hostile-layer case, each checked on the host afterwards.

load run-common

TOOL="$BATS_TEST_DIRNAME/image-tool.py"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	local d="$BATS_FILE_TMPDIR" i
	for t in docker-registry skopeo openssl htpasswd python3 busybox; do
		command -v "$t" >/dev/null || { echo "# $t missing" >&3; return 0; }
	done
	mkdir -p "$d/root/bin" "$d/root/etc" "$d/root/srv"
	cp "$(command -v busybox)" "$d/root/bin/busybox"
	ln -s busybox "$d/root/bin/sh"
	printf 'root:x:0:0::/root:/bin/sh\napp:x:1234:2345::/home/app:/bin/sh\n' >"$d/root/etc/passwd"
	printf 'root:x:0:\nstaff:x:50:\n' >"$d/root/etc/group"
	python3 "$TOOL" oci-layout "$d/root" "$d/oci" --cmd '["/bin/sh","-c","echo hi"]' \
		--user app:staff --workdir /srv --env FOO=bar >"$d/digest"
	# A second layout whose index.json names the manifest list.
	mkdir -p "$d/oci-list"
	cp -r "$d/oci/blobs" "$d/oci/oci-layout" "$d/oci-list/"
	local xd
	xd=$(cat "$d/oci/list-digest")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"%s","size":%s}]}' \
		"$xd" "$(stat -c %s "$d/oci/blobs/sha256/${xd#sha256:}")" >"$d/oci-list/index.json"
	# The test CA and the registry's certificate for 127.0.0.1.
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=abtest-ca \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$d/srv.key" \
		-out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/ext" -out "$d/srv.pem" 2>/dev/null
	htpasswd -Bbn tester s3cret >"$d/htpasswd" 2>/dev/null
	PORT=$(free_port)
	cat >"$d/registry.yml" <<-EOC
	version: 0.1
	log:
	  level: info
	  accesslog:
	    disabled: false
	storage:
	  filesystem:
	    rootdirectory: $d/registry-data
	http:
	  addr: 127.0.0.1:$PORT
	  tls:
	    certificate: $d/srv.pem
	    key: $d/srv.key
	auth:
	  htpasswd:
	    realm: abtest
	    path: $d/htpasswd
	EOC
	docker-registry serve "$d/registry.yml" >"$d/registry.log" 2>&1 &
	echo $! >"$d/registry.pid"
	for ((i = 0; i < 100; i++)); do
		curl -s --cacert "$d/ca.pem" "https://127.0.0.1:$PORT/v2/" >/dev/null && break
		sleep 0.1
	done
	echo "$PORT" >"$d/port"
	skopeo copy -q --dest-cert-dir "$d/certs" --dest-tls-verify=false --dest-creds tester:s3cret \
		"oci:$d/oci" "docker://127.0.0.1:$PORT/test/bb:1" >&3
	skopeo copy -q --all --dest-tls-verify=false --dest-creds tester:s3cret \
		"oci:$d/oci-list" "docker://127.0.0.1:$PORT/test/list:1" >&3
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$PORT" \
		"$(printf tester:s3cret | base64 -w0)" >"$d/auth.json"
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$PORT" \
		"$(printf tester:wrong | base64 -w0)" >"$d/bad-auth.json"
}

teardown_file() {
	local p
	for f in registry.pid; do
		p=$(cat "$BATS_FILE_TMPDIR/$f" 2>/dev/null) && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	true
}

setup() {
	[ -f "$BATS_FILE_TMPDIR/port" ] || skip "docker-registry, skopeo, openssl, htpasswd or busybox missing"
	test_tmpdir
	D="$BATS_FILE_TMPDIR"
	PORT=$(cat "$D/port")
	REG="127.0.0.1:$PORT"
	S="$BATS_TEST_TMPDIR/state"
	export AGENTBOX_STATE_DIR="$S"
	export REGISTRY_AUTH_FILE="$D/auth.json"
	OUT="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUT"
	echo original >"$OUT/victim"
	BG=()
}

teardown() {
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	true
}

img() { timeout 60 "$AGENTBOX" image "$@"; }

# Nothing half-done: no partial blobs, work dirs or unpack dirs left.
store_clean() {
	[ -z "$(ls -A "$S/images/tmp" 2>/dev/null)" ] || { ls -la "$S/images/tmp"; return 1; }
}

outside_untouched() {
	[ "$(ls -A "$OUT")" = victim ] && [ "$(cat "$OUT/victim")" = original ]
}

@test "pull by tag over TLS (test CA) with basic auth from REGISTRY_AUTH_FILE" {
	run img pull --quiet --ca-file "$D/ca.pem" "$REG/test/bb:1"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "$(cat "$D/digest")" ]
	run img ls --json
	echo "$output" | jq -e --arg n "$REG/test/bb:1" '.[0].names == [$n]'
	run img inspect "$REG/test/bb:1"
	dir=$(echo "$output" | jq -r '.layer_dirs[0]')
	cmp "$dir/bin/busybox" "$D/root/bin/busybox"
	[ "$(readlink "$dir/bin/sh")" = busybox ]
	echo "$output" | jq -e '.config.User == "app:staff" and .config.WorkingDir == "/srv"'
	store_clean
}

@test "pull by digest; a manifest list picks linux/amd64" {
	dg=$(cat "$D/digest")
	run img pull --quiet --ca-file "$D/ca.pem" "$REG/test/bb@$dg"
	[ "$status" -eq 0 ] && [ "$output" = "$dg" ]
	run img pull --quiet --ca-file "$D/ca.pem" "$REG/test/list:1"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "$dg" ]
	run img pull --quiet --ca-file "$D/ca.pem" --platform linux/s390x "$REG/test/list:1"
	[ "$status" -ne 0 ] && [[ "$output" == *"no linux/s390x image"* ]]
}

@test "auth failure, unknown CA and plain HTTP to a TLS registry are refused; nothing stored" {
	REGISTRY_AUTH_FILE="$D/bad-auth.json" run img pull --quiet --ca-file "$D/ca.pem" "$REG/test/bb:1"
	[ "$status" -ne 0 ] && [[ "$output" == *"HTTP 401"* || "$output" == *credentials* ]]
	REGISTRY_AUTH_FILE=/nonexistent run img pull --quiet --ca-file "$D/ca.pem" "$REG/test/bb:1"
	[ "$status" -ne 0 ] && [[ "$output" == *credentials* ]]
	SSL_CERT_FILE= run img pull --quiet "$REG/test/bb:1"
	[ "$status" -ne 0 ] && [[ "$output" == *certificate* || "$output" == *SSL* ]]
	[ -z "$(ls -A "$S/images/blobs/sha256")" ]
	[ "$(img ls --json | jq length)" = 0 ]
}

start_fake() {
	local pf="$BATS_TEST_TMPDIR/fake.port" layout="$D/oci"
	if [ "${1:-}" = --layout ]; then layout=$2; shift 2; fi
	python3 "$TOOL" fake-registry "$layout" "$pf" "$@" &
	BG+=($!)
	for ((i = 0; i < 50; i++)); do [ -s "$pf" ] && break; sleep 0.1; done
	FAKE="127.0.0.1:$(cat "$pf")"
}

@test "a blob whose bytes do not match its digest is refused and removed" {
	start_fake --corrupt
	run img pull --quiet --insecure-registry "$FAKE" "$FAKE/test/bb:1"
	[ "$status" -ne 0 ]
	[[ "$output" == *"does not match its digest"* ]]
	layer=$(jq -r '.layers[0].digest' "$D/oci/blobs/sha256/$(cat "$D/digest" | cut -d: -f2)")
	[ ! -e "$S/images/blobs/sha256/${layer#sha256:}" ]
	[ -z "$(ls -A "$S/images/layers")" ]
	[ "$(img ls --json | jq length)" = 0 ]
	store_clean
}

@test "bearer-token auth (WWW-Authenticate realm, basic credentials to the token service)" {
	start_fake --token
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$FAKE" "$(printf tester:s3cret | base64 -w0)" \
		>"$BATS_TEST_TMPDIR/auth.json"
	REGISTRY_AUTH_FILE="$BATS_TEST_TMPDIR/auth.json" run img pull --quiet --insecure-registry "$FAKE" "$FAKE/test/bb:1"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "$(cat "$D/digest")" ]
	rm -rf "$S"
	REGISTRY_AUTH_FILE=/nonexistent run img pull --quiet --insecure-registry "$FAKE" "$FAKE/test/bb:1"
	[ "$status" -ne 0 ] && [[ "$output" == *"token service"*"401"* ]]
	# The realm is http: without --insecure-registry no plain HTTP at all.
	run img pull --quiet "$FAKE/test/bb:1"
	[ "$status" -ne 0 ]
}

@test "an interrupted pull leaves nothing registered; the retry resumes and succeeds" {
	start_fake --slow
	"$AGENTBOX" image pull --quiet --insecure-registry "$FAKE" "$FAKE/test/bb:1" &
	pid=$!
	for ((i = 0; i < 50; i++)); do
		ls "$S/images/tmp/"*.partial >/dev/null 2>&1 && [ "$(stat -c %s "$S/images/tmp/"*.partial | head -1)" -gt 50000 ] && break
		sleep 0.1
	done
	kill -KILL "$pid"; wait "$pid" || true
	part=$(stat -c %s "$S/images/tmp/"*.partial)
	[ "$part" -gt 0 ]
	[ "$(img ls --json | jq length)" = 0 ]
	[ -z "$(ls -A "$S/images/layers")" ]
	run img pull --quiet --insecure-registry "$FAKE" "$FAKE/test/bb:1"
	[ "$status" -eq 0 ] && [ "$output" = "$(cat "$D/digest")" ]
	# It resumed with a Range request after what the first pull had.
	[ "$(cat "$BATS_TEST_TMPDIR/fake.port.ranges")" = "$part" ]
	store_clean
}

@test "concurrent pulls of one image share one download" {
	layer=$(jq -r '.layers[0].digest' "$D/oci/blobs/sha256/$(cut -d: -f2 "$D/digest")")
	before=$(grep -c "GET /v2/test/bb/blobs/$layer" "$D/registry.log" || true)
	for n in 1 2 3; do
		"$AGENTBOX" image pull --quiet --ca-file "$D/ca.pem" "$REG/test/bb:1" >"$BATS_TEST_TMPDIR/p$n" 2>&1 &
		BG+=($!)
	done
	for p in "${BG[@]}"; do wait "$p"; done
	BG=()
	for n in 1 2 3; do [ "$(cat "$BATS_TEST_TMPDIR/p$n")" = "$(cat "$D/digest")" ]; done
	after=$(grep -c "GET /v2/test/bb/blobs/$layer" "$D/registry.log" || true)
	[ $((after - before)) -eq 1 ]
	[ "$(img ls --json | jq length)" = 1 ]
	store_clean
}

evil_import() {
	python3 "$TOOL" evil "$1" "$BATS_TEST_TMPDIR/$1.tar" "$OUT"
	run img import "$BATS_TEST_TMPDIR/$1.tar" "localhost/evil-$1"
}

refused() {
	[ "$status" -ne 0 ] || { echo "import of $1 succeeded"; false; }
	outside_untouched
	[ -z "$(ls -A "$S/images/layers")" ]
	[ "$(img ls --json | jq length)" = 0 ]
	store_clean
}

layer_of() {
	img inspect "localhost/evil-$1" | jq -r '.layer_dirs[0]'
}

@test "hostile layers: '..', symlinked parents, directory-to-symlink swaps, hard links out are refused" {
	for c in dotdot symlink-dir symlink-swap hardlink-out hardlink-dotdot whiteout-dotdot; do
		evil_import "$c"
		echo "case $c: $output"
		refused "$c"
		[ ! -e "$OUT/dotdot" ] && [ ! -e "$OUT/through-symlink" ] && [ ! -e "$OUT/swapped" ]
		[ ! -e /dotdot ] && [ ! -e /tmp/dotdot ]
	done
}

@test "hostile layers: absolute names stay inside, a symlink is replaced not written through" {
	evil_import absolute
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	l=$(layer_of absolute)
	[ -f "$l/${OUT#/}/absolute" ]
	evil_import symlink-then-file
	[ "$status" -eq 0 ]
	l=$(layer_of symlink-then-file)
	[ -f "$l/f" ] && [ ! -L "$l/f" ] && [ "$(cat "$l/f")" = overwritten ]
	outside_untouched
}

@test "hostile layers: device nodes skipped, setuid stripped, whiteouts in overlayfs form, sizes capped" {
	evil_import device
	[ "$status" -eq 0 ]
	l=$(layer_of device)
	[ ! -e "$l/dev-sda" ] && [ -f "$l/ok" ]
	evil_import setuid
	l=$(layer_of setuid)
	[ "$(stat -c %a "$l/suid")" = 755 ]
	evil_import whiteout
	[ "$status" -eq 0 ]
	l=$(layer_of whiteout)
	[ "$(stat -c '%F %t:%T' "$l/etc/passwd")" = "character special file 0:0" ]
	python3 -c 'import os,sys; assert os.getxattr(sys.argv[1], "user.overlay.opaque") == b"y"' "$l/opq"
	if [ "$(id -u)" = 0 ]; then
		python3 -c 'import os,sys; assert os.getxattr(sys.argv[1], "trusted.overlay.opaque") == b"y"' "$l/opq"
	fi
	python3 "$TOOL" evil big "$BATS_TEST_TMPDIR/big.tar"
	AGENTBOX_IMAGE_MAX_ENTRY=1m run img import "$BATS_TEST_TMPDIR/big.tar" localhost/big
	[ "$status" -ne 0 ] && [[ "$output" == *"entry limit"* ]]
	AGENTBOX_IMAGE_MAX_LAYER=2m run img import "$BATS_TEST_TMPDIR/big.tar" localhost/big
	[ "$status" -ne 0 ] && [[ "$output" == *"layer is over"* ]]
	store_clean
}

@test "import: OCI layout dir and tar, docker-save archive, plain root dir" {
	run img import "$D/oci" localhost/a:1
	[ "$status" -eq 0 ] && [ "$output" = "$(cat "$D/digest")" ]
	tar -C "$D/oci" -cf "$BATS_TEST_TMPDIR/oci.tar" .
	run img import "$BATS_TEST_TMPDIR/oci.tar" localhost/b:1
	[ "$status" -eq 0 ] && [ "$output" = "$(cat "$D/digest")" ]
	python3 "$TOOL" docker-save "$D/root" "$BATS_TEST_TMPDIR/save.tar"
	run img import "$BATS_TEST_TMPDIR/save.tar"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	img inspect docker.io/saved/busybox:1 | jq -e '.config.Cmd == ["/bin/sh"]'
	run img import "$D/root" localhost/plain
	[ "$status" -eq 0 ]
	l=$(img inspect localhost/plain | jq -r '.layer_dirs[0]')
	cmp "$l/bin/busybox" "$D/root/bin/busybox"
	[ "$(img ls --json | jq length)" = 3 ]
	store_clean
}

# Nothing of a refused layer: no layer directory, no diff_id remembered,
# no record, no name, nothing in tmp/.
no_layer_left() {
	[ -z "$(ls -A "$S/images/layers")" ] && [ -z "$(ls -A "$S/images/diffs")" ]
	[ -z "$(ls -A "$S/images/images")" ]
	[ ! -e "$S/images/names.json" ] || [ "$(jq length "$S/images/names.json")" = 0 ]
	store_clean
}

@test "a layer whose blob digest matches but the config's diff_id does not is refused (import and pull)" {
	local lie=sha256:0000000000000000000000000000000000000000000000000000000000000001
	python3 "$TOOL" oci-layout "$D/root" "$BATS_TEST_TMPDIR/lie" --diff-id "$lie" >/dev/null
	run img import "$BATS_TEST_TMPDIR/lie" localhost/lie
	echo "$output"
	[ "$status" -ne 0 ]
	# The error names both digests: what the layer is, what the config says.
	real=$(python3 -c 'import hashlib,sys; print("sha256:" + hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' \
		<(python3 "$TOOL" layer-tar "$D/root" /dev/stdout))
	[[ "$output" == *"diff_id"* && "$output" == *"$lie"* && "$output" == *"$real"* ]]
	no_layer_left
	# The same from a registry.
	start_fake --layout "$BATS_TEST_TMPDIR/lie"
	run img pull --quiet --insecure-registry "$FAKE" "$FAKE/test/bb:1"
	[ "$status" -ne 0 ] && [[ "$output" == *"$lie"* && "$output" == *"$real"* ]]
	no_layer_left
	# An honest image of that blob is fine; then a config claiming that
	# layer's diff_id for another blob does not get the layer directory.
	img import "$D/oci" localhost/a:1 >/dev/null
	[ "$(ls "$S/images/layers")" = "${real#sha256:}" ]
	mkdir -p "$BATS_TEST_TMPDIR/other"
	echo other >"$BATS_TEST_TMPDIR/other/f"
	python3 "$TOOL" oci-layout "$BATS_TEST_TMPDIR/other" "$BATS_TEST_TMPDIR/claim" --diff-id "$real" >/dev/null
	run img import "$BATS_TEST_TMPDIR/claim" localhost/claim
	[ "$status" -ne 0 ] && [[ "$output" == *"diff_id is $real"* ]]
	[ "$(ls "$S/images/layers")" = "${real#sha256:}" ] && [ "$(img ls --json | jq length)" = 1 ]
	store_clean
}

@test "one layer directory per diff_id: the same layer gzip, uncompressed, docker-save and plain tar.gz" {
	python3 "$TOOL" oci-layout "$D/root" "$BATS_TEST_TMPDIR/plain" --uncompressed 1 >/dev/null
	python3 "$TOOL" docker-save "$D/root" "$BATS_TEST_TMPDIR/save.tar"
	python3 "$TOOL" layer-tar "$D/root" "$BATS_TEST_TMPDIR/layer.tar"
	gzip -n -c "$BATS_TEST_TMPDIR/layer.tar" >"$BATS_TEST_TMPDIR/layer.tar.gz"
	img import "$D/oci" localhost/gz >/dev/null
	img import "$BATS_TEST_TMPDIR/plain" localhost/plain >/dev/null
	img import "$BATS_TEST_TMPDIR/save.tar" localhost/saved >/dev/null
	img import "$BATS_TEST_TMPDIR/layer.tar.gz" localhost/targz >/dev/null
	diff=$(img inspect localhost/gz | jq -r '.diff_ids[0]')
	for n in gz plain saved targz; do
		[ "$(img inspect localhost/$n | jq -r '.diff_ids[0]')" = "$diff" ]
		[ "$(img inspect localhost/$n | jq -r '.layer_dirs[0]')" = "$S/images/layers/${diff#sha256:}" ]
	done
	# Three blobs (gzip, plain, gzip -n), one layer directory.
	[ "$(ls "$S/images/layers")" = "${diff#sha256:}" ]
	[ "$(img inspect localhost/gz | jq -r '.layers[0]')" != "$(img inspect localhost/plain | jq -r '.layers[0]')" ]
	[ "$(ls "$S/images/diffs" | wc -l)" = 3 ]
	cmp "$S/images/layers/${diff#sha256:}/bin/busybox" "$D/root/bin/busybox"
	# A plain root tar's config names the uncompressed digest, not the blob's.
	[ "$(img inspect localhost/targz | jq -r '.layers[0]')" != "$diff" ]
	store_clean
}

@test "a store from before diff_ids: the layer is unpacked again by diff_id, prune drops the old directory" {
	img import "$D/oci" localhost/a:1 >/dev/null
	rec=$(ls "$S/images/images/"*.json)
	diff=$(jq -r '.diff_ids[0]' "$rec")
	blob=$(jq -r '.layers[0]' "$rec")
	# What an older agentbox left: the record without diff_ids, the
	# layer under the blob's digest, no diffs/.
	jq 'del(.diff_ids)' "$rec" >"$rec.new" && mv "$rec.new" "$rec"
	mv "$S/images/layers/${diff#sha256:}" "$S/images/layers/${blob#sha256:}"
	rm -rf "$S/images/diffs"
	[ "$(img inspect localhost/a:1 | jq -r '.layer_dirs[0]')" = "$S/images/layers/${diff#sha256:}" ]
	run timeout 20 "$AGENTBOX" run --no-workspace -w / --image localhost/a:1 --pull never -- /bin/busybox cat /etc/group
	[ "$status" -eq 0 ] && [[ "$output" == *staff* ]] || { echo "$output"; false; }
	[ -d "$S/images/layers/${diff#sha256:}" ]
	img prune >/dev/null
	[ "$(ls "$S/images/layers")" = "${diff#sha256:}" ]
}

@test "image rm is refused while a sandbox holds a lease; prune removes what nothing uses" {
	img import "$D/oci" localhost/a:1 >/dev/null
	# A live lease, as run and the daemon take one (leases/HOLDER).
	printf '{"digest":"%s","alive_dir":"%s"}' "$(cat "$D/digest")" "$BATS_TEST_TMPDIR" \
		>"$S/images/leases/sb-test"
	run img rm localhost/a:1
	[ "$status" -ne 0 ] && [[ "$output" == *"in use"* ]]
	# A stale lease (its sandbox directory is gone) holds nothing.
	printf '{"digest":"%s","alive_dir":"%s/gone"}' "$(cat "$D/digest")" "$BATS_TEST_TMPDIR" \
		>"$S/images/leases/sb-test"
	run img rm localhost/a:1
	[ "$status" -eq 0 ]
	[ -n "$(ls -A "$S/images/blobs/sha256")" ]
	run img prune
	[ "$status" -eq 0 ]
	[ -z "$(ls -A "$S/images/blobs/sha256")" ] && [ -z "$(ls -A "$S/images/layers")" ]
	[ -z "$(ls -A "$S/images/diffs")" ]
	[ ! -e "$S/images/leases/sb-test" ]
}

# The sandbox's root itself is the backends' part (h-img-run); these check
# what the store puts in the spec: -w / keeps the host-root case working.
@test "run --image: the image's Env, User (names from its /etc/passwd and /etc/group), Cmd" {
	img import "$D/oci" localhost/a:1 >/dev/null
	run timeout 20 "$AGENTBOX" run --no-workspace -w / --image localhost/a:1 -- \
		/bin/sh -c 'echo "FOO=$FOO $(busybox id -u):$(busybox id -g)"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "FOO=bar 1234:50" ]
	run timeout 20 "$AGENTBOX" run --no-workspace -w / -e FOO=mine -u 7:8 --image localhost/a:1 -- \
		/bin/sh -c 'echo "FOO=$FOO $(busybox id -u):$(busybox id -g)"'
	[ "$output" = "FOO=mine 7:8" ]
	run timeout 20 "$AGENTBOX" run --no-workspace -w / --image localhost/a:1
	[ "$status" -eq 0 ] && [ "$output" = hi ]
}

@test "run --image: a lease while the sandbox runs, none after; --pull never on a missing image" {
	img import "$D/oci" localhost/a:1 >/dev/null
	run timeout 20 "$AGENTBOX" run --image localhost/nope --pull never -- true
	[ "$status" -ne 0 ] && [[ "$output" == *"no image"* ]]
	timeout 20 "$AGENTBOX" run --no-workspace -w / --image localhost/a:1 -- /bin/sh -c 'sleep 3' >/dev/null 2>&1 &
	BG+=($!)
	for ((i = 0; i < 50; i++)); do [ -n "$(ls -A "$S/images/leases")" ] && break; sleep 0.1; done
	[ -n "$(ls -A "$S/images/leases")" ]
	run img rm localhost/a:1
	[ "$status" -ne 0 ] && [[ "$output" == *"in use"* ]]
	wait "${BG[0]}" || true
	BG=()
	[ -z "$(ls -A "$S/images/leases")" ]
	run img rm localhost/a:1
	[ "$status" -eq 0 ]
}

@test "the daemon's create with \"image\" uses the same store, holds a lease until rm" {
	img import "$D/oci" localhost/a:1 >/dev/null
	sock="$BATS_TEST_TMPDIR/run/s.sock"
	mkdir -p "$BATS_TEST_TMPDIR/run"
	setsid "$AGENTBOX" serve --socket "$sock" --state-dir "$S" >"$BATS_TEST_TMPDIR/daemon.log" 2>&1 </dev/null &
	BG+=($!)
	for ((i = 0; i < 100; i++)); do
		curl -s --max-time 2 --unix-socket "$sock" http://x/v1/health >/dev/null 2>&1 && break
		sleep 0.1
	done
	export AGENTBOX_HOST="$sock"
	id=$(timeout 30 "$AGENTBOX" create --no-workspace --image localhost/a:1)
	run "$AGENTBOX" inspect "$id"
	echo "$output" | jq -e --arg l "$(img inspect localhost/a:1 | jq -r '.layer_dirs[0]')" \
		'.spec.root.layers == [$l] and .spec.workdir == "/srv" and .spec.user == "1234:50" and .spec.env.FOO == "bar"'
	[ -f "$S/images/leases/$id" ]
	run img rm localhost/a:1
	[ "$status" -ne 0 ] && [[ "$output" == *"in use"* ]]
	timeout 30 "$AGENTBOX" rm -f "$id"
	[ ! -e "$S/images/leases/$id" ]
	run curl -s --unix-socket "$sock" -XPOST http://x/v1/sandboxes -d '{"image":"localhost/none","pull":"never"}'
	echo "$output" | jq -e '.error.code == "not_found"'
	run img rm localhost/a:1
	[ "$status" -eq 0 ]
}
