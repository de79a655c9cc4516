/* Unit tests for the microVM backend's pure parts: QEMU's command line
 * (src/backend/qemu.c) has no network device, no defaults, the right
 * accelerator and escapes option values; limits map to -m and -smp; the
 * layout (src/backend/microvm-layout.c) shares what the spec says and
 * finds what "others" cannot read. */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/microvm-internal.h"
#include "backend/qemu.h"

static const struct ab_qemu_share_s shares[] = {
	{ "h0", "/usr", true },
	{ "ws", "/srv/a,b", false },
};

static struct ab_qemu_vm_s
sample_vm (void)
{
	return (struct ab_qemu_vm_s){
		.kvm = false,
		.memory_mib = 256,
		.cpus = 2,
		.kernel = "/g/vmlinux",
		.initrd = "/g/initrd.img",
		.append = "console=ttyS0 -- --vm",
		.console_log = "/run/x,y/console.log",
		.port_name = "org.agentbox.mux",
		.shares = shares,
		.n_shares = 2,
	};
}

/* The value after option `opt` (the n-th occurrence), or NULL. */
static const char *
opt_value (char **argv, const char *opt, int nth)
{
	for (size_t i = 0; argv[i]; i++)
		if (strcmp (argv[i], opt) == 0 && argv[i + 1] && nth-- == 0)
			return argv[i + 1];
	return NULL;
}

static bool
has_arg (char **argv, const char *arg)
{
	for (size_t i = 0; argv[i]; i++)
		if (strcmp (argv[i], arg) == 0)
			return true;
	return false;
}

static void
test_argv (void **state)
{
	struct ab_qemu_vm_s vm = sample_vm ();
	ab_error_t err = AB_ERROR_INIT;
	char **argv = ab_qemu_argv (&vm, &err);

	assert_non_null (argv);
	assert_string_equal (argv[0], AB_QEMU_BINARY);
	assert_true (has_arg (argv, "-nodefaults"));
	assert_true (has_arg (argv, "-no-user-config"));
	assert_true (has_arg (argv, "-no-reboot"));
	assert_string_equal (opt_value (argv, "-nic", 0), "none");
	assert_null (opt_value (argv, "-netdev", 0));
	assert_string_equal (opt_value (argv, "-accel", 0), "tcg");
	assert_string_equal (opt_value (argv, "-cpu", 0), "max");
	assert_string_equal (opt_value (argv, "-m", 0), "256");
	assert_string_equal (opt_value (argv, "-smp", 0), "2");
	assert_non_null (strstr (opt_value (argv, "-M", 0), "microvm"));
	assert_non_null (strstr (opt_value (argv, "-sandbox", 0), "spawn=deny"));
	assert_string_equal (opt_value (argv, "-append", 0), "console=ttyS0 -- --vm");
	/* Commas in paths are doubled, QEMU's escape. */
	assert_string_equal (opt_value (argv, "-chardev", 0),
	                     "file,id=console,path=/run/x,,y/console.log");
	assert_string_equal (opt_value (argv, "-chardev", 1), "socket,id=mux,fd=3");
	assert_non_null (strstr (opt_value (argv, "-fsdev", 0), "path=/usr,"));
	assert_non_null (strstr (opt_value (argv, "-fsdev", 0), "readonly=on"));
	assert_non_null (strstr (opt_value (argv, "-fsdev", 1), "path=/srv/a,,b,"));
	assert_null (strstr (opt_value (argv, "-fsdev", 1), "readonly"));
	assert_string_equal (opt_value (argv, "-device", 3),
	                     "virtio-9p-device,fsdev=fs1,mount_tag=ws");
	ab_qemu_argv_free (argv);

	vm.kvm = true;
	argv = ab_qemu_argv (&vm, &err);
	assert_string_equal (opt_value (argv, "-accel", 0), "kvm");
	assert_string_equal (opt_value (argv, "-cpu", 0), "host");
	assert_null (opt_value (argv, "-drive", 0));
	ab_qemu_argv_free (argv);

	/* A layered root's disk: read-only to QEMU as well, the path escaped. */
	vm.root_disk = "/var/cache/a,b/k.ext4";
	argv = ab_qemu_argv (&vm, &err);
	assert_string_equal (opt_value (argv, "-drive", 0),
	                     "file=/var/cache/a,,b/k.ext4,format=raw,if=none,id=root,readonly=on");
	assert_true (has_arg (argv, "virtio-blk-device,drive=root"));
	ab_qemu_argv_free (argv);
}

