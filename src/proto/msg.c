/* Version 2 messages, encoded and decoded by two tables: what each tag is
 * (its kind and where it lives in struct ab_msg_s) and which tags each
 * message type may and must carry.  The agent decodes what the host sends
 * with this code inside PID 1, so a malformed payload must end in an error,
 * never in a memory error or a half-understood request (CVE-2021-43784 is
 * what an unchecked length in such a message looks like). */
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "proto/msg.h"

enum field_kind {
	F_U32 = 1,
	F_BOOL,
	F_U64,
	F_I64,
	F_STR,
	F_STRV,
	F_BYTES,
	F_NESTED,
};

struct field_s {
	uint8_t kind;
	uint16_t nested;  /* schema of F_NESTED records */
	size_t off;       /* the field */
	size_t count_off; /* F_STRV, F_NESTED: the count; F_BYTES: the length */
	uint32_t max;     /* F_U32: largest value accepted (0 = any) */
};

#define OFF(f) offsetof (struct ab_msg_s, f)
#define U32(f)                                                                                     \
	{                                                                                          \
		F_U32, 0, OFF (f), 0, 0                                                            \
	}
#define U32_MAX(f, m)                                                                              \
	{                                                                                          \
		F_U32, 0, OFF (f), 0, (m)                                                          \
	}
#define BOOL(f)                                                                                    \
	{                                                                                          \
		F_BOOL, 0, OFF (f), 0, 0                                                           \
	}
#define U64(f)                                                                                     \
	{                                                                                          \
		F_U64, 0, OFF (f), 0, 0                                                            \
	}
#define STR(f)                                                                                     \
	{                                                                                          \
		F_STR, 0, OFF (f), 0, 0                                                            \
	}
