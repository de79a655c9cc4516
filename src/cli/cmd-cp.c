/* `agentbox cp SRC DST`: one file between the host and a sandbox, with
 * ID:/path on one side ("-" is stdin or stdout on the other).  The bytes
 * stream through the daemon; nothing is held in memory. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"

#define CP_CHUNK (256 * 1024)

struct remote_s {
	char *id;
	const char *path;
};

/* "ID:/path" (ID in lower-case hex) or not remote. */
static bool
parse_remote (const char *arg, struct remote_s *r)
{
	size_t n = strspn (arg, "0123456789abcdef");

	if (n == 0 || n > 64 || arg[n] != ':')
		return false;
	r->id = xstrndup (arg, n);
	r->path = arg + n + 1;
	return true;
}

static char *
files_url (const struct remote_s *r, const char *path, const char *extra)
{
	cleanup_free char *esc = ab_client_escape (path);
	return xasprintf ("/v1/sandboxes/%s/files?path=%s%s", r->id, esc, extra ? extra : "");
}

static int
send_body (struct ab_client_s *c, int fd, bool chunked, ab_error_t *err)
{
	cleanup_free char *buf = xmalloc (CP_CHUNK);

	for (;;) {
		ssize_t n = read (fd, buf, CP_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "read");
		if (n == 0)
			return chunked ? ab_http_write_last_chunk (c->fd) : 0;
		if ((chunked ? ab_http_write_chunk (c->fd, buf, (size_t)n)
		             : ab_http_write (c->fd, buf, (size_t)n))
		    < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "send");
	}
}

static int
upload (const char *src, const struct remote_s *r, const char *host, ab_error_t *err)
{
	bool from_stdin = strcmp (src, "-") == 0;
	cleanup_close int fd = from_stdin ? dup (STDIN_FILENO) : open (src, O_RDONLY | O_CLOEXEC);
	cleanup_free char *srccopy = xstrdup (src), *dst = NULL, *url = NULL, *mode = NULL;
	struct ab_client_s c;
	struct stat st;
	int rc;

	if (fd < 0 || fstat (fd, &st) < 0)
		return ab_error (err, errno, AB_E_INVALID, "%s", src);
	if (!from_stdin && !S_ISREG (st.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "%s: only regular files are copied", src);
	dst = r->path[0] && r->path[strlen (r->path) - 1] == '/' && !from_stdin
	              ? xasprintf ("%s%s", r->path, basename (srccopy))
	              : xstrdup (r->path);
	mode = xasprintf ("&mode=%04o", from_stdin ? 0644 : (unsigned)(st.st_mode & 0777));
	url = files_url (r, dst, mode);
	bool chunked = !S_ISREG (st.st_mode);
	rc = ab_client_open (&c, host, err);
	if (rc == 0)
		rc = ab_client_send (&c, "PUT", url, "application/octet-stream", NULL,
		                     chunked ? -1 : (long long)st.st_size, NULL, err);
	if (rc == 0)
		rc = send_body (&c, fd, chunked, err);
	/* Even when sending failed, the daemon may have said why before it closed. */
	if (c.fd >= 0 && ab_client_head (&c, rc == 0 ? err : &(ab_error_t)AB_ERROR_INIT) == 0) {
		if (c.status >= 400)
			rc = ab_client_fail (&c, err);
	} else if (rc == 0)
		rc = -1;
	ab_client_close (&c);
	return rc;
}

static int
download (const struct remote_s *r, const char *dst, const char *host, ab_error_t *err)
{
	cleanup_free char *url = files_url (r, r->path, NULL), *pathcopy = xstrdup (r->path),
	                  *target = NULL;
	cleanup_free char *buf = xmalloc (CP_CHUNK);
	cleanup_close int fd = -1;
	struct ab_client_s c;
	struct stat st;
	int rc;

	rc = ab_client_open (&c, host, err);
	if (rc == 0)
		rc = ab_client_send (&c, "GET", url, NULL, NULL, -2, NULL, err);
	if (rc == 0)
		rc = ab_client_head (&c, err);
	if (rc == 0 && c.status >= 400)
		rc = ab_client_fail (&c, err);
	if (rc == 0) {
		if (strcmp (dst, "-") == 0)
			fd = dup (STDOUT_FILENO);
		else {
			target = stat (dst, &st) == 0 && S_ISDIR (st.st_mode)
			                 ? xasprintf ("%s/%s", dst, basename (pathcopy))
			                 : xstrdup (dst);
			fd = open (target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		}
		if (fd < 0)
			rc = ab_error (err, errno, AB_E_INVALID, "%s", target ? target : dst);
	}
	while (rc == 0) {
		ssize_t n = ab_http_io_body_read (&c.io, buf, CP_CHUNK, err);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		if (ab_write_all (fd, buf, (size_t)n) < 0)
			rc = ab_error (err, errno, AB_E_SYSTEM, "write %s", target ? target : dst);
	}
	ab_client_close (&c);
	return rc;
}

int
ab_cmd_cp (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	struct remote_s a = { 0 }, b = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	bool ra, rb;
	int rc;

	if (argc != 3) {
		fprintf (stderr, "usage: agentbox cp [--host SOCKET] SRC DST   (ID:/path on one "
		                 "side, - for stdin/stdout)\n");
		return AB_EXIT_FAILED;
	}
	ra = parse_remote (argv[1], &a);
	rb = parse_remote (argv[2], &b);
	if (ra == rb)
		rc = ab_error (&err, 0, AB_E_INVALID,
		               "cp: exactly one of SRC and DST must be ID:/path");
	else if (rb)
		rc = upload (argv[1], &b, host, &err);
	else
		rc = download (&a, argv[2], host, &err);
	free (a.id);
	free (b.id);
	if (rc < 0) {
		ab_cli_report (&err);
		return 1;
	}
	return 0;
}
