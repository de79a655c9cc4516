/* The agent wire protocol: framed messages on one reliable byte stream
 * between the host-side session and agentbox-agent (PID 1).  See
 * docs/protocol.md.  Links libc only: the agent includes it statically.
 *
 * Frame = 12-byte header (big-endian) + payload:
 *   u32 length   payload bytes, at most AB_PROTO_MAX_PAYLOAD
 *   u16 type     enum ab_msg_type
 *   u16 flags    reserved, 0
 *   u32 channel  0 = control; later issues multiplex streams on others
 * Payloads of control messages are TLV records: u16 tag, u32 length, bytes. */
#ifndef AB_PROTO_PROTO_H
#define AB_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_PROTO_VERSION     1 /* one-shot: one EXEC per connection (docs/protocol.md) */
#define AB_PROTO_VERSION_2   2 /* service mode: many channels (docs/protocol-v2.md) */
#define AB_PROTO_HEADER_SIZE 12
#define AB_PROTO_MAX_PAYLOAD (1U << 20)

/* Where a backend hands the agent its door when it execs it (part of the
 * contract between every backend and PID 1, like the frames themselves):
 * one-shot mode, the connection to the host is always this fd. */
#define AB_AGENT_DOOR_FD 3
/* In service mode: a listening unix socket; each accepted connection is a
 * session (docs/protocol-v2.md).  Absent in one-shot mode. */
#define AB_AGENT_LISTEN_FD 4

enum ab_msg_type {
	AB_MSG_HELLO = 1,   /* agent -> host: TAG_VERSION */
	AB_MSG_EXEC = 2,    /* host -> agent: start the command */
	AB_MSG_STARTED = 3, /* agent -> host: TAG_PID; carries the pty master fd in tty mode */
	AB_MSG_SIGNAL = 4,  /* host -> agent: TAG_SIGNAL, delivered to the command's group */
	AB_MSG_EXIT = 5,    /* agent -> host: TAG_WAIT_STATUS, TAG_TIMED_OUT, TAG_EXEC_ERRNO */
	AB_MSG_ERROR = 6,   /* agent -> host: TAG_MESSAGE; the agent could not do what was asked */
	AB_MSG_EGRESS_LISTEN = 7, /* host -> agent, before EXEC: TAG_PORT; listen on 127.0.0.1
	                             (one-shot: once per port, up to 4) */
	AB_MSG_EGRESS_CONN = 8,   /* agent -> host: one accepted connection, its fd by SCM_RIGHTS;
	                             one-shot: TAG_PORT = the port it came in on */

	/* Version 2 (docs/protocol-v2.md).  Requests carry TAG_REQ_ID and are
	 * answered by exactly one OK or FAIL (FILE_LIST may answer with several
	 * OK frames, all but the last with TAG_MORE). */
	AB_MSG_OK = 10,     /* agent -> host: TAG_REQ_ID, results */
	AB_MSG_FAIL = 11,   /* agent -> host: TAG_REQ_ID, TAG_CODE, TAG_ERRNO, TAG_MESSAGE */
	AB_MSG_CONFIG = 12, /* host -> agent: TAG_ROOT..., TAG_RW_PATH..., TAG_NOFILE */
	/* On channel C != 0; payload raw bytes except EXIT/WINDOW/RESET (TLV). */
	AB_MSG_DATA = 20,   /* file and port bytes, either way */
	AB_MSG_STDOUT = 21, /* agent -> host */
	AB_MSG_STDERR = 22, /* agent -> host */
	AB_MSG_STDIN = 23,  /* host -> agent, on a process channel */
	AB_MSG_EOF = 24,    /* no more bytes from the sender in this direction */
	AB_MSG_WINDOW = 25, /* TAG_BYTES: the receiver grants that many more bytes */
	AB_MSG_RESET = 26,  /* the channel ends abnormally (TAG_CODE, TAG_MESSAGE), either way */
	AB_MSG_PROC_START = 30,
	AB_MSG_PROC_EXIT = 31, /* agent -> host on the process channel */
	AB_MSG_PROC_SIGNAL = 32,
	AB_MSG_PROC_RESIZE = 33,
	AB_MSG_PROC_LIST = 34,
	AB_MSG_PROC_ATTACH = 35,
	AB_MSG_PROC_STDIN = 36,       /* by pid: TAG_PID, TAG_DATA */
	AB_MSG_PROC_CLOSE_STDIN = 37, /* by pid */
	AB_MSG_FILE_READ = 40,
	AB_MSG_FILE_WRITE = 41,
	AB_MSG_FILE_LIST = 42,
	AB_MSG_FILE_STAT = 43,
	AB_MSG_FILE_MKDIR = 44,
	AB_MSG_FILE_REMOVE = 45,
	AB_MSG_FILE_RENAME = 46,
	AB_MSG_FILE_WATCH = 47,  /* host -> agent: TAG_PATH (a directory), TAG_CHANNEL,
	                            TAG_RECURSIVE; then WATCH_EVENT frames on the channel */
	AB_MSG_WATCH_EVENT = 48, /* agent -> host on a watch channel: TAG_EVENT, TAG_NAME
	                            (relative to the watched directory), TAG_FTYPE; its
	                            payload counts against the channel's credit */
	AB_MSG_PORT_OPEN = 50,
	AB_MSG_EGRESS_OPEN = 51,  /* host -> agent: claim an announced egress connection
	                             (TAG_CONN, TAG_CHANNEL); then DATA as for PORT_OPEN */
	AB_MSG_EGRESS_READY = 52, /* agent -> host, channel 0: a connection waits to be
	                             claimed (TAG_PORT, TAG_CONN); backends without fd passing */
	AB_MSG_SHUTDOWN = 60,
	AB_MSG_PING = 61,
};

