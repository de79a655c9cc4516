/* The functional probe: a backend works when a real sandbox runs `true`
 * through the agent and is torn down, not when a binary is present. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/sys.h"
#include "proto/exec-msg.h"

/* Send EXEC `true` and read frames until EXIT; 0 when it exited 0. */
static int
run_true (int door, ab_error_t *err)
{
	char *argv[] = { (char *)"true", NULL };
	char *env[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	struct ab_exec_msg_s m = { .argv = argv, .env = env, .cwd = (char *)"/", .grace_ms = 1000 };
	struct ab_tlv_writer_s w = { 0 };
	struct ab_frame_s f;
	int r;

	ab_exec_msg_encode (&w, &m);
	r = ab_frame_send (door, AB_MSG_EXEC, 0, w.buf, w.len, NULL, 0, err);
	ab_tlv_writer_free (&w);
	if (r < 0)
		return -1;
	while ((r = ab_frame_recv (door, &f, NULL, 0, NULL, err)) > 0) {
		uint16_t type = f.type;
		ab_frame_free (&f);
		if (type == AB_MSG_EXIT)
			return 0;
		if (type == AB_MSG_ERROR)
			return ab_error (err, 0, AB_E_SYSTEM, "agent reported an error");
	}
	return r < 0 ? -1
	             : ab_error (err, 0, AB_E_SYSTEM, "sandbox ended before the probe command");
}

void
ab_backend_functional_probe (const struct ab_backend_ops_s *ops, struct ab_probe_result_s *result)
{
	struct ab_spec_s spec;
	struct ab_sandbox_s sb;
	struct ab_sandbox_exit_s ex;
	ab_error_t err = AB_ERROR_INIT, derr = AB_ERROR_INIT;
	char *argv[] = { (char *)"true", NULL };
	uint64_t t0 = ab_mono_us ();
	int r;

	memset (result, 0, sizeof *result);
	ab_spec_init (&spec);
	spec.argv = argv;
	spec.limits.memory_bytes = 64ULL << 20;
	spec.limits.pids = 16;
	r = ops->create (&spec, NULL, &sb, &err);
	if (r == 0) {
		r = run_true (sb.agent_fd, &err);
		/* A sandbox that never started breaks the connection; the
		 * monitor's report says why (as in cli/run.c). */
		if (ops->destroy (&sb, &ex, &derr) < 0) {
			err = derr;
			r = -1;
		}
	}
	spec.argv = NULL;
	ab_spec_free (&spec);
	result->duration_us = ab_mono_us () - t0;
	result->works = r == 0;
	snprintf (result->reason, sizeof result->reason, "%s",
	          r == 0 ? "started a sandbox and ran `true`" : err.msg);
}
