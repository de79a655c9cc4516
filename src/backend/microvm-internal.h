/* The microVM backend's pieces (microvm.c, microvm-layout.c). */
#ifndef AB_BACKEND_MICROVM_INTERNAL_H
#define AB_BACKEND_MICROVM_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend/monitor.h"
#include "backend/qemu.h"
#include "base/error.h"
#include "proto/vm-boot.h"
#include "spec/spec.h"

/* What the guest sees, from the spec: the 9p shares QEMU exports, the
 * boot configuration the agent builds its root from, and the host paths
 * hidden from QEMU itself. */
struct ab_microvm_layout_s {
	struct ab_qemu_share_s *shares; /* tag and path owned here */
	size_t n_shares;
	struct ab_vm_boot_s boot;
	char **masks; /* host paths QEMU must not serve (NULL-terminated) */
};

int ab_microvm_layout (const struct ab_spec_s *spec, struct ab_microvm_layout_s *l,
                       ab_error_t *err);
void ab_microvm_layout_free (struct ab_microvm_layout_s *l);

/* Entries under dir (a host directory, recursively, not following links)
 * that "others" cannot read: files without o+r, directories without o+rx
 * (not descended into).  Bounded: at most max_entries looked at. */
char **ab_microvm_unreadable (const char *dir, ab_error_t *err);

/* The monitor's state for one VM (microvm-vm.c): filled by create in
 * the caller, copied into the monitor by fork, then used there only. */
struct ab_microvm_s {
	bool kvm;
	int boot_timeout_ms; /* until the guest's HELLO */
	char guest_dir[PATH_MAX];
	/* In the monitor: */
	char root_disk[PATH_MAX]; /* a layered root's disk, or "" */
	char rundir[PATH_MAX];    /* private: console log, the mask file */
	pid_t qemu;
	int qemu_pidfd, stream, listen_fd, epfd;
	struct ab_mux_relay_s *relay;
	bool hello;
};

extern const struct ab_monitor_ops_s ab_microvm_monitor_ops;

/* microvm-disk.c: the path of the ext4 image of the layers' merged tree
 * (built now unless cached) into out.  Needs root (the overlay is
 * mounted on the host, in a child's own mount namespace) and mke2fs. */
int ab_microvm_root_disk (char *const *layers, char *out, size_t cap, ab_error_t *err);

/* The guest's files in dir: vmlinux and initrd.img (scripts/build-guest). */
#define AB_MICROVM_KERNEL "vmlinux"
#define AB_MICROVM_INITRD "initrd.img"
/* $AGENTBOX_GUEST_DIR, else the default build-guest writes to. */
const char *ab_microvm_guest_dir (void);

#endif
