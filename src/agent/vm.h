/* The agent as the microVM guest's /init (docs/microvm.md).  Internal to
 * agentbox-agent. */
#ifndef AB_AGENT_VM_H
#define AB_AGENT_VM_H

#include <stdbool.h>

#include "base/error.h"
#include "proto/vm-boot.h"

/* The virtio-serial port the host's multiplexer is on (QEMU's
 * `virtserialport,name=...`). */
#define AB_VM_PORT_NAME "org.agentbox.mux"
/* Where the new root is built, in the initramfs. */
#define AB_VM_NEWROOT "/newroot"

/* vm-init.c: boot the guest and serve the host; never returns. */
void ab_vm_init_run (void) __attribute__ ((noreturn));

/* vm-root.c: build the sandbox's root at AB_VM_NEWROOT from the boot
 * configuration: the shares, links, tmpfs mounts and masks, a minimal /dev,
 * /tmp; then the root is made read-only. */
int ab_vm_build_root (const struct ab_vm_boot_s *boot, ab_error_t *err);
/* Whether the root is a disk (the block and ext4/overlay modules needed). */
bool ab_vm_boot_has_disk (const struct ab_vm_boot_s *boot);
/* After the switch, in the agent's pid namespace: its /proc, with what
 * leaks kernel state masked and the writable knobs read-only. */
int ab_vm_mount_proc (ab_error_t *err);

/* vm-mux.c: listen for sessions on a socket only this process can be a
 * peer of, and relay the host's connections on port_fd to it.  Call after
 * ab_loop_init; returns the listening fd for ab_service_run. */
int ab_vm_mux_start (int port_fd, ab_error_t *err);

#endif
