/* The microVM backend: QEMU's `-M microvm` with a Debian kernel and an
 * initramfs whose /init is agentbox-agent (scripts/build-guest,
 * docs/microvm.md).  A hardware-virtualised wall under KVM; under TCG
 * (QEMU's emulator) only when asked for (--microvm-accel tcg): it is slow,
 * and QEMU does not treat TCG as a security boundary, so `auto` never
 * falls back to it.
 *
 * Service mode only: the detached monitor (monitor.h) owns QEMU and serves
 * the agent's socket itself, multiplexing its clients over one
 * virtio-serial port (vsock needs vhost-vsock on the host, which is not
 * always there).  The workspace and the host directories are 9p shares;
 * a layered root (--image) is an ext4 disk of the merged layers. */
#include "backend/microvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/microvm-internal.h"
#include "backend/monitor.h"
#include "backend/pause.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define DEFAULT_GUEST_DIR "/var/lib/agentbox/guest"
/* How long a guest may take to say HELLO.  Under KVM a working host boots
 * it in well under a second; under TCG it takes 3 to 4 s here, more on a
 * loaded host (the daemon gives a creation 60 s). */
#define BOOT_KVM_MS 20000
#define BOOT_TCG_MS 50000
/* The probe's budget: a host whose KVM cannot run the guest (it hangs, or
 * QEMU aborts) must not hold `agentbox doctor` or `auto` for long. */
#define PROBE_BOOT_MS 10000

static int boot_budget_override_ms;

const char *
ab_microvm_guest_dir (void)
{
	const char *env = getenv ("AGENTBOX_GUEST_DIR");
	return env && env[0] == '/' ? env : DEFAULT_GUEST_DIR;
}

/* ---- the cheap checks, each naming what is missing ------------------------------ */

static bool
in_path (const char *name, const char *more)
{
	const char *path = getenv ("PATH");
	cleanup_free char *copy =
	        xasprintf ("%s:%s", path && path[0] ? path : "/usr/bin:/bin", more);
	char *save = NULL;

	for (char *d = strtok_r (copy, ":", &save); d; d = strtok_r (NULL, ":", &save)) {
		cleanup_free char *p = xasprintf ("%s/%s", d, name);
		if (access (p, X_OK) == 0)
			return true;
	}
	return false;
}

static int
check_qemu (ab_error_t *err)
{
	if (in_path (AB_QEMU_BINARY, ""))
		return 0;
	return ab_error (
	        err, 0, AB_E_NOT_FOUND,
	        "%s not found in PATH (Debian: qemu-system-x86; scripts/install-deps microvm)",
	        AB_QEMU_BINARY);
}

/* A layered root becomes an ext4 disk built on the host from the layers'
 * overlay (microvm-disk.c): mounting that overlay needs root, as native's
 * layered root does, and the disk needs mke2fs (e2fsprogs). */
static int
check_layered (ab_error_t *err)
{
	if (geteuid () != 0)
		return ab_error (err, EPERM, AB_E_DENIED,
		                 "a layered root (--image) on the microvm backend needs agentbox "
		                 "to run as root (its disk is built from the layers' overlay)");
	if (!in_path ("mke2fs", "/usr/sbin:/sbin"))
		return ab_error (err, 0, AB_E_NOT_FOUND,
		                 "mke2fs not found (Debian: e2fsprogs), needed for a layered root");
	return 0;
}

static int
check_guest (const char *dir, ab_error_t *err)
{
	static const char *const files[] = { AB_MICROVM_KERNEL, AB_MICROVM_INITRD };

	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		cleanup_free char *p = xasprintf ("%s/%s", dir, files[i]);
		if (access (p, R_OK) < 0)
			return ab_error (err, errno, AB_E_NOT_FOUND,
			                 "no microVM guest: %s (build it with scripts/build-guest; "
			                 "AGENTBOX_GUEST_DIR picks the directory)",
			                 p);
	}
	return 0;
}

static int
check_kvm (ab_error_t *err)
{
	cleanup_close int fd = open ("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return ab_error (
		        err, errno, AB_E_NOT_FOUND,
		        "/dev/kvm is not usable (--microvm-accel tcg runs under emulation)");
	return 0;
}

static int
check_all (bool kvm, ab_error_t *err)
{
	if (check_qemu (err) < 0 || check_guest (ab_microvm_guest_dir (), err) < 0
	    || (kvm && check_kvm (err) < 0))
		return ab_error_wrap (err, "microvm");
	return 0;
}

/* ---- operations -------------------------------------------------------------------- */

static int
microvm_create (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
                ab_error_t *err)
{
	struct ab_microvm_s vm = { 0 };

	(void)stdio; /* no fd passing into the VM */
	ab_sandbox_begin (sb, &ab_backend_microvm);
	if (ab_monitor_require_service (spec, "microvm", err) < 0)
		return -1;
	if (spec->root.layers && check_layered (err) < 0)
		return ab_error_wrap (err, "microvm");
	vm.kvm = !spec->microvm_accel || strcmp (spec->microvm_accel, "tcg") != 0;
	if (check_all (vm.kvm, err) < 0)
		return -1;
	snprintf (vm.guest_dir, sizeof vm.guest_dir, "%s", ab_microvm_guest_dir ());
	vm.boot_timeout_ms = boot_budget_override_ms ? boot_budget_override_ms
	                     : vm.kvm                ? BOOT_KVM_MS
	                                             : BOOT_TCG_MS;
	if (ab_monitor_spawn (spec, &vm, NULL, 0, sb, err) < 0)
		return ab_error_wrap (err, "microvm (%s)", vm.kvm ? "kvm" : "tcg");
	return 0;
}

/* Cheap checks first (each names what is missing), then a real VM under
 * the accelerator `auto` means (KVM), with a short boot budget. */
static void
microvm_probe (struct ab_probe_result_s *result)
{
	ab_error_t err = AB_ERROR_INIT;

	memset (result, 0, sizeof *result);
	if (check_all (true, &err) < 0) {
		snprintf (result->reason, sizeof result->reason, "%s", err.msg);
		return;
	}
	boot_budget_override_ms = PROBE_BOOT_MS;
	ab_backend_service_probe (&ab_backend_microvm, result);
	boot_budget_override_ms = 0;
}

const struct ab_backend_ops_s ab_backend_microvm = {
	.name = "microvm",
	.strength = 40,
	.features = AB_BACKEND_LIMITS | AB_BACKEND_NET_PROXY | AB_BACKEND_PAUSE,
	.wall = "hardware virtualisation (QEMU microvm under KVM, or TCG when asked): its own "
	        "guest kernel, no network device, 9p shares (a layered root: a read-only "
	        "disk under a tmpfs overlay); inside, the agent's seccomp, "
	        "no capabilities, no_new_privs, Landlock",
	.probe = microvm_probe,
	.create = microvm_create,
	.kill = ab_monitor_kill,
	.pause = ab_microvm_pause,
	.resume = ab_microvm_resume,
	.destroy = ab_monitor_destroy,
	.monitor = &ab_microvm_monitor_ops,
};
