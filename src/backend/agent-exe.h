/* agentbox-agent, the binary every backend runs as the sandbox's PID 1:
 * where it is, and how native init executes it without ever being able to
 * write to it (agent-exe.c). */
#ifndef AB_BACKEND_AGENT_EXE_H
#define AB_BACKEND_AGENT_EXE_H

#include "base/error.h"

/* agentbox-agent beside the running agentbox binary (build/ or
 * $PREFIX/bin), checked executable; NULL with err (AB_E_NOT_FOUND). */
char *ab_agent_exe_path (ab_error_t *err);

/* A detached read-only, nosuid, nodev mount of the regular, executable
 * file at path (opened once; the mount is cloned from that fd), on an
 * fd >= 10 (close-on-exec). */
int ab_agent_exe_mount (const char *path, ab_error_t *err);

#endif