enum ab_msg_tag {
	AB_TAG_VERSION = 1,
	AB_TAG_ARG = 2, /* repeated, in order */
	AB_TAG_ENV = 3, /* repeated KEY=VALUE */
	AB_TAG_CWD = 4,
	AB_TAG_UID = 5,
	AB_TAG_GID = 6,
	AB_TAG_TTY = 7, /* u32 0/1 */
	AB_TAG_ROWS = 8,
	AB_TAG_COLS = 9,
	AB_TAG_TIMEOUT_MS = 10, /* u64 */
	AB_TAG_GRACE_MS = 11,   /* u64 */
	AB_TAG_NOFILE = 12,     /* u64 */
	AB_TAG_RW_PATH = 13,    /* repeated: Landlock write access beneath it */
	AB_TAG_PID = 14,
	AB_TAG_SIGNAL = 15,
	AB_TAG_WAIT_STATUS = 16,
	AB_TAG_TIMED_OUT = 17,
	AB_TAG_EXEC_ERRNO = 18,
	AB_TAG_MESSAGE = 19,
	AB_TAG_LANDLOCK_ABI = 20,
	AB_TAG_PORT = 21,
	/* Version 2 */
	AB_TAG_REQ_ID = 30,   /* u32, chosen by the host */
	AB_TAG_CODE = 31,     /* u32 wire error kind (enum ab_wire_code) */
	AB_TAG_ERRNO = 32,    /* u32 */
	AB_TAG_FEATURES = 33, /* u32 bits */
	AB_TAG_CHANNEL = 34,  /* u32, non-zero, chosen by the host */
	AB_TAG_STDIN = 35,    /* u32 0/1: the client will write stdin */
	AB_TAG_PATH = 36,
	AB_TAG_TO = 37,
	AB_TAG_MODE = 38,     /* u32 */
	AB_TAG_SIZE = 39,     /* u64 */
	AB_TAG_FTYPE = 40,    /* u32 ab_wire_ftype */
	AB_TAG_MTIME_MS = 41, /* u64 (two's complement of an int64) */
	AB_TAG_NAME = 42,
	AB_TAG_ENTRY = 43,         /* nested TLV: NAME FTYPE SIZE MODE MTIME_MS */
	AB_TAG_PROC = 44,          /* nested TLV: PID ARG... RUNNING TTY WAIT_STATUS ... */
	AB_TAG_RUNNING = 45,       /* u32 0/1 */
	AB_TAG_RECURSIVE = 46,     /* u32 0/1 */
	AB_TAG_BYTES = 47,         /* u32 */
	AB_TAG_ROOT = 48,          /* repeated: a file-service root */
	AB_TAG_DATA = 49,          /* raw bytes */
	AB_TAG_CONFIGURED = 50,    /* u32 0/1 */
	AB_TAG_STARTED_MS = 51,    /* u64 Unix ms */
	AB_TAG_MORE = 52,          /* u32 0/1: more OK frames follow for this REQ_ID */
	AB_TAG_CONN = 53,          /* u32, non-zero: an egress connection waiting in the agent */
	AB_TAG_EGRESS_STREAM = 54, /* u32 0/1: EGRESS_LISTEN without fd passing (EGRESS_READY) */
	AB_TAG_EVENT = 55,         /* u32 ab_wire_watch_event */
	AB_TAG_XATTR = 56,         /* repeated KEY=VALUE: a file's user.e2b.KEY xattrs */
	AB_TAG_MAX_ = 57,
};

