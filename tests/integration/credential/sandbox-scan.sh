#!/bin/bash
# Run inside a sandbox by run-credential.bats: looks for the real secret
# everywhere the sandbox can read.  The secret arrives reversed in $REV,
# so it is in no argv and no environment here; it exists un-reversed only
# in the pipes below and in the memory of the grep and perl that read them
# (perl skips itself).  $TOKEN_FILE_PROBE (a tmpfs file holding the token)
# proves the file search works; the token in env and memory proves the
# others do.  Output: one line per check, "<check> secret=<0|1> token=<0|1>".
set -u
needle() { printf '%s' "$REV" | rev; }
hit() { if "$@"; then echo 1; else echo 0; fi; }
dir="$(dirname "$0")"

# environment
echo "env secret=$(hit grep -q -F -f <(needle) <(env)) token=$(hit grep -q -F "$AGENTBOX_CREDENTIAL_TOKEN" <(env))"

# every file but /proc (and /usr, below), bounded in time
printf '%s\n' "$AGENTBOX_CREDENTIAL_TOKEN" >/tmp/token-probe
s=$(hit timeout 60 grep -r -q -s -D skip -F -f <(needle) / --exclude-dir=proc --exclude-dir=usr)
t=$(hit timeout 60 grep -r -q -s -D skip -F "$AGENTBOX_CREDENTIAL_TOKEN" / --exclude-dir=proc --exclude-dir=usr)
echo "files secret=$s token=$t"
# /usr is the host's read-only tree, gigabytes here: what changed since the
# test started is searched (nothing, normally), the rest cannot hold a
# secret made up by the test.
mapfile -t changed < <(find /usr -type f -newermt "@$START" 2>/dev/null)
s=0
[ "${#changed[@]}" -gt 0 ] && s=$(hit grep -q -s -F -f <(needle) "${changed[@]}")
echo "usr-changed secret=$s token=0 files=${#changed[@]}"

# what every process shows of itself
s=$(hit grep -q -s -F -f <(needle) /proc/[0-9]*/environ /proc/[0-9]*/cmdline)
t=$(hit grep -q -s -F "$AGENTBOX_CREDENTIAL_TOKEN" /proc/[0-9]*/environ)
echo "proc secret=$s token=$t"

# every process's readable memory
perl "$dir/sandbox-scan-mem.pl" <(needle)
