# A small Debian root made from the host's own files, in seconds, for the
# tests that need an image with real tools (python3 with pip and ctypes,
# curl, coreutils, util-linux) without the minutes-long mmdebstrap build
# of scripts/build-images and without a network:
#
#   make_host_image DIR     DIR/ becomes the root (one layer, root-owned)
#
# What is in it: the listed commands of the host's Debian packages with
# every shared library they and Python's extension modules load (ldd), the
# loader, Python's standard library (/usr/lib/python3.11) and Debian's
# pip (python3-pip, with its vendored dependencies), the CA bundle,
# os-release, and an /etc of the image's own: passwd and group with root
# and user 1000 (u), a shadow whose root hash is the image's (not the
# host's), hosts.  The merged /usr layout (bin -> usr/bin...) is the
# host's.  Files are copies: nothing of the host is shared with a sandbox
# that writes to its root.
#
# HOST_IMAGE_WHY is set when the host lacks something (then it returns 1).
# shellcheck disable=SC2034 # HOST_IMAGE_WHY is the caller's to read

HOST_IMAGE_COMMANDS=(sh dash bash cat ls stat cut head tail tr od id env sleep mkdir rm rmdir
	touch grep sort timeout seq true false echo pwd wc sed ln cp mv chmod find xargs uname
	curl unshare mount umount ps kill python3)

make_host_image() {
	local root="$1" py c p libs
	HOST_IMAGE_WHY=
	py=/usr/bin/python3
	if [ ! -x "$py" ] || [ ! -d /usr/lib/python3.11 ]; then
		HOST_IMAGE_WHY="the host has no Debian python3.11 (/usr/bin/python3)"
		return 1
	fi
	mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" \
		"$root/etc/ssl/certs" "$root/tmp" "$root/root" "$root/home/u" "$root/var/tmp" \
		"$root/usr/local/lib/python3.11/dist-packages"
	for c in bin sbin lib lib64; do
		[ -L "/$c" ] && ln -sfn "$(readlink "/$c")" "$root/$c"
	done
	libs="$root.libs"
	: >"$libs"
	for c in "${HOST_IMAGE_COMMANDS[@]}"; do
		p="$(PATH=/usr/bin:/usr/sbin:/bin:/sbin type -P "$c")" || {
			HOST_IMAGE_WHY="the host has no $c"
			return 1
		}
		p="$(readlink -f "$p")"
		cp -a "$p" "$root$p"
		# The name the command is called by, when it is a link (python3).
		[ "$c" = python3 ] && ln -sfn "$(basename "$p")" "$root/usr/bin/python3"
		ldd "$p" 2>/dev/null >>"$libs" || true
	done
	ln -sfn dash "$root/usr/bin/sh"
	cp -a /usr/lib/python3.11 "$root/usr/lib/"
	# Not what a test runs; EXTERNALLY-MANAGED would make pip refuse
	# (PEP 668) where a container image's python lets root install.
	rm -rf "$root/usr/lib/python3.11/"{test,idlelib,tkinter,turtledemo,lib2to3,pydoc_data,ensurepip} \
		"$root/usr/lib/python3.11/EXTERNALLY-MANAGED"
	find "$root/usr/lib/python3.11" -name __pycache__ -prune -exec rm -rf {} +
	if [ -d /usr/lib/python3/dist-packages/pip ]; then
		mkdir -p "$root/usr/lib/python3/dist-packages"
		cp -a /usr/lib/python3/dist-packages/pip /usr/lib/python3/dist-packages/pip-*.dist-info \
			"$root/usr/lib/python3/dist-packages/" 2>/dev/null || true
	fi
	for p in /usr/lib/python3.11/lib-dynload/*.so; do
		ldd "$p" 2>/dev/null >>"$libs" || true
	done
	# "libx.so.1 => /lib/x86_64-linux-gnu/libx.so.1 (0x...)" and the loader's own line.
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$libs" | sort -u |
		while read -r p; do
			mkdir -p "$root$(dirname "$p")"
			cp -L "$p" "$root$p"
		done
	rm -f "$libs"
	cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true
	cp -L /etc/os-release "$root/etc/os-release"
	printf 'root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nu:x:1000:\n' >"$root/etc/group"
	printf 'root:image-own-hash:19000:0:99999:7:::\nu:!:19000:0:99999:7:::\n' >"$root/etc/shadow"
	printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
	chmod 0640 "$root/etc/shadow"
	chmod 1777 "$root/tmp" "$root/var/tmp"
	chmod 0700 "$root/root"
	chown 1000:1000 "$root/home/u"
}
