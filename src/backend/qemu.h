/* QEMU's command line for the microVM backend (`-M microvm`): built from a
 * plain description, no system access, so it is unit-tested as is. */
#ifndef AB_BACKEND_QEMU_H
#define AB_BACKEND_QEMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_QEMU_BINARY "qemu-system-x86_64"
/* The fd QEMU inherits for the multiplexer's stream (a connected socket). */
#define AB_QEMU_MUX_FD 3

struct ab_qemu_share_s {
	const char *tag;  /* 9p mount tag */
	const char *path; /* host directory */
	bool readonly;
};

struct ab_qemu_vm_s {
	bool kvm;            /* else TCG */
	uint64_t memory_mib; /* >= AB_QEMU_MIN_MEMORY_MIB */
	unsigned cpus;       /* >= 1 */
	const char *kernel;  /* vmlinux */
	const char *initrd;
	const char *append;      /* the kernel command line */
	const char *console_log; /* the serial console goes here */
	const char *port_name;   /* virtserialport name */
	const struct ab_qemu_share_s *shares;
	size_t n_shares;
	const char *root_disk;  /* a raw image, the guest's read-only vda, or NULL */
	const char *qmp_socket; /* QMP on this host unix socket (pause), or NULL */
};

#define AB_QEMU_MIN_MEMORY_MIB 128
#define AB_QEMU_MAX_CPUS       32

/* A NULL-terminated argv (free with ab_qemu_argv_free); NULL with err when
 * the description is not usable. */
char **ab_qemu_argv (const struct ab_qemu_vm_s *vm, ab_error_t *err);
void ab_qemu_argv_free (char **argv);

/* A value for a QEMU option list: every ',' doubled (QEMU's escape). */
char *ab_qemu_escape (const char *s);

/* Memory (-m) in MiB for a sandbox memory limit in bytes (0 = no limit:
 * the default), and vCPUs for a CPU limit in thousandths. */
uint64_t ab_qemu_memory_mib (uint64_t limit_bytes);
unsigned ab_qemu_cpus (uint64_t cpu_millis);

#endif
