/* Filesystem snapshots of daemon sandboxes and fork (docs/snapshots.md).
 *
 * A snapshot is a directory <state-dir>/snapshots/<name>/ (0700, the
 * daemon's only) holding
 *   workspace/     the sandbox's workspace, copied (snapshot-tree.c)
 *   root-upper/    its writable root's upper layer, when it has one
 *   manifest       one line per entry of both trees
 *   snapshot.json  backend/snapshot-meta.h: format, backend, vCPUs, memory,
 *                  the manifest's SHA-256
 *   info.json      name, source sandbox, sizes and timings, for listings
 * The sandbox is paused (pause.c) for exactly the copy, so the trees are
 * consistent; a sandbox that was paused already stays paused.  Every
 * restore (`--from-snapshot`, fork) first reads snapshot.json (a damaged or
 * stale file is refused with the parser's reason), checks the backend and
 * walks the stored trees again: a manifest that hashes differently means
 * the snapshot was changed after it was taken, and it is refused.
 *
 * Memory snapshots are refused with the reason: native cannot (no CRIU
 * on this kernel); see docs/snapshots.md for gVisor and the microVM. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/snapshot-meta.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "daemon/snapshot-tree.h"
#include "net/credential-config.h"
#include "spec/spec-json.h"

#define NAME_MAX_LEN 64
#define FORK_MAX     16
#define FORK_PREFIX  "fork-"
#define FORK_TAKE    "take"
#define INFO_MAX     (64 * 1024)

static const char *const trees[] = { "workspace", "root-upper" };

static char *
snap_root (struct ab_daemon_s *d)
{
	char *root = xstrdup (d->sandboxes_dir);
	char *slash = strrchr (root, '/');

	if (slash)
		*slash = '\0';
	char *r = xasprintf ("%s/snapshots", root);
	free (root);
	return r;
}

static int
check_name (const char *n, ab_error_t *err)
{
	size_t len = n ? strlen (n) : 0;

	if (len == 0 || len > NAME_MAX_LEN || n[0] == '.'
	    || strspn (n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
	               != len)
		return ab_error (
		        err, 0, AB_E_INVALID,
		        "snapshot name '%.64s': 1-%d of [A-Za-z0-9._-], not starting with '.'",
		        n ? n : "", NAME_MAX_LEN);
	return 0;
}

static char *
snap_dir (struct ab_daemon_s *d, const char *name)
{
	cleanup_free char *root = snap_root (d);
	return xasprintf ("%s/%s", root, name);
}

static void
random_name (char *buf, size_t size, const char *prefix)
{
	unsigned char raw[6];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort ();
	snprintf (buf, size, "%s%02x%02x%02x%02x%02x%02x", prefix, raw[0], raw[1], raw[2], raw[3],
	          raw[4], raw[5]);
}

int
ab_box_snap_request (struct ab_box_s *b, json_t *spec, ab_error_t *err)
{
	json_t *ar = json_object_get (spec, "auto_resume");
	json_t *from = json_object_get (spec, "from_snapshot");

	if (ar && !json_is_boolean (ar))
		return ab_error (err, 0, AB_E_INVALID, "'auto_resume' must be a boolean");
	b->auto_resume = json_is_true (ar);
	if (from && !json_is_null (from)) {
		if (check_name (json_string_value (from), err) < 0)
			return -1;
		b->from_snapshot = xstrdup (json_string_value (from));
		/* No backend named: the snapshot's (ab_box_snap_restore), not
		 * the daemon's default. */
		if (!json_object_get (spec, "backend"))
			json_object_set_new (spec, "backend", json_string ("auto"));
	}
	json_object_del (spec, "auto_resume");
	json_object_del (spec, "from_snapshot");
	return 0;
}

static int
open_dir (const char *path, ab_error_t *err)
{
	int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	return fd;
}

/* The trees of a sandbox (its workspace, its writable root's upper
 * layer) or of a snapshot, by index into trees[]; NULL when absent. */
static char *
box_tree (struct ab_box_s *b, size_t i)
{
	char *p = i == 0 ? xstrdup (b->spec.workspace) : xasprintf ("%s/%s", b->dir, trees[i]);
	struct stat st;

	if (p && (lstat (p, &st) < 0 || !S_ISDIR (st.st_mode))) {
		free (p);
		return NULL;
	}
	return p;
}

