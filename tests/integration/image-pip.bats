#!/usr/bin/env bats
# `pip install` into an image's writable root, through --network proxy,
# from a package index this test serves: the image is a Debian root made
# from the host's own python3, pip and libraries (host-image.bash: seconds,
# where the workspace image of scripts/build-images takes minutes and
# mmdebstrap), imported into a private store with `agentbox image import`
# and run with `--image`.  The index is `python3 -m http.server` over a
# PEP 503 directory holding a wheel the test builds (a zip with METADATA,
# WHEEL and RECORD), on 127.0.0.2 in a network namespace of the test's own
# (unshare --net), allowed by the egress policy.  pip reaches it only
# through the egress proxy (the sandbox has no other network); the package
# lands in the sandbox's upper layer, the import works, and nothing of it
# is left in the store's layers, the host's Python or the next sandbox.

load run-common.bash

setup_file() {
	load host-image.bash
	export IMG_STATE="$BATS_FILE_TMPDIR/state" INDEX="$BATS_FILE_TMPDIR/index"
	export IMG_REF=localhost/agentbox-test-hostpy:1 IMG_WHY=
	if ! make_host_image "$BATS_FILE_TMPDIR/root"; then
		IMG_WHY="$HOST_IMAGE_WHY"
		return 0
	fi
	if [ ! -d "$BATS_FILE_TMPDIR/root/usr/lib/python3/dist-packages/pip" ]; then
		IMG_WHY="the image has no pip: the host lacks python3-pip (Debian), which the image is made from"
		return 0
	fi
	"$AGENTBOX" image --state-dir "$IMG_STATE" import "$BATS_FILE_TMPDIR/root" "$IMG_REF" >&2
	rm -rf "$BATS_FILE_TMPDIR/root"
	make_index "$INDEX"
}

# A PEP 503 "simple" index with one pure-Python wheel, abtestpkg 1.0.
make_index() {
	python3 - "$1" <<'EOF'
import base64, hashlib, os, sys, zipfile
idx, name, ver = sys.argv[1], "abtestpkg", "1.0"
info = f"{name}-{ver}.dist-info"
files = {
    f"{name}/__init__.py": b'def hello():\n    return "hello from abtestpkg"\n',
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n".encode(),
    f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: agentbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{path},sha256={digest},{len(data)}\n"
files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
whl = f"{name}-{ver}-py3-none-any.whl"
os.makedirs(f"{idx}/simple/{name}", exist_ok=True)
with zipfile.ZipFile(f"{idx}/simple/{name}/{whl}", "w") as z:
    for path, data in files.items():
        z.writestr(path, data)
with open(f"{idx}/simple/{name}/{whl}", "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
with open(f"{idx}/simple/{name}/index.html", "w") as f:
    f.write(f'<html><body><a href="{whl}#sha256={sha}">{whl}</a></body></html>\n')
with open(f"{idx}/simple/index.html", "w") as f:
    f.write(f'<html><body><a href="{name}/">{name}</a></body></html>\n')
EOF
}

setup() {
	[ -z "$IMG_WHY" ] || skip "$IMG_WHY"
	ab_setup
	host_snapshot >"$BATS_TEST_TMPDIR/before"
}

teardown() {
	ab_teardown
}

# in_index_netns BACKEND CMD: agentbox run of the image on BACKEND, in a
# network namespace where the index listens on 127.0.0.2:8080 (its access
# log in $BATS_TEST_TMPDIR/index.log).
in_index_netns() {
	export AGENTBOX WS IMG_STATE IMG_REF INDEX
	timeout -k 2 120 unshare --net bash -c '
		ip link set lo up
		python3 -m http.server --bind 127.0.0.2 --directory "$INDEX" 8080 2>"$3" & srv=$!
		for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.2/8080) 2>/dev/null && break; sleep 0.1; done
		"$AGENTBOX" run --backend "$1" --state-dir "$IMG_STATE" --image "$IMG_REF" --pull never \
			--workspace "$WS" --network proxy --allow-cidr 127.0.0.2/32 --allow-host 127.0.0.2 \
			-- sh -c "$2" </dev/null
		rc=$?; kill "$srv"; wait "$srv" 2>/dev/null; exit $rc' _ "$1" "$2" "$BATS_TEST_TMPDIR/index.log"
}

check_pip() {
	local b="$1"
	run in_index_netns "$b" 'python3 -m pip install --disable-pip-version-check --no-cache-dir \
			--index-url http://127.0.0.2:8080/simple/ abtestpkg 2>&1 | tail -n 3
		python3 -c "import abtestpkg; print(abtestpkg.hello()); print(abtestpkg.__file__)"
		env | grep -c "^HTTP_PROXY=http://127.0.0.1:3128"'
	echo "$output"
	cat "$BATS_TEST_TMPDIR/index.log"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Successfully installed abtestpkg-1.0"* ]]
	[[ "$output" == *"hello from abtestpkg"* ]]
	# Into the image's root (Debian's pip as root: /usr/local), not /workspace.
	[[ "$output" == *"/usr/local/lib/python3.11/dist-packages/abtestpkg/__init__.py"* ]]
	# The index was asked, over the proxy, for the page and the wheel.
	grep -q 'GET /simple/abtestpkg/ ' "$BATS_TEST_TMPDIR/index.log"
	grep -q 'GET /simple/abtestpkg/abtestpkg-1.0-py3-none-any.whl' "$BATS_TEST_TMPDIR/index.log"
	# The next sandbox of the image starts without it; the store's layers,
	# the host's Python and the workspace never had it.
	run timeout -k 2 60 "$AGENTBOX" run --backend "$b" --state-dir "$IMG_STATE" --image "$IMG_REF" \
		--pull never --workspace "$WS" -- python3 -c 'import abtestpkg' </dev/null
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"No module named 'abtestpkg'"* ]]
	[ -z "$(find "$IMG_STATE/images/layers" -name 'abtestpkg*' | head -1)" ]
	[ -z "$(find /usr/lib/python3* /usr/local/lib/python3* -maxdepth 3 -name 'abtestpkg*' 2>/dev/null | head -1)" ]
	! /usr/bin/python3 -c 'import abtestpkg' 2>/dev/null
	[ -z "$(find "$WS" -name 'abtestpkg*')" ]
	assert_nothing_left "$BATS_TEST_TMPDIR/before"
}

@test "native: pip install from a local index through --network proxy into the image's writable root" {
	check_pip native
}

@test "gvisor: pip install from a local index through --network proxy into the image's writable root" {
	command -v runsc >/dev/null || skip "runsc not installed"
	check_pip gvisor
}
