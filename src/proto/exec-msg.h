/* The EXEC message: what the host asks the agent to run.  Encoded by the
 * host, decoded by the agent; every length checked on decode. */
#ifndef AB_PROTO_EXEC_MSG_H
#define AB_PROTO_EXEC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "proto/proto.h"

struct ab_exec_msg_s {
	char **argv; /* NULL-terminated */
	char **env;  /* NULL-terminated KEY=VALUE */
	size_t n_argv, n_env;
	char *cwd;
	uid_t uid;
	gid_t gid;
	bool tty;
	uint32_t rows, cols;
	uint64_t timeout_ms, grace_ms, nofile;
	char **rw_paths; /* Landlock: where writes are allowed */
	size_t n_rw_paths;
};

void ab_exec_msg_encode (struct ab_tlv_writer_s *w, const struct ab_exec_msg_s *m);
int ab_exec_msg_decode (const uint8_t *payload, size_t len, struct ab_exec_msg_s *m,
                        ab_error_t *err);
/* Frees a decoded message (all strings owned). */
void ab_exec_msg_free (struct ab_exec_msg_s *m);

#endif
