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

#endif
