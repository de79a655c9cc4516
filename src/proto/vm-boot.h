/* The microVM guest's boot configuration: what the host tells the agent
 * (the guest's /init) about the filesystem to build, on the kernel command
 * line as `agentbox.*` parameters (docs/microvm.md).  Pure encode and
 * decode; libc only (the agent parses it, the host writes it).
 *
 *   agentbox.host=NAME            hostname
 *   agentbox.pids=N               pids.max of the sandbox's cgroup (0 = none)
 *   agentbox.m=root,TAG           the 9p share TAG is the root (read-only)
 *   agentbox.m=ro,TAG,PATH        9p share TAG at PATH, read-only
 *   agentbox.m=rw,TAG,PATH        9p share TAG at PATH, read-write
 *   agentbox.m=tmpfs,PATH,BYTES   a tmpfs (0 = the kernel's default size)
 *   agentbox.m=link,PATH,TARGET   a symlink (a host /bin -> usr/bin)
 *   agentbox.m=mask,PATH          hidden (an empty directory or /dev/null)
 *   agentbox.m=disk,rw|ro         the first virtio disk (ext4) is the root:
 *                                 under a tmpfs overlay (rw), or read-only
 *
 * Entries are applied in order.  Paths and targets are percent-encoded:
 * every byte outside [A-Za-z0-9/._+-] is %XX, so no value holds a space,
 * a comma or a quote. */
#ifndef AB_PROTO_VM_BOOT_H
#define AB_PROTO_VM_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The kernel keeps at most this much command line (x86 COMMAND_LINE_SIZE
 * is 2048); the host refuses a configuration that does not fit. */
#define AB_VM_CMDLINE_MAX 2000
#define AB_VM_TAG_MAX     31

enum ab_vm_entry_kind {
	AB_VM_ROOT,
	AB_VM_RO,
	AB_VM_RW,
	AB_VM_TMPFS,
	AB_VM_LINK,
	AB_VM_MASK,
	AB_VM_DISK,
};

struct ab_vm_entry_s {
	enum ab_vm_entry_kind kind;
	char *tag;     /* ROOT, RO, RW; DISK: "rw" or "ro" */
	char *path;    /* all but ROOT and DISK: absolute, no "..", no "." components */
	char *target;  /* LINK */
	uint64_t size; /* TMPFS */
};

struct ab_vm_boot_s {
	char *hostname;
	uint64_t pids;
	struct ab_vm_entry_s *entries;
	size_t n_entries;
};

void ab_vm_boot_add (struct ab_vm_boot_s *b, enum ab_vm_entry_kind kind, const char *tag,
                     const char *path, const char *target, uint64_t size);
void ab_vm_boot_free (struct ab_vm_boot_s *b);

/* The `agentbox.*` parameters, space-separated (no leading or trailing
 * space); NULL when an entry is invalid (err says which). */
char *ab_vm_boot_encode (const struct ab_vm_boot_s *b, ab_error_t *err);

/* Parse a whole kernel command line; other parameters are ignored. */
int ab_vm_boot_parse (const char *cmdline, struct ab_vm_boot_s *b, ab_error_t *err);

#endif
