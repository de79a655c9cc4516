/* Unit tests for the microVM guest's boot configuration (src/proto/vm-boot.c):
 * what the host encodes the guest parses back to the same entries, odd
 * bytes in paths survive the kernel command line, and every malformed
 * parameter is refused (the agent must not build a root from a guess). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/vm-boot.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static void
test_roundtrip (void **state)
{
	struct ab_vm_boot_s b = { .hostname = strdup ("box-1.example"), .pids = 512 }, back;
	ab_error_t err = AB_ERROR_INIT;
	char *line, *cmdline;

	ab_vm_boot_add (&b, AB_VM_RO, "r0", "/usr", NULL, 0);
	ab_vm_boot_add (&b, AB_VM_LINK, NULL, "/bin", "usr/bin", 0);
	ab_vm_boot_add (&b, AB_VM_RW, "ws", "/workspace", NULL, 0);
	ab_vm_boot_add (&b, AB_VM_TMPFS, NULL, "/data/scratch", NULL, 1 << 20);
	ab_vm_boot_add (&b, AB_VM_MASK, NULL, "/etc/ssl/private", NULL, 0);
	ab_vm_boot_add (&b, AB_VM_RO, "m1", "/with space/comma,%percent\"quote", NULL, 0);
	line = ab_vm_boot_encode (&b, &err);
	assert_non_null (line);
	assert_null (strchr (line, '"'));
	assert_null (strstr (line, "with space"));
	cmdline = NULL;
	assert_true (
	        asprintf (&cmdline, "console=ttyS0 quiet %s panic=-1 -- --vm agentbox.m=x", line)
	        > 0);
	assert_int_equal (ab_vm_boot_parse (cmdline, &back, &err), 0);
	assert_string_equal (back.hostname, "box-1.example");
	assert_int_equal (back.pids, 512);
	assert_int_equal (back.n_entries, b.n_entries);
	for (size_t i = 0; i < b.n_entries; i++) {
		const struct ab_vm_entry_s *x = &b.entries[i], *y = &back.entries[i];
		assert_int_equal (x->kind, y->kind);
		if (x->tag)
			assert_string_equal (x->tag, y->tag);
		if (x->path)
			assert_string_equal (x->path, y->path);
		if (x->target)
			assert_string_equal (x->target, y->target);
		assert_int_equal (x->size, y->size);
	}
	free (line);
	free (cmdline);
	ab_vm_boot_free (&b);
	ab_vm_boot_free (&back);
}

static void
test_root_and_defaults (void **state)
{
	struct ab_vm_boot_s b;
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (ab_vm_boot_parse ("quiet agentbox.m=root,img", &b, &err), 0);
	assert_string_equal (b.hostname, "agentbox");
	assert_int_equal (b.n_entries, 1);
	assert_int_equal (b.entries[0].kind, AB_VM_ROOT);
	assert_string_equal (b.entries[0].tag, "img");
	ab_vm_boot_free (&b);
}

static void
test_disk_root (void **state)
{
	struct ab_vm_boot_s b = { 0 }, back;
	ab_error_t err = AB_ERROR_INIT;
	char *line;

	b.hostname = strdup ("vm");
	ab_vm_boot_add (&b, AB_VM_DISK, "rw", NULL, NULL, 0);
	line = ab_vm_boot_encode (&b, &err);
	assert_non_null (line);
	assert_non_null (strstr (line, " agentbox.m=disk,rw"));
	assert_int_equal (ab_vm_boot_parse (line, &back, &err), 0);
	assert_int_equal (back.n_entries, 1);
	assert_int_equal (back.entries[0].kind, AB_VM_DISK);
	assert_string_equal (back.entries[0].tag, "rw");
	assert_null (back.entries[0].path);
	free (line);
	ab_vm_boot_free (&back);
	ab_vm_boot_free (&b);
}

static const char *const bad_lines[] = {
	"agentbox.m=disk",
	"agentbox.m=disk,rx",
	"agentbox.m=disk,rw,/x",
	"agentbox.m=ro,r0,/usr/../etc",
	"agentbox.m=ro,r0,usr",
	"agentbox.m=ro,r0,/",
	"agentbox.m=ro,r0,/usr/",
	"agentbox.m=ro,r0,//usr",
	"agentbox.m=ro,r0,/a/./b",
	"agentbox.m=ro,r0,/a%2F..%2Fb/%2E%2E",
	"agentbox.m=ro,r0,/a%2F..",
	"agentbox.m=ro,r0,/a%00b",
	"agentbox.m=ro,r0,/a%",
	"agentbox.m=ro,r0,/a%4",
	"agentbox.m=ro,r0,/a%zz",
	"agentbox.m=ro,,/usr",
	"agentbox.m=ro,bad/tag,/usr",
	"agentbox.m=ro,0123456789012345678901234567890123,/usr",
	"agentbox.m=ro,r0",
	"agentbox.m=ro,r0,/usr,extra",
	"agentbox.m=ro,r0,/usr,a,b",
	"agentbox.m=tmpfs,/tmp,-1",
	"agentbox.m=tmpfs,/tmp,12k",
	"agentbox.m=tmpfs,/tmp,",
	"agentbox.m=tmpfs,/tmp,99999999999999999999999",
	"agentbox.m=link,/bin,",
	"agentbox.m=mask",
	"agentbox.m=root",
	"agentbox.m=unknown,/x",
	"agentbox.m=",
	"agentbox.host=",
	"agentbox.host=a_b",
	"agentbox.host=0123456789012345678901234567890123456789012345678901234567890123456789",
	"agentbox.pids=lots",
	"agentbox.pids=",
	"agentbox.whatever=1",
};

static void
test_refused (void **state)
{
	for (size_t i = 0; i < N (bad_lines); i++) {
		struct ab_vm_boot_s b;
		ab_error_t err = AB_ERROR_INIT;
		if (ab_vm_boot_parse (bad_lines[i], &b, &err) != -1)
			fail_msg ("accepted: %s", bad_lines[i]);
		assert_true (err.msg[0] != '\0');
	}
}

static void
test_encode_refuses_bad_entries (void **state)
{
	struct ab_vm_boot_s b = { .hostname = strdup ("h") };
	ab_error_t err = AB_ERROR_INIT;

	ab_vm_boot_add (&b, AB_VM_RW, "ws", "/workspace/../etc", NULL, 0);
	assert_null (ab_vm_boot_encode (&b, &err));
	assert_non_null (strstr (err.msg, "path"));
	ab_vm_boot_free (&b);
	b.hostname = strdup ("bad host");
	assert_null (ab_vm_boot_encode (&b, &err));
	ab_vm_boot_free (&b);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_roundtrip),
		cmocka_unit_test (test_root_and_defaults),
		cmocka_unit_test (test_disk_root),
		cmocka_unit_test (test_refused),
		cmocka_unit_test (test_encode_refuses_bad_entries),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
