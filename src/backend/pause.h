/* The pause and resume slots of the backends (pause.c). */
#ifndef AB_BACKEND_PAUSE_H
#define AB_BACKEND_PAUSE_H

#include "backend/backend.h"

int ab_native_pause (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_native_resume (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_gvisor_pause (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_gvisor_resume (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_docker_pause (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_docker_resume (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_microvm_pause (struct ab_sandbox_s *sb, ab_error_t *err);
int ab_microvm_resume (struct ab_sandbox_s *sb, ab_error_t *err);
/* Where a microVM's QEMU serves QMP: beside its service socket
 * ("<socket>.qmp"); NULL when there is none or the path would not fit a
 * unix socket address. */
char *ab_microvm_qmp_path (const char *service_socket);

#endif