static void
test_argv_refused (void **state)
{
	struct ab_qemu_share_s bad[] = { { "Bad Tag", "/x", true } };
	struct ab_qemu_vm_s vm;
	ab_error_t err = AB_ERROR_INIT;

	vm = sample_vm ();
	vm.memory_mib = 64;
	assert_null (ab_qemu_argv (&vm, &err));
	vm = sample_vm ();
	vm.cpus = 0;
	assert_null (ab_qemu_argv (&vm, &err));
	vm = sample_vm ();
	vm.cpus = AB_QEMU_MAX_CPUS + 1;
	assert_null (ab_qemu_argv (&vm, &err));
	vm = sample_vm ();
	vm.shares = bad;
	vm.n_shares = 1;
	assert_null (ab_qemu_argv (&vm, &err));
	vm = sample_vm ();
	vm.kernel = NULL;
	assert_null (ab_qemu_argv (&vm, &err));
}

static void
test_limits (void **state)
{
	assert_int_equal (ab_qemu_memory_mib (0), 2048);
	assert_int_equal (ab_qemu_memory_mib (64ULL << 20), AB_QEMU_MIN_MEMORY_MIB);
	assert_int_equal (ab_qemu_memory_mib (3ULL << 30), 3072);
	assert_int_equal (ab_qemu_memory_mib ((512ULL << 20) + 123), 512);
	assert_int_equal (ab_qemu_cpus (0), 1);
	assert_int_equal (ab_qemu_cpus (500), 1);
	assert_int_equal (ab_qemu_cpus (1000), 1);
	assert_int_equal (ab_qemu_cpus (1500), 2);
	assert_int_equal (ab_qemu_cpus (1000000), AB_QEMU_MAX_CPUS);
}

static void
test_escape (void **state)
{
	char *s = ab_qemu_escape (",a,,b,");
	assert_string_equal (s, ",,a,,,,b,,");
	free (s);
}

static char tmp[] = "/tmp/test-microvm-XXXXXX";

static void
make (const char *rel, mode_t mode, bool dir)
{
	char p[256];
	snprintf (p, sizeof p, "%s/%s", tmp, rel);
	if (dir)
		assert_int_equal (mkdir (p, mode), 0);
	else
		assert_int_equal (close (open (p, O_CREAT | O_WRONLY, mode)), 0);
	assert_int_equal (chmod (p, mode), 0);
}

static bool
listed (char **v, const char *rel)
{
	char p[256];
	snprintf (p, sizeof p, "%s/%s", tmp, rel);
	for (size_t i = 0; v[i]; i++)
		if (strcmp (v[i], p) == 0)
			return true;
	return false;
}

static int
remove_one (const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove (path);
}