#define STRV(f)                                                                                    \
	{                                                                                          \
		F_STRV, 0, OFF (f), OFF (n_##f), 0                                                 \
	}

static const struct field_s fields[AB_TAG_MAX_] = {
	[AB_TAG_VERSION] = U32 (version),
	[AB_TAG_ARG] = STRV (argv),
	[AB_TAG_ENV] = STRV (env),
	[AB_TAG_CWD] = STR (cwd),
	[AB_TAG_UID] = U32 (uid),
	[AB_TAG_GID] = U32 (gid),
	[AB_TAG_TTY] = BOOL (tty),
	[AB_TAG_ROWS] = U32_MAX (rows, 65535),
	[AB_TAG_COLS] = U32_MAX (cols, 65535),
	[AB_TAG_TIMEOUT_MS] = U64 (timeout_ms),
	[AB_TAG_GRACE_MS] = U64 (grace_ms),
	[AB_TAG_NOFILE] = U64 (nofile),
	[AB_TAG_RW_PATH] = STRV (rw_paths),
	[AB_TAG_PID] = U32 (pid),
	[AB_TAG_SIGNAL] = U32_MAX (signal, 64),
	[AB_TAG_WAIT_STATUS] = U32 (wait_status),
	[AB_TAG_TIMED_OUT] = BOOL (timed_out),
	[AB_TAG_EXEC_ERRNO] = U32 (exec_errno),
	[AB_TAG_MESSAGE] = STR (message),
	[AB_TAG_LANDLOCK_ABI] = U32 (landlock_abi),
	[AB_TAG_PORT] = U32_MAX (port, 65535),
	[AB_TAG_REQ_ID] = U32 (req_id),
	[AB_TAG_CODE] = U32_MAX (code, AB_WIRE_INTERNAL),
	[AB_TAG_ERRNO] = U32 (errnum),
	[AB_TAG_FEATURES] = U32 (features),
	[AB_TAG_CHANNEL] = U32 (channel),
	[AB_TAG_STDIN] = BOOL (stdin_open),
	[AB_TAG_PATH] = STR (path),
	[AB_TAG_TO] = STR (to),
	[AB_TAG_MODE] = U32_MAX (mode, 07777),
	[AB_TAG_SIZE] = U64 (size),
	[AB_TAG_FTYPE] = U32_MAX (ftype, AB_WIRE_FT_SYMLINK),
	[AB_TAG_MTIME_MS] = { F_I64, 0, OFF (mtime_ms), 0, 0 },
	[AB_TAG_NAME] = STR (name),
	[AB_TAG_ENTRY] = { F_NESTED, AB_MSG_NESTED_ENTRY, OFF (entries), OFF (n_entries), 0 },
	[AB_TAG_PROC] = { F_NESTED, AB_MSG_NESTED_PROC, OFF (procs), OFF (n_procs), 0 },
	[AB_TAG_RUNNING] = BOOL (running),
	[AB_TAG_RECURSIVE] = BOOL (recursive),
	[AB_TAG_BYTES] = U32 (bytes),
	[AB_TAG_ROOT] = STRV (roots),
	[AB_TAG_DATA] = { F_BYTES, 0, OFF (data), OFF (data_len), 0 },
	[AB_TAG_CONFIGURED] = BOOL (configured),
	[AB_TAG_STARTED_MS] = U64 (started_ms),
	[AB_TAG_MORE] = BOOL (more),
	[AB_TAG_CONN] = U32 (conn),
	[AB_TAG_EGRESS_STREAM] = BOOL (egress_stream),
	[AB_TAG_EVENT] = { F_U32, 0, OFF (event), 0, AB_WIRE_WATCH_CHMOD },
	[AB_TAG_XATTR] = STRV (xattrs),
};

#define B(t) (UINT64_C (1) << AB_TAG_##t)

struct schema_s {
	uint16_t type;
	uint64_t required, optional;
};

static const struct schema_s schemas[] = {
	{ AB_MSG_HELLO, B (VERSION), B (FEATURES) | B (LANDLOCK_ABI) | B (CONFIGURED) },
	{ AB_MSG_OK, B (REQ_ID),
	  B (PID) | B (SIZE) | B (MODE) | B (FTYPE) | B (MTIME_MS) | B (ENTRY) | B (PROC) | B (MORE)
	          | B (LANDLOCK_ABI) | B (BYTES) | B (PORT) | B (UID) | B (GID) | B (TO)
	          | B (XATTR) },
	{ AB_MSG_FAIL, B (REQ_ID) | B (CODE), B (ERRNO) | B (MESSAGE) },
	{ AB_MSG_CONFIG, B (REQ_ID), B (ROOT) | B (RW_PATH) | B (NOFILE) | B (UID) | B (GID) },
	{ AB_MSG_WINDOW, B (BYTES), 0 },
	{ AB_MSG_RESET, 0, B (CODE) | B (ERRNO) | B (MESSAGE) },
	{ AB_MSG_PROC_EXIT, B (WAIT_STATUS), B (TIMED_OUT) | B (EXEC_ERRNO) },
	{ AB_MSG_PROC_START, B (REQ_ID) | B (ARG),
	  B (CHANNEL) | B (ENV) | B (CWD) | B (UID) | B (GID) | B (TTY) | B (ROWS) | B (COLS)
	          | B (TIMEOUT_MS) | B (GRACE_MS) | B (STDIN) },
	{ AB_MSG_PROC_SIGNAL, B (REQ_ID) | B (PID) | B (SIGNAL), 0 },
	{ AB_MSG_PROC_RESIZE, B (REQ_ID) | B (PID) | B (ROWS) | B (COLS), 0 },
	{ AB_MSG_PROC_LIST, B (REQ_ID), 0 },
	{ AB_MSG_PROC_ATTACH, B (REQ_ID) | B (PID) | B (CHANNEL), 0 },
	{ AB_MSG_PROC_STDIN, B (REQ_ID) | B (PID) | B (DATA), 0 },
	{ AB_MSG_PROC_CLOSE_STDIN, B (REQ_ID) | B (PID), 0 },
	{ AB_MSG_FILE_READ, B (REQ_ID) | B (PATH) | B (CHANNEL), 0 },
	{ AB_MSG_FILE_WRITE, B (REQ_ID) | B (PATH) | B (CHANNEL), B (MODE) | B (XATTR) },
	{ AB_MSG_FILE_LIST, B (REQ_ID) | B (PATH), 0 },
	{ AB_MSG_FILE_STAT, B (REQ_ID) | B (PATH), 0 },
	{ AB_MSG_FILE_MKDIR, B (REQ_ID) | B (PATH), B (MODE) },
	{ AB_MSG_FILE_REMOVE, B (REQ_ID) | B (PATH), B (RECURSIVE) },
	{ AB_MSG_FILE_RENAME, B (REQ_ID) | B (PATH) | B (TO), 0 },
	{ AB_MSG_FILE_WATCH, B (REQ_ID) | B (PATH) | B (CHANNEL), B (RECURSIVE) },
	{ AB_MSG_WATCH_EVENT, B (EVENT) | B (NAME), B (FTYPE) },
	{ AB_MSG_PORT_OPEN, B (REQ_ID) | B (PORT) | B (CHANNEL), 0 },
	{ AB_MSG_EGRESS_LISTEN, B (REQ_ID) | B (PORT), B (EGRESS_STREAM) | B (TIMEOUT_MS) },
	{ AB_MSG_EGRESS_READY, B (PORT) | B (CONN), 0 },
	{ AB_MSG_EGRESS_OPEN, B (REQ_ID) | B (CONN) | B (CHANNEL), 0 },
	{ AB_MSG_EGRESS_CONN, 0, 0 },
	{ AB_MSG_SHUTDOWN, B (REQ_ID), B (GRACE_MS) },
	{ AB_MSG_PING, B (REQ_ID), 0 },
	{ AB_MSG_NESTED_ENTRY, B (NAME),
	  B (FTYPE) | B (SIZE) | B (MODE) | B (MTIME_MS) | B (UID) | B (GID) | B (TO) | B (XATTR) },
	{ AB_MSG_NESTED_PROC, B (PID),
	  B (ARG) | B (RUNNING) | B (TTY) | B (WAIT_STATUS) | B (TIMED_OUT) | B (EXEC_ERRNO)
	          | B (STARTED_MS) },
};

static const struct schema_s *
schema_of (uint16_t type)
{
	for (size_t i = 0; i < sizeof schemas / sizeof *schemas; i++)
		if (schemas[i].type == type)
			return &schemas[i];
	return NULL;
}

bool
ab_msg_known_type (uint16_t type)
{
	return type < AB_MSG_NESTED_ENTRY && schema_of (type) != NULL;
}

void
ab_msg_init (struct ab_msg_s *m, uint16_t type)
{
	memset (m, 0, sizeof *m);
	m->type = type;
}

/* ---- decoding ----------------------------------------------------------- */

static void *
at (struct ab_msg_s *m, size_t off)
{
	return (char *)m + off;
}

static int
take_string (const struct ab_tlv_s *t, char **out, ab_error_t *err)
{
	if (t->length > AB_MSG_MAX_PATH && t->tag != AB_TAG_MESSAGE && t->tag != AB_TAG_ARG
	    && t->tag != AB_TAG_ENV)
		return ab_error (err, 0, AB_E_LIMIT, "TLV tag %u: string of %u bytes is too long",
		                 t->tag, t->length);
	*out = ab_tlv_strdup (t, err);
	return *out ? 0 : -1;
}

static int
push_string (const struct field_s *f, struct ab_msg_s *m, const struct ab_tlv_s *t, ab_error_t *err)
{
	char ***v = at (m, f->off);
	size_t *n = at (m, f->count_off);
	char *s;

	if (*n >= AB_MSG_MAX_STRV)
		return ab_error (err, 0, AB_E_LIMIT, "TLV tag %u: too many records", t->tag);
	if (take_string (t, &s, err) < 0)
		return -1;
	*v = xrealloc (*v, (*n + 2) * sizeof **v);
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

static int decode_into (uint16_t type, const uint8_t *payload, size_t len, struct ab_msg_s *m,
                        int depth, ab_error_t *err);

static int
push_nested (const struct field_s *f, struct ab_msg_s *m, const struct ab_tlv_s *t, int depth,
             ab_error_t *err)
{
	struct ab_msg_s **v = at (m, f->off);
	size_t *n = at (m, f->count_off);

	if (depth > 0)
		return ab_error (err, 0, AB_E_INVALID, "TLV tag %u: records nested too deep",
		                 t->tag);
	if (*n >= AB_MSG_MAX_NESTED)
		return ab_error (err, 0, AB_E_LIMIT, "TLV tag %u: too many records", t->tag);
	/* Grow by doubling: a listing of many entries stays linear. */
	if ((*n & (*n - 1)) == 0)
		*v = xrealloc (*v, (*n ? *n * 2 : 1) * sizeof **v);
	ab_msg_init (&(*v)[*n], f->nested);
	(*n)++;
	return decode_into (f->nested, t->value, t->length, &(*v)[*n - 1], depth + 1, err);
}

static int
take_u32 (const struct field_s *f, struct ab_msg_s *m, const struct ab_tlv_s *t, ab_error_t *err)
{
	uint32_t v;

	if (ab_tlv_u32 (t, &v, err) < 0)
		return -1;
	if (f->kind == F_BOOL) {
		if (v > 1)
			return ab_error (err, 0, AB_E_INVALID,
			                 "TLV tag %u: boolean %u is not 0 or 1", t->tag, v);
		*(bool *)at (m, f->off) = v == 1;
		return 0;
	}
	if (f->max && v > f->max)
		return ab_error (err, 0, AB_E_INVALID, "TLV tag %u: value %u out of range", t->tag,
		                 v);
	if ((t->tag == AB_TAG_CHANNEL || t->tag == AB_TAG_PORT || t->tag == AB_TAG_SIGNAL
	     || t->tag == AB_TAG_PID || t->tag == AB_TAG_CONN || t->tag == AB_TAG_EVENT)
	    && v == 0)
		return ab_error (err, 0, AB_E_INVALID, "TLV tag %u: must not be 0", t->tag);
	*(uint32_t *)at (m, f->off) = v;
	return 0;
}

static int
take_scalar (const struct field_s *f, struct ab_msg_s *m, const struct ab_tlv_s *t, ab_error_t *err)
{
	uint64_t v;

	switch (f->kind) {
	case F_U32:
	case F_BOOL: return take_u32 (f, m, t, err);
	case F_U64: return ab_tlv_u64 (t, at (m, f->off), err);
	case F_I64:
		if (ab_tlv_u64 (t, &v, err) < 0)
			return -1;
		*(int64_t *)at (m, f->off) = (int64_t)v;
		return 0;
	case F_STR: return take_string (t, at (m, f->off), err);
	case F_BYTES:
		*(const uint8_t **)at (m, f->off) = t->value;
		*(size_t *)at (m, f->count_off) = t->length;
		return 0;
	default: return ab_error (err, 0, AB_E_INTERNAL, "TLV tag %u: bad field table", t->tag);
	}
}

static int
apply_record (const struct schema_s *s, struct ab_msg_s *m, const struct ab_tlv_s *t, int depth,
              ab_error_t *err)
{
	const struct field_s *f;
	uint64_t bit;

	if (t->tag >= AB_TAG_MAX_ || !((s->required | s->optional) >> t->tag & 1))
		return ab_error (err, 0, AB_E_INVALID, "message type %u: unknown field %u", s->type,
		                 t->tag);
	f = &fields[t->tag];
	bit = UINT64_C (1) << t->tag;
	/* Several records of a vector tag are its elements; a scalar given
	 * twice is ambiguous (which one did the sender mean?) and refused. */
	if (f->kind == F_STRV || f->kind == F_NESTED) {
		m->present |= bit;
		return f->kind == F_STRV ? push_string (f, m, t, err)
		                         : push_nested (f, m, t, depth, err);
	}
	if (m->present & bit)
		return ab_error (err, 0, AB_E_INVALID, "message type %u: field %u given twice",
		                 s->type, t->tag);
	m->present |= bit;
	return take_scalar (f, m, t, err);
}

static int
decode_into (uint16_t type, const uint8_t *payload, size_t len, struct ab_msg_s *m, int depth,
             ab_error_t *err)
{
	const struct schema_s *s = schema_of (type);
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	uint64_t missing;
	int k;

	if (!s)
		return ab_error (err, 0, AB_E_INVALID, "unknown message type %u", type);
	ab_tlv_reader_init (&r, payload, len);
	while ((k = ab_tlv_next (&r, &t, err)) > 0)
		if (apply_record (s, m, &t, depth, err) < 0)
			return -1;
	if (k < 0)
		return -1;
	missing = s->required & ~m->present;
	if (missing)
		return ab_error (err, 0, AB_E_INVALID, "message type %u: field %d missing", type,
		                 __builtin_ctzll (missing));
	return 0;
}

int
ab_msg_decode (uint16_t type, const uint8_t *payload, size_t len, struct ab_msg_s *m,
               ab_error_t *err)
{
	ab_msg_init (m, type);
	if (type >= AB_MSG_NESTED_ENTRY)
		return ab_error (err, 0, AB_E_INVALID, "unknown message type %u", type);
	return decode_into (type, payload, len, m, 0, err);
}

/* ---- freeing ------------------------------------------------------------ */

static void
free_strv (char **v)
{
	for (char **p = v; p && *p; p++)
		free (*p);
	free (v);
}

void
ab_msg_free (struct ab_msg_s *m)
{
	free (m->cwd);
	free (m->path);
	free (m->to);
	free (m->message);
	free (m->name);
	free_strv (m->argv);
	free_strv (m->env);
	free_strv (m->rw_paths);
	free_strv (m->roots);
	free_strv (m->xattrs);
	for (size_t i = 0; i < m->n_entries; i++)
		ab_msg_free (&m->entries[i]);
	for (size_t i = 0; i < m->n_procs; i++)
		ab_msg_free (&m->procs[i]);
	free (m->entries);
	free (m->procs);
	ab_msg_init (m, m->type);
}

/* ---- encoding ----------------------------------------------------------- */

static void
encode_field (struct ab_tlv_writer_s *w, const struct ab_msg_s *m, uint16_t tag)
{
	const struct field_s *f = &fields[tag];
	const void *p = (const char *)m + f->off;
	const bool set = ab_msg_has (m, tag);

	switch (f->kind) {
	case F_U32:
		if (set)
			ab_tlv_put_u32 (w, tag, *(const uint32_t *)p);
		break;
	case F_BOOL:
		if (set)
			ab_tlv_put_u32 (w, tag, *(const bool *)p ? 1 : 0);
		break;
	case F_U64:
	case F_I64:
		if (set)
			ab_tlv_put_u64 (w, tag, *(const uint64_t *)p);
		break;
	case F_STR:
		if (*(char *const *)p)
			ab_tlv_put_str (w, tag, *(char *const *)p);
		break;
	case F_STRV:
		for (char *const *v = *(char **const *)p; v && *v; v++)
			ab_tlv_put_str (w, tag, *v);
		break;
	case F_BYTES:
		if (*(const uint8_t *const *)p)
			ab_tlv_put (w, tag, *(const uint8_t *const *)p,
			            *(const size_t *)((const char *)m + f->count_off));
		break;
	case F_NESTED: {
		const struct ab_msg_s *v = *(struct ab_msg_s *const *)p;
		size_t n = *(const size_t *)((const char *)m + f->count_off);
		for (size_t i = 0; i < n; i++) {
			struct ab_tlv_writer_s sub = { 0 };
			ab_msg_encode (&sub, &v[i]);
			ab_tlv_put (w, tag, sub.buf, sub.len);
			ab_tlv_writer_free (&sub);
		}
		break;
	}
	default: break;
	}
}

void
ab_msg_encode (struct ab_tlv_writer_s *w, const struct ab_msg_s *m)
{
	const struct schema_s *s = schema_of (m->type);
	uint64_t allowed;

	if (!s)
		return;
	allowed = s->required | s->optional;
	for (uint16_t tag = 1; tag < AB_TAG_MAX_; tag++)
		if (allowed >> tag & 1)
			encode_field (w, m, tag);
}

/* ---- error codes -------------------------------------------------------- */

static const struct {
	ab_error_kind kind;
	uint32_t code;
} wire_codes[] = {
	{ AB_E_SYSTEM, AB_WIRE_SYSTEM },     { AB_E_INVALID, AB_WIRE_INVALID },
	{ AB_E_DENIED, AB_WIRE_DENIED },     { AB_E_NOT_FOUND, AB_WIRE_NOT_FOUND },
	{ AB_E_CONFLICT, AB_WIRE_CONFLICT }, { AB_E_LIMIT, AB_WIRE_LIMIT },
	{ AB_E_INTERNAL, AB_WIRE_INTERNAL },
};

uint32_t
ab_wire_code_from_kind (ab_error_kind kind)
{
	for (size_t i = 0; i < sizeof wire_codes / sizeof *wire_codes; i++)
		if (wire_codes[i].kind == kind)
			return wire_codes[i].code;
	return AB_WIRE_INTERNAL;
}

ab_error_kind
ab_wire_code_to_kind (uint32_t code)
{
	for (size_t i = 0; i < sizeof wire_codes / sizeof *wire_codes; i++)
		if (wire_codes[i].code == code)
			return wire_codes[i].kind;
	return AB_E_INTERNAL;
}

/* ---- incremental frame parsing ----------------------------------------- */

int
ab_frame_parse (const uint8_t *buf, size_t len, struct ab_frame_s *f, size_t *frame_len,
                ab_error_t *err)
{
	if (len < AB_PROTO_HEADER_SIZE)
		return 0;
	if (ab_proto_decode_header (buf, f, err) < 0)
		return -1;
	if (len - AB_PROTO_HEADER_SIZE < f->length)
		return 0;
	f->payload = (uint8_t *)buf + AB_PROTO_HEADER_SIZE;
	*frame_len = AB_PROTO_HEADER_SIZE + (size_t)f->length;
	return 1;
}
