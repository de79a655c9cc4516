#!/usr/bin/env bats
# Resolution through names the test controls: an /etc/hosts of our own,
# bind-mounted inside the test's private mount namespace (the host's
# /etc/hosts is never touched), with the proxy in the test's network
# namespace.  A name that resolves to a private or metadata address is
# denied; a name with one bad answer among good ones is denied; the address
# dialed is the vetted one.

load egress/common

ALL_DENY=(--deny-loopback --deny-private --deny-link-local --deny-metadata)

setup() {
	eg_setup
	cat >"$T/hosts" <<-'EOF'
		127.0.0.1 good.test
		::1 good6.test
		10.1.2.3 private.test
		169.254.169.254 meta.test
		fd00:ec2::254 meta6.test
		100.100.100.200 alibaba-meta.test
		127.0.0.1 mixed.test
		10.1.2.3 mixed.test
		::ffff:10.1.2.3 mapped.test
	EOF
	# The mount namespace is the test's own (eg_setup checked it differs
	# from ours), so this bind mount is invisible to the host.
	inns mount --bind "$T/hosts" /etc/hosts
	[ "$(inns cat /etc/hosts)" = "$(cat "$T/hosts")" ]
	[ "$(cat /etc/hosts)" != "$(cat "$T/hosts")" ]
	start_origin WEB
}

teardown() {
	eg_teardown
}

# denied URL REASON
denied() {
	run -0 pcurl -w '\n%{http_code}' "$1"
	echo "$1 -> $output"
	[ "${lines[1]}" = 403 ]
	[ "${lines[0]}" = "egress denied: $2" ]
}

@test "a name resolving to an allowed address is dialed at that vetted address" {
	start_proxy "${ALL_DENY[@]}" --resolve-before-connect --allow-cidr 127.0.0.1/32 --allow-cidr ::1/128
	run -0 pcurl "http://good.test:$WEB_PORT/bytes/4"
	[ "$output" = 0123 ]
	grep -qx "GET good.test:$WEB_PORT -> 127.0.0.1:$WEB_PORT" "$T/proxy.err"
	[ "$(audit_last .host)" = good.test ]
	[ "$(audit_last .addr)" = "127.0.0.1:$WEB_PORT" ]
	[ "$(audit_last .reason)" = "allowed by allow-cidr 127.0.0.1/32" ]
	run -0 pcurl --proxytunnel "http://good.test:$WEB_PORT/bytes/2"
	[ "$output" = 01 ]
	grep -qx "CONNECT good.test:$WEB_PORT -> 127.0.0.1:$WEB_PORT" "$T/proxy.err"
	# IPv6 answers are vetted and dialed the same way (the origin listens on
	# IPv4 only, so the dial fails, at the vetted address).
	run -0 pcurl -w '\n%{http_code}' "http://good6.test:$WEB_PORT/bytes/1"
	[ "${lines[-1]}" = 502 ]
	grep -qx "GET good6.test:$WEB_PORT -> \[::1\]:$WEB_PORT" "$T/proxy.err"
}

@test "names resolving to private or metadata addresses are denied, nothing dialed" {
	start_proxy "${ALL_DENY[@]}" --resolve-before-connect --allow-cidr 127.0.0.1/32
	denied "http://private.test:$WEB_PORT/" "private address 10.1.2.3"
	denied "http://meta.test/latest/meta-data/" "metadata address 169.254.169.254"
	denied "http://meta6.test/" "metadata address fd00:ec2::254"
	denied "http://alibaba-meta.test/" "metadata address 100.100.100.200"
	denied "http://mapped.test/" "private address ::ffff:10.1.2.3 (IPv4-mapped form of 10.1.2.3)"
	grep -qx "GET meta.test:80 denied: metadata address 169.254.169.254" "$T/proxy.err"
	[ "$(audit_last .host)" = mapped.test ]
	[ "$(audit_last .decision)" = deny ]
	! grep -q -- ' -> ' "$T/proxy.err"
}

@test "one bad answer among good ones denies the name (no race for which is dialed)" {
	start_proxy "${ALL_DENY[@]}" --resolve-before-connect --allow-cidr 127.0.0.1/32
	denied "http://mixed.test:$WEB_PORT/bytes/1" "private address 10.1.2.3"
	run -0 bash -c "printf 'CONNECT mixed.test:$WEB_PORT HTTP/1.1\r\nHost: x\r\n\r\n' | nsenter -t $NS_PID -n -m -- $CLIENT raw $PROXY_PORT"
	[[ "$output" == "HTTP/1.1 403 Forbidden"$'\r\n'*"egress denied: private address 10.1.2.3" ]]
	grep -qx "CONNECT mixed.test:$WEB_PORT denied: private address 10.1.2.3" "$T/proxy.err"
	! grep -q -- ' -> ' "$T/proxy.err"
}

@test "without --resolve-before-connect names are refused before any lookup" {
	start_proxy "${ALL_DENY[@]}" --allow-cidr 127.0.0.1/32
	denied "http://good.test:$WEB_PORT/" "name resolution is disabled"
	denied "http://private.test/" "name resolution is disabled"
}

@test "unknown names: 502, the resolver answers within its deadline" {
	start_proxy --resolve-before-connect --resolve-timeout 3
	run -0 pcurl -w '\n%{http_code}' "http://nonexistent.test/"
	[ "${lines[-1]}" = 502 ]
	[[ "${lines[0]}" == "cannot resolve nonexistent.test: "* ]]
}

@test "rebinding: when the name later resolves to a private address, the next decision denies it" {
	start_proxy "${ALL_DENY[@]}" --resolve-before-connect --allow-cidr 127.0.0.1/32
	run -0 pcurl "http://good.test:$WEB_PORT/bytes/2"
	# Rewrite in place: the bind mount follows the inode, not the name.
	echo "10.9.9.9 good.test" >"$T/hosts"
	[ "$(inns grep good.test /etc/hosts)" = "10.9.9.9 good.test" ]
	denied "http://good.test:$WEB_PORT/bytes/2" "private address 10.9.9.9"
	[ "$(grep -c "^GET good.test:$WEB_PORT -> 127.0.0.1:$WEB_PORT\$" "$T/proxy.err")" -eq 1 ]
}