static void
test_unreadable (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	char link[256], **v;
	size_t n = 0;

	assert_non_null (mkdtemp (tmp));
	/* The host-mask cache goes beside the tree, never into the host's. */
	char cache[sizeof tmp + 8];
	snprintf (cache, sizeof cache, "%s-cache", tmp);
	setenv ("AGENTBOX_CACHE_DIR", cache, 1);
	make ("shadow", 0640, false);
	make ("passwd", 0644, false);
	make ("private", 0700, true);
	make ("private/key", 0600, false);
	make ("listonly", 0744, true);
	make ("ssl", 0755, true);
	make ("ssl/cert", 0644, false);
	make ("ssl/secret", 0600, false);
	snprintf (link, sizeof link, "%s/link", tmp);
	assert_int_equal (symlink ("shadow", link), 0);

	chmod (tmp, 0755); /* a closed top directory would be masked whole */
	v = ab_microvm_unreadable (tmp, &err);
	assert_non_null (v);
	for (; v[n]; n++)
		;
	assert_int_equal (n, 4);
	assert_true (listed (v, "shadow"));
	assert_true (listed (v, "private"));  /* not descended into */
	assert_true (listed (v, "listonly")); /* no o+x */
	assert_true (listed (v, "ssl/secret"));
	for (size_t i = 0; v[i]; i++)
		free (v[i]);
	free (v);

	/* A missing directory has nothing to hide. */
	v = ab_microvm_unreadable ("/nonexistent-dir-for-test", &err);
	assert_non_null (v);
	assert_null (v[0]);
	free (v);
	assert_int_equal (nftw (tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	assert_int_equal (nftw (cache, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void
test_layout_rootfs (void **state)
{
	struct ab_microvm_layout_s l;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_spec_s spec;

	ab_spec_init (&spec);
	spec.rootfs = strdup ("/srv/image");
	spec.workspace = strdup ("/srv/ws");
	ab_spec_add_mount (&spec, AB_MOUNT_TMPFS, NULL, "/scratch", 1 << 20);
	ab_spec_add_mount (&spec, AB_MOUNT_RO_BIND, "/usr/share", "/data", 0);
	assert_int_equal (ab_microvm_layout (&spec, &l, &err), 0);
	assert_int_equal (l.n_shares, 3);
	assert_string_equal (l.shares[0].tag, "root");
	assert_true (l.shares[0].readonly);
	assert_string_equal (l.shares[1].path, "/srv/ws");
	assert_false (l.shares[1].readonly);
	assert_string_equal (l.shares[2].path, "/usr/share");
	assert_int_equal (l.boot.n_entries, 4);
	assert_int_equal (l.boot.entries[0].kind, AB_VM_ROOT);
	assert_int_equal (l.boot.entries[1].kind, AB_VM_RW);
	assert_string_equal (l.boot.entries[1].path, "/workspace");
	assert_int_equal (l.boot.entries[2].kind, AB_VM_TMPFS);
	assert_int_equal (l.boot.entries[2].size, 1 << 20);
	assert_int_equal (l.boot.entries[3].kind, AB_VM_RO);
	assert_null (l.masks[0]); /* an image: nothing of the host's /etc */
	ab_microvm_layout_free (&l);

	/* 9p shares directories: a file bind is refused with a reason. */
	ab_spec_add_mount (&spec, AB_MOUNT_RO_BIND, "/proc/version", "/h", 0);
	assert_int_equal (ab_microvm_layout (&spec, &l, &err), -1);
	assert_non_null (strstr (err.msg, "directories only"));
	ab_microvm_layout_free (&l);
	ab_spec_free (&spec);
}

/* A layered root: one disk entry (rw, or ro with --read-only), no host
 * tree shared and nothing of the host's /etc masked. */
static void
test_layout_layers (void **state)
{
	struct ab_spec_s spec;
	struct ab_microvm_layout_s l;
	ab_error_t err = AB_ERROR_INIT;
	char *layers[] = { (char *)"/store/l1", (char *)"/store/l2", NULL };

	ab_spec_init (&spec);
	spec.root.layers = layers;
	spec.workspace = strdup ("/srv/ws");
	assert_int_equal (ab_microvm_layout (&spec, &l, &err), 0);
	assert_int_equal (l.n_shares, 1);
	assert_string_equal (l.shares[0].tag, "ws");
	assert_int_equal (l.boot.entries[0].kind, AB_VM_DISK);
	assert_string_equal (l.boot.entries[0].tag, "rw");
	assert_null (l.masks[0]);
	ab_microvm_layout_free (&l);
	spec.root.read_only = true;
	assert_int_equal (ab_microvm_layout (&spec, &l, &err), 0);
	assert_string_equal (l.boot.entries[0].tag, "ro");
	ab_microvm_layout_free (&l);
	spec.root.layers = NULL;
	ab_spec_free (&spec);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_argv),          cmocka_unit_test (test_argv_refused),
		cmocka_unit_test (test_limits),        cmocka_unit_test (test_escape),
		cmocka_unit_test (test_unreadable),    cmocka_unit_test (test_layout_rootfs),
		cmocka_unit_test (test_layout_layers),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