/* Copy (dst set) or only walk every present tree of `src[i]`, the manifest
 * into mf with one header line per tree. */
static int
copy_trees (char *const src[], const char *dst_base, FILE *mf, struct ab_tree_stats_s *total,
            ab_error_t *err)
{
	memset (total, 0, sizeof *total);
	for (size_t i = 0; i < sizeof trees / sizeof *trees; i++) {
		struct ab_tree_stats_s st;
		cleanup_close int sfd = -1, dfd = -1;

		if (!src[i])
			continue;
		if ((sfd = open_dir (src[i], err)) < 0)
			return -1;
		if (dst_base) {
			cleanup_free char *dp = xasprintf ("%s/%s", dst_base, trees[i]);
			struct stat dst;
			if (mkdir (dp, 0700) < 0 && !(errno == EEXIST && stat (dp, &dst) == 0))
				return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", dp);
			if ((dfd = open_dir (dp, err)) < 0)
				return -1;
		}
		if (mf)
			fprintf (mf, "# %s\n", trees[i]);
		if (ab_tree_copy (sfd, dfd, mf, &st, err) < 0)
			return ab_error_wrap (err, "%s", trees[i]);
		total->files += st.files;
		total->dirs += st.dirs;
		total->bytes += st.bytes;
		total->skipped += st.skipped;
		total->cloned += st.cloned;
		total->copied_bytes += st.copied_bytes;
	}
	return 0;
}

