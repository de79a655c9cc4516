/* Every process of one exec (issue 19 item 4): a keeper per exec, the
 * exec's subreaper, or (gVisor, which has no subreapers) a cgroup of its
 * own as the exec's mark; and the passes that signal them all. */
#ifndef AB_AGENT_SUBTREE_H
#define AB_AGENT_SUBTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"

/* The keeper of one exec: its pid and the read end of its report pipe
 * (both -1 where no keeper runs: no PR_SET_CHILD_SUBREAPER, gVisor); and
 * without a keeper, the exec's mark: its group's directory (-1: none). */
struct ab_kept_s {
	pid_t keeper;
	int fd;
	int mark_fd;
	unsigned mark_id;
	pid_t ns_pid; /* the command's pid as commands see it (cmdns.c) */
};

/* What a keeper reports, in one atomic pipe write each. */
enum { AB_KEEPER_STARTED = 1, AB_KEEPER_EXITED = 2 };
struct ab_keeper_msg_s {
	int32_t kind;
	int32_t pid;    /* STARTED: the command's pid (-1: the fork failed) */
	int32_t status; /* EXITED: its wait status */
	int32_t stage;  /* STARTED: 0, or the spawn stage that failed */
	int32_t errnum; /* STARTED: that stage's errno (or the fork's) */
};

/* Whether this kernel lets a process be a child subreaper (gVisor 2022:
 * EINVAL).  Asked once. */
bool ab_keepers_available (void);

/* ab_agent_spawn through a keeper where keepers are available: the
 * command is the keeper's child, every orphan of its subtree becomes the
 * keeper's, and the keeper reports the command's wait status on kept->fd.
 * Elsewhere the plain spawn, with kept->keeper and kept->fd -1. */
int ab_agent_spawn_kept (const struct ab_exec_msg_s *req, const int *stdio,
                         struct ab_child_s *child, struct ab_kept_s *kept, ab_error_t *err);

/* Who an exec's processes are: every live descendant of root (root too
 * when with_root), and every member of the mark's group (mark_fd >= 0). */
struct ab_exec_target_s {
	pid_t root;
	bool with_root;
	int mark_fd;
};

/* Signal them once; returns how many were signalled. */
int ab_exec_signal (const struct ab_exec_target_s *t, int sig);
/* SIGKILL them until a pass finds no process it has not killed yet (a
 * process may fork while a pass runs); bounded rounds. */
void ab_exec_kill (const struct ab_exec_target_s *t);

/* The marks' cgroup hierarchy (gVisor): mounted once under dir, which
 * no command can traverse, while the agent holds CAP_SYS_ADMIN. */
void ab_exec_marks_mount (const char *dir);
/* A new mark: its group's directory fd and, in *procs, its cgroup.procs
 * opened for writing (the child writes its own pid there before it gives
 * up its ids).  -1 without marks. */
int ab_exec_mark_new (unsigned *id, int *procs);
/* Close the mark; its group goes once it is empty (a process the exec
 * left running keeps it, and its mark, until it ends). */
void ab_exec_mark_release (int mark_fd, unsigned id);
/* Append the members of the mark's group to out (*n of *cap used). */
pid_t *ab_exec_mark_members (int mark_fd, pid_t *out, size_t *n, size_t *cap);

/* cmdns.c: where no keeper runs (gVisor), the commands' pid namespace
 * and its /proc, made before the first command (and again after its init
 * was killed).  Without the privilege for it commands share ours. */
void ab_cmdns_ensure (void);
bool ab_cmdns_active (void);
/* The agent reaped pid: if it was the commands' init, the namespace is
 * gone. */
void ab_cmdns_reaped (pid_t pid);
/* The agent's own /proc (its pid namespace's), opened before any other
 * /proc covers it. */
int ab_cmdns_agent_proc (void);

#endif
