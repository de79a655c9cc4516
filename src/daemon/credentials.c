/* A daemon sandbox's credentials (create's "credentials": an array of
 * upstream entries, each with its "name", read by the client from its own
 * files).  The daemon makes a fresh per-sandbox token, gives the sandbox
 * the same variables as `agentbox run --credential` (session/cred-setup.h)
 * and keeps the configuration in memory for its credential relay
 * (egress.c).  For re-adoption after a restart the configuration is kept
 * in <dir>/credentials.json, mode 0600 in the 0700 sandbox directory:
 * never in state.json, never in the API's output, never in a log.  Every
 * host copy is wiped when freed: ours with explicit_bzero, jansson's (the
 * request's parse, its values, the serialised text) by base/json-wipe.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/json-wipe.h"
#include "base/xalloc.h"
#include "daemon/daemon-internal.h"
#include "session/cred-setup.h"

#define CRED_FILE     "credentials.json"
#define CRED_FILE_MAX (1024 * 1024)

void
ab_box_cred_free (struct ab_box_s *b)
{
	if (b->cred_text) {
		explicit_bzero (b->cred_text, strlen (b->cred_text));
		free (b->cred_text);
		b->cred_text = NULL;
	}
	ab_cred_config_unref (b->cred_config);
	b->cred_config = NULL;
}

int
ab_box_cred_take (struct ab_box_s *b, json_t *ups, ab_error_t *err)
{
	char token[AB_CRED_TOKEN_HEX];
	json_t *doc;

	ab_json_wipe_on_free (); /* the request's copies of the secrets too */
	if (!json_is_array (ups) || json_array_size (ups) == 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "credentials must be a non-empty array of upstream entries");
	if (ab_cred_token_new (token, err) < 0)
		return -1;
	b->cred_config = ab_cred_config_from_entries (token, ups, err);
	if (!b->cred_config) {
		explicit_bzero (token, sizeof token);
		return ab_error_wrap (err, "credentials");
	}
	doc = json_pack ("{s:s, s:O}", "threadToken", token, "upstreams", ups);
	b->cred_text = json_dumps (doc, JSON_COMPACT);
	json_decref (doc);
	ab_cred_spec_env (&b->spec, b->cred_config, token);
	explicit_bzero (token, sizeof token);
	return 0;
}

int
ab_box_cred_save (struct ab_box_s *b, ab_error_t *err)
{
	cleanup_free char *path = NULL;
	int r;

	if (!b->cred_text)
		return 0;
	path = xasprintf ("%s/%s", b->dir, CRED_FILE);
	r = ab_write_file_atomic (path, b->cred_text, strlen (b->cred_text), err);
	/* On disk now: the relay holds the parsed configuration, no copy of
	 * the text stays in memory. */
	explicit_bzero (b->cred_text, strlen (b->cred_text));
	free (b->cred_text);
	b->cred_text = NULL;
	return r;
}

/* The whole of fd (a regular file of at most CRED_FILE_MAX bytes). */
static char *
read_secret_fd (int fd, const char *path, ab_error_t *err)
{
	struct stat st;
	char *buf;
	size_t off = 0;

	if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_size > CRED_FILE_MAX) {
		ab_error (err, errno, AB_E_INVALID, "%s: not a credentials file", path);
		return NULL;
	}
	buf = xmalloc ((size_t)st.st_size + 1);
	while (off < (size_t)st.st_size) {
		ssize_t n = read (fd, buf + off, (size_t)st.st_size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	return buf;
}

int
ab_box_cred_load (struct ab_box_s *b, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/%s", b->dir, CRED_FILE);
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char *text;

	if (fd < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	if (!(text = read_secret_fd (fd, path, err)))
		return -1;
	b->cred_config = ab_cred_config_parse (text, strlen (text), err);
	explicit_bzero (text, strlen (text));
	free (text);
	if (!b->cred_config)
		return ab_error_wrap (err, "%s", path);
	/* state.json's spec leaves out the variables that hold the token. */
	ab_cred_spec_env (&b->spec, b->cred_config, b->cred_config->token);
	return 0;
}
