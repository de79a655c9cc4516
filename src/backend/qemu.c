/* QEMU's command line for the microVM backend (see qemu.h).
 *
 * What is left out matters as much as what is there: -nodefaults and
 * -no-user-config (no default devices, no host config file), -nic none
 * (no network device at all: the sandbox's only way out is the
 * multiplexer's port), no PCI (microvm's virtio-mmio devices only), no
 * display, no human monitor (QMP only, on a host unix socket in the
 * sandbox's private directory when asked: pause's stop/cont; the guest
 * has no way to it).  -sandbox puts QEMU itself under its seccomp
 * filter: no spawning, no privilege changes, no obsolete syscalls.
 * -no-reboot: the guest's reboot or panic (PID 1 exiting) ends QEMU. */
#include "backend/qemu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

struct argv_s {
	char **v;
	size_t n;
};

static void
push (struct argv_s *a, char *s)
{
	a->v = xrealloc (a->v, (a->n + 2) * sizeof *a->v);
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void pushf (struct argv_s *a, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
static void
pushf (struct argv_s *a, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start (ap, fmt);
	if (vasprintf (&s, fmt, ap) < 0)
		abort ();
	va_end (ap);
	push (a, s);
}

static void
push2 (struct argv_s *a, const char *opt, const char *val)
{
	push (a, xstrdup (opt));
	push (a, xstrdup (val));
}

char *
ab_qemu_escape (const char *s)
{
	size_t n = 0;
	char *out, *o;

	for (const char *p = s; *p; p++)
		n += *p == ',' ? 2 : 1;
	out = o = xmalloc (n + 1);
	for (const char *p = s; *p; p++) {
		*o++ = *p;
		if (*p == ',')
			*o++ = ',';
	}
	*o = '\0';
	return out;
}

uint64_t
ab_qemu_memory_mib (uint64_t limit_bytes)
{
	uint64_t mib = limit_bytes ? limit_bytes >> 20 : 2048;
	return mib < AB_QEMU_MIN_MEMORY_MIB ? AB_QEMU_MIN_MEMORY_MIB : mib;
}

unsigned
ab_qemu_cpus (uint64_t cpu_millis)
{
	uint64_t n = cpu_millis ? (cpu_millis + 999) / 1000 : 1;
	return n > AB_QEMU_MAX_CPUS ? AB_QEMU_MAX_CPUS : (unsigned)n;
}

static void
push_shares (struct argv_s *a, const struct ab_qemu_vm_s *vm)
{
	for (size_t i = 0; i < vm->n_shares; i++) {
		char *path = ab_qemu_escape (vm->shares[i].path);
		/* security_model=none: files are created as QEMU's own user,
		 * modes as the guest asks; multidevs=remap: inode numbers of
		 * several host filesystems under one share stay distinct. */
		push (a, xstrdup ("-fsdev"));
		pushf (a, "local,id=fs%zu,path=%s,security_model=none,multidevs=remap%s", i, path,
		       vm->shares[i].readonly ? ",readonly=on" : "");
		push (a, xstrdup ("-device"));
		pushf (a, "virtio-9p-device,fsdev=fs%zu,mount_tag=%s", i, vm->shares[i].tag);
		free (path);
	}
}

/* The root disk is read-only to QEMU too (the image is shared by every
 * sandbox of the same layers); the guest writes to its overlay's upper. */
static void
push_disk (struct argv_s *a, const struct ab_qemu_vm_s *vm)
{
	char *path;

	if (!vm->root_disk)
		return;
	path = ab_qemu_escape (vm->root_disk);
	push (a, xstrdup ("-drive"));
	pushf (a, "file=%s,format=raw,if=none,id=root,readonly=on", path);
	push2 (a, "-device", "virtio-blk-device,drive=root");
	free (path);
}

static int
check_vm (const struct ab_qemu_vm_s *vm, ab_error_t *err)
{
	if (vm->memory_mib < AB_QEMU_MIN_MEMORY_MIB)
		return ab_error (err, 0, AB_E_INVALID, "a microVM needs at least %d MiB of memory",
		                 AB_QEMU_MIN_MEMORY_MIB);
	if (vm->cpus < 1 || vm->cpus > AB_QEMU_MAX_CPUS)
		return ab_error (err, 0, AB_E_INVALID, "a microVM has 1 to %d vCPUs",
		                 AB_QEMU_MAX_CPUS);
	if (!vm->kernel || !vm->initrd || !vm->append || !vm->console_log || !vm->port_name)
		return ab_error (err, 0, AB_E_INTERNAL, "incomplete microVM description");
	for (size_t i = 0; i < vm->n_shares; i++) {
		const char *t = vm->shares[i].tag;
		if (!t || !t[0] || strlen (t) > 31
		    || strspn (t, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen (t))
			return ab_error (err, 0, AB_E_INTERNAL, "bad 9p tag");
	}
	return 0;
}

char **
ab_qemu_argv (const struct ab_qemu_vm_s *vm, ab_error_t *err)
{
	struct argv_s a = { 0 };
	char *log;

	if (check_vm (vm, err) < 0)
		return NULL;
	push (&a, xstrdup (AB_QEMU_BINARY));
	/* The RTC gives the guest the time of day; no option ROMs to run. */
	push2 (&a, "-M", "microvm,x-option-roms=off,rtc=on,isa-serial=on");
	push2 (&a, "-accel", vm->kvm ? "kvm" : "tcg");
	push2 (&a, "-cpu", vm->kvm ? "host" : "max");
	push (&a, xstrdup ("-m"));
	pushf (&a, "%llu", (unsigned long long)vm->memory_mib);
	push (&a, xstrdup ("-smp"));
	pushf (&a, "%u", vm->cpus);
	push (&a, xstrdup ("-nodefaults"));
	push (&a, xstrdup ("-no-user-config"));
	push (&a, xstrdup ("-nographic"));
	push (&a, xstrdup ("-no-reboot"));
	push2 (&a, "-nic", "none");
	push2 (&a, "-sandbox",
	       "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	push2 (&a, "-kernel", vm->kernel);
	push2 (&a, "-initrd", vm->initrd);
	push2 (&a, "-append", vm->append);
	log = ab_qemu_escape (vm->console_log);
	push (&a, xstrdup ("-chardev"));
	pushf (&a, "file,id=console,path=%s", log);
	free (log);
	push2 (&a, "-serial", "chardev:console");
	push2 (&a, "-device", "virtio-serial-device");
	push (&a, xstrdup ("-chardev"));
	pushf (&a, "socket,id=mux,fd=%d", AB_QEMU_MUX_FD);
	push (&a, xstrdup ("-device"));
	pushf (&a, "virtserialport,chardev=mux,name=%s", vm->port_name);
	push_shares (&a, vm);
	push_disk (&a, vm);
	if (vm->qmp_socket) {
		char *qmp = ab_qemu_escape (vm->qmp_socket);
		push (&a, xstrdup ("-qmp"));
		pushf (&a, "unix:%s,server=on,wait=off", qmp);
		free (qmp);
	}
	return a.v;
}

void
ab_qemu_argv_free (char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free (argv[i]);
	free (argv);
}