/* Error kinds on the wire (TAG_CODE): fixed numbers, mapped to and from
 * ab_error_kind by table so that reordering the enum never changes the
 * protocol. */
enum ab_wire_code {
	AB_WIRE_SYSTEM = 1,
	AB_WIRE_INVALID = 2,
	AB_WIRE_DENIED = 3,
	AB_WIRE_NOT_FOUND = 4,
	AB_WIRE_CONFLICT = 5,
	AB_WIRE_LIMIT = 6,
	AB_WIRE_INTERNAL = 7,
};

enum ab_wire_ftype {
	AB_WIRE_FT_OTHER = 0,
	AB_WIRE_FT_FILE = 1,
	AB_WIRE_FT_DIR = 2,
	AB_WIRE_FT_SYMLINK = 3,
};

/* What a WATCH_EVENT reports (the names are envd's EventType). */
enum ab_wire_watch_event {
	AB_WIRE_WATCH_CREATE = 1, /* created, or renamed into the watched tree */
	AB_WIRE_WATCH_WRITE = 2,
	AB_WIRE_WATCH_REMOVE = 3,
	AB_WIRE_WATCH_RENAME = 4, /* renamed away: the old name */
	AB_WIRE_WATCH_CHMOD = 5,  /* attributes changed */
};

/* Version 2 flow control: bytes in flight per channel and direction. */
#define AB_PROTO_WINDOW (256U * 1024)
/* Largest data frame either side sends (a fraction of the window, so
 * credit returns while a stream flows). */
#define AB_PROTO_DATA_CHUNK (64U * 1024)

struct ab_frame_s {
	uint16_t type;
	uint16_t flags;
	uint32_t channel;
	uint32_t length;
	uint8_t *payload; /* owned, length bytes */
};

/* A growable TLV payload being built. */
struct ab_tlv_writer_s {
	uint8_t *buf;
	size_t len, cap;
};

/* A cursor over a received payload; every length is checked. */
struct ab_tlv_reader_s {
	const uint8_t *buf;
	size_t len, off;
};

struct ab_tlv_s {
	uint16_t tag;
	uint32_t length;
	const uint8_t *value;
};

void ab_tlv_put (struct ab_tlv_writer_s *w, uint16_t tag, const void *value, size_t len);
void ab_tlv_put_str (struct ab_tlv_writer_s *w, uint16_t tag, const char *s);
void ab_tlv_put_u32 (struct ab_tlv_writer_s *w, uint16_t tag, uint32_t v);
void ab_tlv_put_u64 (struct ab_tlv_writer_s *w, uint16_t tag, uint64_t v);
void ab_tlv_writer_free (struct ab_tlv_writer_s *w);

void ab_tlv_reader_init (struct ab_tlv_reader_s *r, const uint8_t *buf, size_t len);
/* 1 = got a record, 0 = end, -1 = malformed. */
int ab_tlv_next (struct ab_tlv_reader_s *r, struct ab_tlv_s *out, ab_error_t *err);
int ab_tlv_u32 (const struct ab_tlv_s *t, uint32_t *v, ab_error_t *err);
int ab_tlv_u64 (const struct ab_tlv_s *t, uint64_t *v, ab_error_t *err);
/* A NUL-terminated copy; embedded NULs are malformed. */
char *ab_tlv_strdup (const struct ab_tlv_s *t, ab_error_t *err);

/* Send one frame, with optional fds attached (unix sockets only). */
int ab_frame_send (int fd, uint16_t type, uint32_t channel, const void *payload, size_t len,
                   const int *fds, size_t n_fds, ab_error_t *err);
/* Receive one frame (blocking).  Returns 1 on a frame, 0 on clean EOF
 * before any byte, -1 on error.  Received fds land in fds[] (up to max_fds). */
int ab_frame_recv (int fd, struct ab_frame_s *frame, int *fds, size_t max_fds, size_t *n_fds,
                   ab_error_t *err);
void ab_frame_free (struct ab_frame_s *frame);

void ab_proto_encode_header (uint8_t out[AB_PROTO_HEADER_SIZE], uint16_t type, uint32_t channel,
                             uint32_t length);
int ab_proto_decode_header (const uint8_t in[AB_PROTO_HEADER_SIZE], struct ab_frame_s *frame,
                            ab_error_t *err);

#endif
