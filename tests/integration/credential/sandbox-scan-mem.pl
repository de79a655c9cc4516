#!/usr/bin/perl
# sandbox-scan-mem.pl NEEDLE_FILE: reads every readable mapping of every
# process it may open /proc/PID/mem of (itself excepted: it holds the
# needle), plus a child of its own (readable even under Yama ptrace_scope
# 1), looking for the needle and for $AGENTBOX_CREDENTIAL_TOKEN.
# Output: "mem secret=S token=T pids=N bytes=B unreadable=U".
use strict;
no warnings 'portable';

my $secret = do { open my $f, '<', $ARGV[0] or die "needle: $!"; local $/; <$f> };
my $token = $ENV{AGENTBOX_CREDENTIAL_TOKEN};
die "empty needle" unless length $secret && length $token;

my $child = fork // die "fork: $!";
if ($child == 0) { exec 'sleep', '30' or exit 1; }
select undef, undef, undef, 0.2;

my ($s_hit, $t_hit, $pids, $bytes, $unreadable) = (0, 0, 0, 0, 0);
for my $dir (glob '/proc/[0-9]*') {
	my ($pid) = $dir =~ m{(\d+)$};
	next if $pid == $$;
	my ($maps, $mem);
	unless (open ($maps, '<', "$dir/maps") && open ($mem, '<:raw', "$dir/mem")) {
		$unreadable++;
		next;
	}
	$pids++;
	while (my $l = <$maps>) {
		my ($s, $e, $perm) = $l =~ /^([0-9a-f]+)-([0-9a-f]+) (\S+)/ or next;
		next if $perm !~ /^r/ || $l =~ /\[(vvar|vsyscall)\]/;
		my $tail = '';
		for (my $a = hex $s; $a < hex $e; $a += 1 << 20) {
			my $len = hex ($e) - $a;
			$len = 1 << 20 if $len > 1 << 20;
			my $buf;
			sysseek ($mem, $a, 0) or last;
			my $n = sysread ($mem, $buf, $len);
			last unless $n;
			$bytes += $n;
			my $chunk = $tail . $buf;
			$s_hit = 1 if index ($chunk, $secret) >= 0;
			$t_hit = 1 if index ($chunk, $token) >= 0;
			$tail = substr ($buf, -256);
		}
	}
}
kill 'KILL', $child;
waitpid $child, 0;
print "mem secret=$s_hit token=$t_hit pids=$pids bytes=$bytes unreadable=$unreadable\n";
