/* The microVM guest's boot configuration (see vm-boot.h). */
#include "proto/vm-boot.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pct.h"
#include "base/xalloc.h"

#define PATH_MAX_LEN 4096

static const char *const kind_names[] = {
	[AB_VM_ROOT] = "root",   [AB_VM_RO] = "ro",     [AB_VM_RW] = "rw",
	[AB_VM_TMPFS] = "tmpfs", [AB_VM_LINK] = "link", [AB_VM_MASK] = "mask",
	[AB_VM_DISK] = "disk",
};

#define N_KINDS (sizeof kind_names / sizeof *kind_names)

void
ab_vm_boot_add (struct ab_vm_boot_s *b, enum ab_vm_entry_kind kind, const char *tag,
                const char *path, const char *target, uint64_t size)
{
	struct ab_vm_entry_s *e;

	b->entries = xrealloc (b->entries, (b->n_entries + 1) * sizeof *b->entries);
	e = &b->entries[b->n_entries++];
	e->kind = kind;
	e->tag = tag ? xstrdup (tag) : NULL;
	e->path = path ? xstrdup (path) : NULL;
	e->target = target ? xstrdup (target) : NULL;
	e->size = size;
}

void
ab_vm_boot_free (struct ab_vm_boot_s *b)
{
	for (size_t i = 0; i < b->n_entries; i++) {
		free (b->entries[i].tag);
		free (b->entries[i].path);
		free (b->entries[i].target);
	}
	free (b->entries);
	free (b->hostname);
	memset (b, 0, sizeof *b);
}

/* ---- validation ------------------------------------------------------------ */

static bool
plain_char (char c, const char *extra)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	       || (c && strchr (extra, c));
}

static bool
all_plain (const char *s, const char *extra)
{
	for (; *s; s++)
		if (!plain_char (*s, extra))
			return false;
	return true;
}

/* Absolute, not "/" itself, no empty, "." or ".." component. */
static bool
good_path (const char *p)
{
	size_t len = p ? strlen (p) : 0;

	if (len < 2 || len > PATH_MAX_LEN || p[0] != '/' || p[len - 1] == '/')
		return false;
	for (const char *c = p + 1; c;) {
		const char *end = strchr (c, '/');
		size_t n = end ? (size_t)(end - c) : strlen (c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = end ? end + 1 : NULL;
	}
	return true;
}

/* The root entries name no path: the share or the disk is "/". */
static bool
is_root_kind (enum ab_vm_entry_kind kind)
{
	return kind == AB_VM_ROOT || kind == AB_VM_DISK;
}

static int
check_entry (const struct ab_vm_entry_s *e, ab_error_t *err)
{
	bool tagged = is_root_kind (e->kind) || e->kind == AB_VM_RO || e->kind == AB_VM_RW;

	if ((unsigned)e->kind >= N_KINDS)
		return ab_error (err, 0, AB_E_INVALID, "vm boot: unknown entry kind %d", e->kind);
	if (tagged
	    && (!e->tag || !e->tag[0] || strlen (e->tag) > AB_VM_TAG_MAX
	        || !all_plain (e->tag, "_-")))
		return ab_error (err, 0, AB_E_INVALID, "vm boot: bad share tag");
	if (e->kind == AB_VM_DISK && e->tag && strcmp (e->tag, "rw") != 0
	    && strcmp (e->tag, "ro") != 0)
		return ab_error (err, 0, AB_E_INVALID, "vm boot: a disk root is rw or ro");
	if (!is_root_kind (e->kind) && !good_path (e->path))
		return ab_error (err, 0, AB_E_INVALID, "vm boot: bad %s path '%s'",
		                 kind_names[e->kind], e->path ? e->path : "");
	if (e->kind == AB_VM_LINK
	    && (!e->target || !e->target[0] || strlen (e->target) > PATH_MAX_LEN))
		return ab_error (err, 0, AB_E_INVALID, "vm boot: bad link target");
	return 0;
}

static int
check_hostname (const char *h, ab_error_t *err)
{
	if (!h || !h[0] || strlen (h) > 64 || !all_plain (h, ".-"))
		return ab_error (err, 0, AB_E_INVALID, "vm boot: bad hostname");
	return 0;
}

/* ---- encoding ------------------------------------------------------------------ */

struct sbuf_s {
	char *p;
	size_t len, cap;
};

static void
put (struct sbuf_s *s, const char *str, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		s->p = xrealloc (s->p, s->cap);
	}
	memcpy (s->p + s->len, str, n);
	s->len += n;
	s->p[s->len] = '\0';
}

static void
put_str (struct sbuf_s *s, const char *str)
{
	put (s, str, strlen (str));
}

static void
put_escaped (struct sbuf_s *s, const char *str)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *str; str++) {
		if (plain_char (*str, "/._+-")) {
			put (s, str, 1);
		} else {
			unsigned char c = (unsigned char)*str;
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };
			put (s, e, 3);
		}
	}
}

static void
put_entry (struct sbuf_s *s, const struct ab_vm_entry_s *e)
{
	char num[32];

	put_str (s, " agentbox.m=");
	put_str (s, kind_names[e->kind]);
	if (e->tag) {
		put_str (s, ",");
		put_str (s, e->tag);
	}
	if (!is_root_kind (e->kind)) {
		put_str (s, ",");
		put_escaped (s, e->path);
	}
	if (e->kind == AB_VM_LINK) {
		put_str (s, ",");
		put_escaped (s, e->target);
	} else if (e->kind == AB_VM_TMPFS) {
		snprintf (num, sizeof num, ",%llu", (unsigned long long)e->size);
		put_str (s, num);
	}
}

