/* EntryInfo's `owner` and `group`: the names the sandbox itself gives its
 * uids and gids, from ITS /etc/passwd and /etc/group (read through the
 * agent's confined file service, as any file of the sandbox), never from
 * the host's NSS: getpwuid(3) in the daemon would name the host's users
 * (and could load NSS modules into the daemon).  A number without a name
 * is shown as the number, as envd does when its lookup fails.  Both files
 * are read at most once per call, and only when an entry needs them. */
#include "daemon/e2b-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define NAMES_MAX_FILE (1U << 20)

struct buf_s {
	char *p;
	size_t len;
};

static int
take (void *ctx, const void *data, size_t len, ab_error_t *err)
{
	struct buf_s *b = ctx;

	if (b->len + len > NAMES_MAX_FILE)
		return ab_error (err, 0, AB_E_LIMIT, "more than %u bytes", NAMES_MAX_FILE);
	b->p = xrealloc (b->p, b->len + len + 1);
	memcpy (b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

/* The whole file, or NULL (missing, too large, unreadable: numbers then). */
static char *
slurp (ab_agent_conn_t *c, const char *path)
{
	ab_error_t err = AB_ERROR_INIT;
	struct buf_s b = { 0 };
	struct ab_agent_file_sink_s sink = { .data = take, .ctx = &b };

	if (ab_agent_file_read (c, path, &sink, &err) < 0) {
		free (b.p);
		return NULL;
	}
	return b.p ? b.p : xstrdup ("");
}

/* The first field of the line whose third field is id ("name:x:id:..."
 * in both files). */
static json_t *
lookup (const char *file, uint32_t id)
{
	char want[16];
	size_t wn = (size_t)snprintf (want, sizeof want, "%u", id);

	for (const char *line = file; line && *line;) {
		const char *end = strchr (line, '\n'), *c1, *c2;
		size_t n = end ? (size_t)(end - line) : strlen (line);
		c1 = memchr (line, ':', n);
		c2 = c1 ? memchr (c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
		if (c2 && c1 > line && (size_t)(line + n - (c2 + 1)) >= wn
		    && strncmp (c2 + 1, want, wn) == 0
		    && (c2[1 + wn] == ':' || c2 + 1 + wn == line + n))
			return json_stringn (line, (size_t)(c1 - line));
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

json_t *
ab_e2b_id_name (struct ab_e2b_names_s *n, bool group, uint32_t id)
{
	char num[16];
	json_t *name = NULL;

	if (n && n->c && !n->loaded) {
		n->passwd = slurp (n->c, "/etc/passwd");
		n->group = slurp (n->c, "/etc/group");
		n->loaded = true;
	}
	if (n && (group ? n->group : n->passwd))
		name = lookup (group ? n->group : n->passwd, id);
	if (name)
		return name;
	snprintf (num, sizeof num, "%u", id);
	return json_string (num);
}

void
ab_e2b_names_free (struct ab_e2b_names_s *n)
{
	free (n->passwd);
	free (n->group);
	memset (n, 0, sizeof *n);
}