static uint32_t
clamp_u32 (uint64_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

static int
write_meta (const char *dir, const char *backend, const struct ab_spec_s *spec, bool durable,
            ab_error_t *err)
{
	cleanup_close int dfd = open_dir (dir, err);
	cleanup_close int mfd = -1;
	struct ab_snapshot_meta_s m;

	if (dfd < 0)
		return -1;
	if ((mfd = openat (dfd, "manifest", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the manifest");
	/* A filesystem snapshot has no kernel: the manifest stands for both. */
	if (ab_snapshot_meta_init (&m, backend,
	                           clamp_u32 ((spec->limits.cpu_millis + 999) / 1000,
	                                      AB_SNAPSHOT_VCPU_MIN, AB_SNAPSHOT_VCPU_MAX),
	                           clamp_u32 (spec->limits.memory_bytes >> 20,
	                                      AB_SNAPSHOT_MEM_MIB_MIN, AB_SNAPSHOT_MEM_MIB_MAX),
	                           mfd, mfd, err)
	    < 0)
		return -1;
	return ab_snapshot_meta_write_ex (dfd, AB_SNAPSHOT_META_NAME, &m, durable, err);
}

static json_t *
stats_json (const struct ab_tree_stats_s *st)
{
	return json_pack ("{s:I, s:I, s:I, s:I, s:I, s:I}", "files", (json_int_t)st->files, "dirs",
	                  (json_int_t)st->dirs, "bytes", (json_int_t)st->bytes, "skipped",
	                  (json_int_t)st->skipped, "cloned", (json_int_t)st->cloned, "copied_bytes",
	                  (json_int_t)st->copied_bytes);
}

/* One snapshot at a time: two copies of one sandbox would each see the
 * other's pause as "paused already", and the first to finish would thaw
 * the sandbox under the second's copy. */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;

/* The copy itself, under a pause (unless the sandbox was paused already). */
static int
copy_paused (struct ab_daemon_s *d, struct ab_box_s *b, const char *dir, struct ab_tree_stats_s *st,
             uint64_t *paused_us, ab_error_t *err)
{
	char *src[2] = { box_tree (b, 0), box_tree (b, 1) };
	cleanup_free char *mpath = xasprintf ("%s/manifest", dir);
	bool was_paused = ab_box_is_paused (d, b);
	FILE *mf = NULL;
	uint64_t t0;
	int r;

	if (!src[0])
		r = ab_error (err, 0, AB_E_CONFLICT, "sandbox %s has no workspace to snapshot",
		              b->id);
	else if (!(mf = fopen (mpath, "wxe")))
		r = ab_error (err, errno, AB_E_SYSTEM, "create %s", mpath);
	else if (!was_paused && ab_box_pause (d, b, err) < 0)
		r = ab_error_wrap (err, "a consistent snapshot needs the sandbox paused");
	else {
		t0 = ab_mono_us ();
		r = copy_trees (src, dir, mf, st, err);
		*paused_us = ab_mono_us () - t0;
		if (!was_paused) {
			ab_error_t e2 = AB_ERROR_INIT;
			if (ab_box_resume (d, b, r < 0 ? &e2 : err) < 0 && r == 0)
				r = -1;
		}
	}
	if (mf && (fclose (mf) != 0) && r == 0)
		r = ab_error (err, errno, AB_E_SYSTEM, "write %s", mpath);
	free (src[0]);
	free (src[1]);
	return r;
}

/* Take snapshot `name` of b; its info (owned) in *info. */
static int
take_snapshot (struct ab_daemon_s *d, struct ab_box_s *b, const char *name, json_t **info,
               ab_error_t *err)
{
	cleanup_free char *root = snap_root (d);
	cleanup_free char *dir = snap_dir (d, name);
	cleanup_free char *ipath = xasprintf ("%s/info.json", dir);
	cleanup_free char *text = NULL;
	struct ab_tree_stats_s st;
	uint64_t t0 = ab_mono_us (), paused_us = 0;
	/* A fork's snapshot lives for one request: no listing needs it, no
	 * crash must keep it. */
	bool transient = strncmp (name, FORK_PREFIX, strlen (FORK_PREFIX)) == 0;

	if (ab_box_get_state (d, b) != AB_BOX_RUNNING)
		return ab_error (err, 0, AB_E_CONFLICT, "sandbox %s is %s", b->id,
		                 ab_box_state_name (ab_box_get_state (d, b)));
	if (mkdir (root, 0700) < 0 && errno != EEXIST)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", root);
	if (mkdir (dir, 0700) < 0)
		return ab_error (err, errno, errno == EEXIST ? AB_E_CONFLICT : AB_E_SYSTEM,
		                 "snapshot %s", name);
	pthread_mutex_lock (&snap_lock);
	int r = copy_paused (d, b, dir, &st, &paused_us, err);
	pthread_mutex_unlock (&snap_lock);
	if (r < 0 || write_meta (dir, b->backend, &b->spec, !transient, err) < 0) {
		ab_rm_rf (dir);
		return -1;
	}
	*info = json_pack ("{s:s, s:s, s:s, s:I, s:b, s:o, s:I, s:I}", "name", name, "source",
	                   b->id, "backend", b->backend, "created_ms", (json_int_t)ab_unix_ms (),
	                   "memory", 0, "content", stats_json (&st), "paused_us",
	                   (json_int_t)paused_us, "took_us", (json_int_t)(ab_mono_us () - t0));
	text = json_dumps (*info, JSON_COMPACT);
	if (!transient && ab_write_file_atomic (ipath, text, strlen (text), err) < 0) {
		json_decref (*info);
		ab_rm_rf (dir);
		return -1;
	}
	ab_metrics_inc ("snapshots_created");
	return 0;
}

/* Every check a restore makes before it copies a byte: the metadata
 * parses, names our backend, and the stored trees still hash to it. */
static int
verify_snapshot (const char *dir, const char *name, const char *backend, char *src[2],
                 struct ab_snapshot_meta_s *m, ab_error_t *err)
{
	cleanup_close int dfd = open_dir (dir, err);
	cleanup_file FILE *mf = NULL;
	struct ab_tree_stats_s st;

	if (dfd < 0)
		return ab_error (err, 0, AB_E_NOT_FOUND, "no snapshot %s", name);
	if (ab_snapshot_meta_read (dfd, AB_SNAPSHOT_META_NAME, m, err) < 0)
		return ab_error_wrap (err, "snapshot %s refused", name);
	if (backend && strcmp (backend, "auto") != 0 && strcmp (backend, m->backend) != 0)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "snapshot %s refused: it was taken on the %s backend, not %s",
		                 name, m->backend, backend);
	if (!(mf = tmpfile ()))
		return ab_error (err, errno, AB_E_SYSTEM, "temporary manifest");
	if (copy_trees (src, NULL, mf, &st, err) < 0 || fflush (mf) != 0)
		return ab_error_wrap (err, "snapshot %s refused: its trees cannot be read", name);
	if (ab_snapshot_meta_verify (m, m->backend, fileno (mf), fileno (mf), err) < 0)
		return ab_error_wrap (err,
		                      "snapshot %s refused: its content changed after it was "
		                      "taken (tampered)",
		                      name);
	return 0;
}

/* A fork's snapshot is read by each of its forks and then removed: the
 * last one (FORK_TAKE in the snapshot, written by the fork) takes the
 * verified workspace by a rename instead of a second copy.  1 taken, 0
 * not the taker, -1 err. */
static int
take_tree (const char *dir, const char *src, const char *dst, ab_error_t *err)
{
	cleanup_free char *mark = xasprintf ("%s/" FORK_TAKE, dir);

	if (access (mark, F_OK) < 0)
		return 0;
	if (rmdir (dst) < 0 || rename (src, dst) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "move the fork's workspace to %s", dst);
	return 1;
}

static int
restore_workspace (const char *dir, const char *src, const char *dst, ab_error_t *err)
{
	struct ab_tree_stats_s st;
	int r = take_tree (dir, src, dst, err);

	if (r != 0)
		return r < 0 ? -1 : 0;
	cleanup_close int sfd = open_dir (src, err), dfd = -1;
	if (sfd < 0 || (dfd = open_dir (dst, err)) < 0)
		return -1;
	return ab_tree_copy (sfd, dfd, NULL, &st, err);
}

int
ab_box_snap_restore (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	cleanup_free char *dir = snap_dir (d, b->from_snapshot);
	char *src[2] = { xasprintf ("%s/%s", dir, trees[0]), xasprintf ("%s/%s", dir, trees[1]) };
	struct ab_snapshot_meta_s m;
	struct ab_tree_stats_s st;
	struct stat sb;
	int r = 0;

	if (access (src[1], F_OK) < 0) {
		free (src[1]);
		src[1] = NULL;
	}
	if (!b->workspace_owned)
		r = ab_error (
		        err, 0, AB_E_INVALID,
		        "'from_snapshot' fills the daemon's own workspace: leave 'workspace' out");
	else if (verify_snapshot (dir, b->from_snapshot, b->spec.backend, src, &m, err) < 0)
		r = -1;
	else if (stat (src[0], &sb) < 0)
		r = ab_error (err, errno, AB_E_NOT_FOUND, "snapshot %s has no workspace",
		              b->from_snapshot);
	else {
		r = restore_workspace (dir, src[0], b->spec.workspace, err);
		if (r == 0 && src[1]) {
			char *up[2] = { NULL, src[1] };
			r = copy_trees (up, b->dir, NULL, &st, err);
		}
		if (r == 0 && strcmp (b->spec.backend, m.backend) != 0) {
			free (b->spec.backend);
			b->spec.backend = xstrdup (m.backend);
		}
		if (r < 0)
			ab_error_wrap (err, "restore snapshot %s", b->from_snapshot);
	}
	free (src[0]);
	free (src[1]);
	return r;
}

/* --- the API ----------------------------------------------------------- */

static json_t *
read_info (struct ab_daemon_s *d, const char *name)
{
	cleanup_free char *p = NULL;
	cleanup_free char *dir = snap_dir (d, name);

	p = xasprintf ("%s/info.json", dir);
	return json_load_file (p, JSON_REJECT_DUPLICATES, NULL);
}

/* Why a backend cannot snapshot memory (docs/snapshots.md, measured). */
static const char *
memory_why (const char *backend)
{
	if (strcmp (backend, "native") == 0 || strcmp (backend, "docker") == 0)
		return ": that needs CRIU, and `criu check` fails on this kernel";
	if (strcmp (backend, "gvisor") == 0)
		return ": `runsc checkpoint` refuses to save the agent's door (\"Cannot save "
		       "endpoint with bound host socket\": the agent listens on a host socket, "
		       "--host-uds=create)";
	return " in this agentbox (docs/snapshots.md)";
}

void
ab_api_snapshot_create (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_api_box (r, false);
	json_t *req = NULL, *info = NULL;
	const char *name = NULL;
	char gen[NAME_MAX_LEN + 1];
	int memory = 0;

	if (!b)
		return;
	if (ab_req_body_json (r, &req, &err) < 0) {
		/* err is set */
	} else if (json_unpack_ex (req, NULL, JSON_STRICT, "{s?s, s?b}", "name", &name, "memory",
	                           &memory)
	           < 0) {
		ab_error (&err, 0, AB_E_INVALID,
		          "snapshot request: {\"name\": string, \"memory\": bool}");
	} else if (memory) {
		ab_error (&err, 0, AB_E_CONFLICT,
		          "the %s backend cannot snapshot memory%s; take a filesystem snapshot "
		          "(\"memory\": false)",
		          b->backend, memory_why (b->backend));
	} else {
		if (!name)
			random_name (gen, sizeof gen, "snap-");
		if (name && strncmp (name, FORK_PREFIX, strlen (FORK_PREFIX)) == 0)
			ab_error (&err, 0, AB_E_INVALID,
			          "snapshot names starting with '%s' are fork's", FORK_PREFIX);
		else if (check_name (name ? name : gen, &err) == 0)
			take_snapshot (r->d, b, name ? name : gen, &info, &err);
	}
	if (info)
		ab_resp_json (r, 201, info);
	else
		ab_resp_error (r, &err);
	json_decref (req);
	ab_box_unref (r->d, b);
}

void
ab_api_snapshot_list (struct ab_req_s *r)
{
	cleanup_free char *root = snap_root (r->d);
	cleanup_dir DIR *dir = opendir (root);
	const char *source = r->params[0];
	json_t *arr = json_array ();
	struct dirent *e;

	while (dir && (e = readdir (dir))) {
		json_t *info;
		if (e->d_name[0] == '.' || !(info = read_info (r->d, e->d_name)))
			continue;
		const char *src = json_string_value (json_object_get (info, "source"));
		if (!source || (src && strcmp (src, source) == 0))
			json_array_append (arr, info);
		json_decref (info);
	}
	ab_resp_json (r, 200, json_pack ("{s:o}", "snapshots", arr));
}

void
ab_api_snapshot_get (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *info;

	if (check_name (r->params[0], &err) < 0) {
		ab_resp_error (r, &err);
		return;
	}
	if (!(info = read_info (r->d, r->params[0]))) {
		ab_resp_fail (r, 404, "not_found", "no snapshot %s", r->params[0]);
		return;
	}
	ab_resp_json (r, 200, info);
}

void
ab_api_snapshot_delete (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *dir = NULL;
	struct stat st;

	if (check_name (r->params[0], &err) < 0) {
		ab_resp_error (r, &err);
		return;
	}
	dir = snap_dir (r->d, r->params[0]);
	if (lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode)) {
		ab_resp_fail (r, 404, "not_found", "no snapshot %s", r->params[0]);
		return;
	}
	if (ab_rm_rf (dir) < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "remove %s", dir);
		ab_resp_error (r, &err);
		return;
	}
	ab_metrics_inc ("snapshots_deleted");
	ab_resp_json (r, 200, json_pack ("{s:s}", "deleted", r->params[0]));
}

/* --- fork ------------------------------------------------------------- */

/* The parent's binds of its own workspace ("workspace_mounts") become
 * binds of the fork's. */
static void
fork_workspace_mounts (const struct ab_box_s *b, json_t *j)
{
	json_t *mounts = json_object_get (j, "mounts"), *ws = json_array ();

	for (size_t i = 0; i < json_array_size (mounts);) {
		json_t *m = json_array_get (mounts, i);
		const char *src = json_string_value (json_object_get (m, "source"));
		if (src && strcmp (src, b->spec.workspace) == 0) {
			json_array_append (ws, json_object_get (m, "destination"));
			json_array_remove (mounts, i);
		} else
			i++;
	}
	if (json_array_size (ws))
		json_object_set_new (j, "workspace_mounts", ws);
	else
		json_decref (ws);
}

/* What a fork is created from: the parent's spec without its workspace
 * path (each fork gets its own) and without the parent's credential
 * token (a secret of the parent's alone; forks get no credentials). */
static json_t *
fork_request (struct ab_box_s *b, const char *snap)
{
	json_t *j = ab_spec_to_json (&b->spec, 0);
	json_t *env = json_object_get (j, "env");
	const char *tok = b->cred_config ? b->cred_config->token : NULL;
	const char *k;
	json_t *v;
	void *tmp;

	if (b->workspace_owned) {
		json_object_del (j, "workspace");
		fork_workspace_mounts (b, j);
	}
	if (tok && *tok && json_is_object (env))
		json_object_foreach_safe (env, tmp, k, v)
		{
			const char *s = json_string_value (v);
			if (s && strstr (s, tok))
				json_object_del (env, k);
		}
	json_object_set_new (j, "backend", json_string (b->backend));
	json_object_set_new (j, "from_snapshot", json_string (snap));
	json_object_set_new (j, "auto_resume", json_boolean (b->auto_resume));
	json_object_set (j, "labels", b->labels);
	if (b->ttl_ms)
		json_object_set_new (j, "ttl", json_real ((double)b->ttl_ms / 1000.0));
	return j;
}

static int
mark_take (const char *dir, ab_error_t *err)
{
	cleanup_free char *p = xasprintf ("%s/" FORK_TAKE, dir);
	int fd = open (p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", p);
	close (fd);
	return 0;
}

static int
fork_count (struct ab_req_s *r, int *count, ab_error_t *err)
{
	json_t *req = NULL;
	int rc = 0;

	*count = 1;
	if (ab_req_body_json (r, &req, err) < 0)
		return -1;
	if (json_unpack_ex (req, NULL, JSON_STRICT, "{s?i}", "count", count) < 0 || *count < 1
	    || *count > FORK_MAX)
		rc = ab_error (err, 0, AB_E_INVALID, "fork request: {\"count\": 1-%d}", FORK_MAX);
	json_decref (req);
	return rc;
}

void
ab_api_sandbox_fork (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_api_box (r, false);
	char name[NAME_MAX_LEN + 1];
	json_t *info = NULL, *req = NULL, *out = json_array ();
	uint64_t t0 = ab_mono_us ();
	int count, made = 0;

	if (!b) {
		json_decref (out);
		return;
	}
	random_name (name, sizeof name, FORK_PREFIX);
	if (fork_count (r, &count, &err) == 0 && take_snapshot (r->d, b, name, &info, &err) == 0) {
		cleanup_free char *dir = snap_dir (r->d, name);
		req = fork_request (b, name);
		for (; made < count; made++) {
			struct ab_box_s *nb;
			if (made == count - 1 && mark_take (dir, &err) < 0)
				break;
			if (ab_box_create (r->d, req, &nb, &err) < 0)
				break;
			json_t *j = ab_box_json (r->d, nb);
			json_object_set_new (j, "port_token", json_string (nb->port_token));
			json_array_append_new (out, j);
			ab_box_unref (r->d, nb);
		}
		ab_rm_rf (dir);
	}
	if (made == count && info) {
		ab_metrics_inc ("sandboxes_forked");
		ab_resp_json (r, 201,
		              json_pack ("{s:o, s:b, s:O, s:I}", "sandboxes", out, "memory", 0,
		                         "snapshot", json_object_get (info, "content"), "took_us",
		                         (json_int_t)(ab_mono_us () - t0)));
	} else {
		/* All or nothing: the forks made before the failure go. */
		for (size_t i = 0; i < json_array_size (out); i++) {
			const char *id =
			        json_string_value (json_object_get (json_array_get (out, i), "id"));
			struct ab_box_s *nb =
			        ab_registry_get (r->d, id, &(ab_error_t)AB_ERROR_INIT);
			if (nb) {
				ab_box_destroy (r->d, nb, true, &(ab_error_t)AB_ERROR_INIT);
				ab_box_unref (r->d, nb);
			}
		}
		json_decref (out);
		ab_resp_error (r, &err);
	}
	json_decref (info);
	json_decref (req);
	ab_box_unref (r->d, b);
}
