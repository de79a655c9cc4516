/* User namespaces: id maps for the sandbox and for idmapped mounts. */
#ifndef AB_ISOLATE_USERNS_H
#define AB_ISOLATE_USERNS_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

/* When agentbox runs as root, sandbox ids 0..AB_USERNS_RANGE-1 map to an
 * unprivileged host range, never to host uid 0: the native backend takes
 * one of its own per sandbox from AB_USERNS_HOST_BASE up
 * (isolate/uid-range.c); others (the OCI runtime, doctor) use the first. */
#define AB_USERNS_HOST_BASE 1610612736U
#define AB_USERNS_RANGE     65536U

struct ab_idmap_s {
	bool privileged; /* caller is root: map a whole range */
	uid_t base;      /* privileged: the range's first host id */
	uid_t host_uid;  /* unprivileged: the caller's ids */
	gid_t host_gid;
	uid_t inside_uid; /* unprivileged: which inside id the caller becomes */
	gid_t inside_gid;
};

void ab_idmap_for_caller (struct ab_idmap_s *map, uid_t inside_uid, gid_t inside_gid);

/* Host kuid/kgid of an inside id under `map`. */
uid_t ab_idmap_host_uid (const struct ab_idmap_s *map, uid_t inside);
gid_t ab_idmap_host_gid (const struct ab_idmap_s *map, gid_t inside);

/* Write uid_map, setgroups and gid_map of `pid`, checking that the files
 * are on real procfs first (CVE-2019-16884 class). */
int ab_userns_write_maps (pid_t pid, const struct ab_idmap_s *map, ab_error_t *err);

/* A user namespace fd whose map sends on-disk `disk_uid`/`disk_gid` to host
 * `host_uid`/`host_gid`: what an idmapped mount needs so files owned by a
 * workspace's owner appear owned by the sandbox user, and back. */
/* The short-lived helper process that owned the namespace is killed but
 * not waited for (its exit is slow): the caller reaps *helper later. */
int ab_userns_idmap_fd (uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid,
                        pid_t *helper, ab_error_t *err);

#endif