char *
ab_vm_boot_encode (const struct ab_vm_boot_s *b, ab_error_t *err)
{
	struct sbuf_s s = { 0 };
	char num[48];

	if (check_hostname (b->hostname, err) < 0)
		return NULL;
	put_str (&s, "agentbox.host=");
	put_str (&s, b->hostname);
	snprintf (num, sizeof num, " agentbox.pids=%llu", (unsigned long long)b->pids);
	put_str (&s, num);
	for (size_t i = 0; i < b->n_entries; i++) {
		if (check_entry (&b->entries[i], err) < 0) {
			free (s.p);
			return NULL;
		}
		put_entry (&s, &b->entries[i]);
	}
	return s.p;
}

/* ---- parsing --------------------------------------------------------------------- */

static int
parse_u64 (const char *s, uint64_t *out)
{
	char *end;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	*out = strtoull (s, &end, 10);
	return errno || *end ? -1 : 0;
}

/* Split "a,b,c" into at most 3 fields. */
static size_t
split (const char *v, const char *f[3], size_t len[3])
{
	size_t n = 0;

	while (n < 3) {
		const char *comma = strchr (v, ',');
		f[n] = v;
		len[n] = comma ? (size_t)(comma - v) : strlen (v);
		n++;
		if (!comma)
			return n;
		v = comma + 1;
	}
	return 4; /* too many */
}

static int
parse_entry (const char *v, struct ab_vm_boot_s *b, ab_error_t *err)
{
	const char *f[3];
	size_t len[3], n = split (v, f, len), kind;
	struct ab_vm_entry_s e = { 0 };
	static const size_t fields[] = {
		[AB_VM_ROOT] = 2, [AB_VM_RO] = 3,   [AB_VM_RW] = 3,  [AB_VM_TMPFS] = 3,
		[AB_VM_LINK] = 3, [AB_VM_MASK] = 2, [AB_VM_DISK] = 2
	};
	char *size = NULL;
	int r = 0;

	for (kind = 0; kind < N_KINDS; kind++)
		if (strlen (kind_names[kind]) == len[0]
		    && strncmp (f[0], kind_names[kind], len[0]) == 0)
			break;
	if (kind == N_KINDS || n != fields[kind])
		return ab_error (err, 0, AB_E_INVALID, "vm boot: bad entry '%.64s'", v);
	e.kind = (enum ab_vm_entry_kind)kind;
	if (is_root_kind (e.kind) || kind == AB_VM_RO || kind == AB_VM_RW)
		e.tag = xstrndup (f[1], len[1]);
	if (!is_root_kind (e.kind))
		e.path = ab_pct_decode (f[kind == AB_VM_RO || kind == AB_VM_RW ? 2 : 1],
		                        len[kind == AB_VM_RO || kind == AB_VM_RW ? 2 : 1], false);
	if (kind == AB_VM_LINK && !(e.target = ab_pct_decode (f[2], len[2], false)))
		r = ab_error (err, 0, AB_E_INVALID, "vm boot: bad link target");
	if (kind == AB_VM_TMPFS
	    && ((size = xstrndup (f[2], len[2])), parse_u64 (size, &e.size) < 0))
		r = ab_error (err, 0, AB_E_INVALID, "vm boot: bad tmpfs size");
	if (r == 0)
		r = check_entry (&e, err);
	if (r == 0)
		ab_vm_boot_add (b, e.kind, e.tag, e.path, e.target, e.size);
	free (size);
	free (e.tag);
	free (e.path);
	free (e.target);
	return r;
}

static int
parse_param (const char *tok, struct ab_vm_boot_s *b, ab_error_t *err)
{
	const char *eq = strchr (tok, '=');
	const char *v = eq ? eq + 1 : "";
	size_t klen = eq ? (size_t)(eq - tok) : strlen (tok);

	if (klen == 13 && strncmp (tok, "agentbox.host", klen) == 0) {
		if (check_hostname (v, err) < 0)
			return -1;
		free (b->hostname);
		b->hostname = xstrdup (v);
		return 0;
	}
	if (klen == 13 && strncmp (tok, "agentbox.pids", klen) == 0)
		return parse_u64 (v, &b->pids) < 0
		               ? ab_error (err, 0, AB_E_INVALID, "vm boot: bad pids '%.32s'", v)
		               : 0;
	if (klen == 10 && strncmp (tok, "agentbox.m", klen) == 0)
		return parse_entry (v, b, err);
	return ab_error (err, 0, AB_E_INVALID, "vm boot: unknown parameter '%.*s'", (int)klen, tok);
}

int
ab_vm_boot_parse (const char *cmdline, struct ab_vm_boot_s *b, ab_error_t *err)
{
	const char *p = cmdline;

	memset (b, 0, sizeof *b);
	while (*p) {
		size_t n;
		char *tok;
		int r = 0;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		n = strcspn (p, " \t\n");
		if (n == 0)
			break;
		if (n == 2 && p[0] == '-' && p[1] == '-')
			break; /* the rest is init's argv */
		tok = xstrndup (p, n);
		if (strncmp (tok, "agentbox.", 9) == 0)
			r = parse_param (tok, b, err);
		free (tok);
		if (r < 0) {
			ab_vm_boot_free (b);
			return -1;
		}
		p += n;
	}
	if (!b->hostname)
		b->hostname = xstrdup ("agentbox");
	return 0;
}
