/* The functional probe of a service-mode backend (no protocol v1): start
 * a real sandbox, run `true` in it through protocol v2 and tear it down.
 * The protocol v2 part is the session layer's agent client, which sits
 * above backend/: the program registers it (ab_backend_set_service_exec). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/sys.h"
#include "base/cleanup.h"
#include "base/tmpdir.h"
#include "base/xalloc.h"

static ab_service_exec_fn service_exec;

void
ab_backend_set_service_exec (ab_service_exec_fn fn)
{
	service_exec = fn;
}

static int
run_true (const struct ab_spec_s *spec, ab_error_t *err)
{
	if (!service_exec)
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "no protocol v2 client to probe with (session/ not linked)");
	return service_exec (spec, err);
}

void
ab_backend_service_probe (const struct ab_backend_ops_s *ops, struct ab_probe_result_s *result)
{
	cleanup_free char *dir = NULL;
	ab_error_t err = AB_ERROR_INIT, derr = AB_ERROR_INIT;
	struct ab_sandbox_exit_s ex;
	struct ab_sandbox_s sb;
	struct ab_spec_s spec;
	uint64_t t0 = ab_mono_us ();
	int r = -1;

	memset (result, 0, sizeof *result);
	ab_spec_init (&spec);
	spec.limits.memory_bytes = 128ULL << 20;
	spec.limits.pids = 32;
	dir = ab_make_temp_dir (NULL, "agentbox-probe", &err);
	if (dir) {
		spec.service_socket = xasprintf ("%s/agent.sock", dir);
		spec.service_tied = true; /* a probe killed midway leaves nothing */
		r = ops->create (&spec, NULL, &sb, &err);
		if (r == 0) {
			r = run_true (&spec, &err);
			if (ops->destroy (&sb, &ex, &derr) < 0 && r == 0) {
				err = derr;
				r = -1;
			}
		}
		unlink (spec.service_socket);
		rmdir (dir);
	}
	ab_spec_free (&spec);
	result->duration_us = ab_mono_us () - t0;
	result->works = r == 0;
	snprintf (result->reason, sizeof result->reason, "%s",
	          r == 0 ? "started a sandbox and ran `true` through its agent" : err.msg);
}
