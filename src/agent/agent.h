/* agentbox-agent: PID 1 inside every sandbox.  Static, libc only. */
#ifndef AB_AGENT_AGENT_H
#define AB_AGENT_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "proto/exec-msg.h"
#include "proto/proto.h" /* AB_AGENT_DOOR_FD, AB_AGENT_LISTEN_FD */

struct ab_child_s {
	pid_t pid;
	int pty_master; /* -1 without a tty */
	int exec_errno; /* errno of a failed execve, 0 if it ran */
};

/* Fork the command with every confinement layer applied in the child
 * (ids, capabilities, no_new_privs, Landlock, seccomp, in that order).
 * stdio: the command's 0, 1, 2 (NULL = the agent's own; ignored with a
 * tty, where the pty slave is all three). */
int ab_agent_spawn (const struct ab_exec_msg_s *req, const int *stdio, struct ab_child_s *child,
                    ab_error_t *err);

/* Steps run in the forked child; on failure they return -1 with errno set. */
int ab_confine_ids (uid_t uid, gid_t gid);
int ab_confine_lock_capabilities (void);
/* Empty the calling thread's bounding set (needs CAP_SETPCAP; the
 * permitted and effective sets are untouched). */
int ab_confine_drop_bounding_set (void);
/* ab_confine_lock_capabilities for a child whose parent emptied its own
 * bounding set (ab_confine_drop_bounding_set; a child inherits it): the
 * securebits and the ambient set, without the drops that would repeat
 * it (41 system calls, each trapped under gVisor's ptrace platform). */
int ab_confine_lock_capabilities_inherited (void);
int ab_confine_clear_capabilities (void);
int ab_confine_landlock (char *const *rw_paths, size_t n, int *abi_out);
int ab_confine_seccomp (void);
int ab_landlock_abi (void);

/* Modes (main.c picks one). */
void ab_oneshot_run (void) __attribute__ ((noreturn));
void ab_service_run (int listen_fd) __attribute__ ((noreturn));
/* Point 0, 1, 2 at /dev/null. */
void ab_agent_release_stdio (void);
/* The network namespace starts with lo down. */
void ab_agent_loopback_up (void);
/* listen.c: bind and listen on a unix socket path (gVisor, Docker). */
int ab_agent_listen_path (const char *path, ab_error_t *err);
/* pids-limit.c: gVisor's in-sandbox pids cgroup for everything after us. */
int ab_agent_pids_limit (const char *arg, ab_error_t *err);
/* preload.c: a library every command gets first in LD_PRELOAD (gVisor). */
void ab_agent_set_preload (const char *path);
char **ab_agent_env_with_preload (char **env);
void ab_agent_env_free (char **env);

#endif
