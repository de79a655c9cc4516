/* Manifests and registration: what makes a set of verified blobs an
 * image in the store.  Registration is the last step of a pull or an
 * import and the only one that names anything, so an interrupted one
 * leaves blobs and layers that `image prune` removes and no image. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fsutil.h"
#include "base/xalloc.h"
#include "image/ref.h"
#include "image/store.h"
#include "image/unpack.h"

static const char *const layer_types[] = {
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.diff.tar",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
	"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
};

static bool
known_layer_type (const char *t)
{
	if (!t)
		return true; /* docker save's synthesised manifests have none */
	for (size_t i = 0; i < sizeof layer_types / sizeof *layer_types; i++)
		if (strcmp (t, layer_types[i]) == 0)
			return true;
	return false;
}

const char *
ab_manifest_media_type (json_t *m, bool *is_index)
{
	const char *t = json_string_value (json_object_get (m, "mediaType"));

	*is_index = false;
	if (t
	    && (strcmp (t, "application/vnd.oci.image.index.v1+json") == 0
	        || strcmp (t, "application/vnd.docker.distribution.manifest.list.v2+json") == 0))
		*is_index = true;
	else if (!t && json_is_array (json_object_get (m, "manifests")))
		*is_index = true;
	return t ? t
	         : (*is_index ? "application/vnd.oci.image.index.v1+json"
	                      : "application/vnd.oci.image.manifest.v1+json");
}

int
ab_manifest_parse (const char *body, size_t len, char **config_digest, char ***layers,
                   ab_error_t *err)
{
	json_error_t je;
	json_t *m = json_loadb (body, len, 0, &je), *cfg, *ls, *l;
	char **v = NULL;
	size_t i;
	bool idx;

	if (!m)
		return ab_error (err, 0, AB_E_INVALID, "manifest: %s", je.text);
	ab_manifest_media_type (m, &idx);
	cfg = json_object_get (m, "config");
	ls = json_object_get (m, "layers");
	if (idx || json_integer_value (json_object_get (m, "schemaVersion")) != 2
	    || !json_is_object (cfg) || !json_is_array (ls)) {
		json_decref (m);
		return ab_error (err, 0, AB_E_INVALID,
		                 "not an OCI or Docker schema 2 image manifest");
	}
	if (!ab_image_digest_valid (json_string_value (json_object_get (cfg, "digest")))) {
		json_decref (m);
		return ab_error (err, 0, AB_E_INVALID, "manifest: bad config digest");
	}
	v = xcalloc (json_array_size (ls) + 1, sizeof *v);
	json_array_foreach (ls, i, l)
	{
		const char *d = json_string_value (json_object_get (l, "digest"));
		const char *t = json_string_value (json_object_get (l, "mediaType"));
		if (!ab_image_digest_valid (d) || !known_layer_type (t)) {
			ab_cleanup_strvp (&v);
			json_decref (m);
			return ab_error (err, 0, AB_E_INVALID, "manifest: layer %zu: %s", i,
			                 !ab_image_digest_valid (d) ? "bad digest"
			                                            : "unsupported media type");
		}
		v[i] = xstrdup (d);
	}
	*config_digest = xstrdup (json_string_value (json_object_get (cfg, "digest")));
	*layers = v;
	json_decref (m);
	return 0;
}

char *
ab_index_pick (json_t *index, const char *platform, ab_error_t *err)
{
	cleanup_free char *want = xstrdup (platform ? platform : "linux/amd64");
	char *arch = strchr (want, '/'), *variant = NULL;
	json_t *ms = json_object_get (index, "manifests"), *m;
	size_t i;

	if (!arch) {
		ab_error (err, 0, AB_E_INVALID, "platform '%s': expected OS/ARCH[/VARIANT]", want);
		return NULL;
	}
	*arch++ = '\0';
	if ((variant = strchr (arch, '/')))
		*variant++ = '\0';
	json_array_foreach (ms, i, m)
	{
		json_t *p = json_object_get (m, "platform");
		const char *os = json_string_value (json_object_get (p, "os"));
		const char *ar = json_string_value (json_object_get (p, "architecture"));
		const char *va = json_string_value (json_object_get (p, "variant"));
		const char *d = json_string_value (json_object_get (m, "digest"));
		if (os && ar && strcmp (os, want) == 0 && strcmp (ar, arch) == 0
		    && (!variant || (va && strcmp (va, variant) == 0)) && ab_image_digest_valid (d))
			return xstrdup (d);
	}
	ab_error (err, 0, AB_E_NOT_FOUND, "no %s image in the manifest list", platform);
	return NULL;
}

char *
ab_store_layer_path (const struct ab_store_s *st, const char *diff_id)
{
	return ab_store_path (st, "layers/%s", diff_id + 7);
}

static bool
layer_present (const struct ab_store_s *st, const char *diff_id)
{
	cleanup_free char *p = ab_store_layer_path (st, diff_id);
	struct stat s;

	return lstat (p, &s) == 0 && S_ISDIR (s.st_mode);
}

/* diffs/BLOBHEX: the blob's diff_id, once checked; NULL when unknown. */
static char *
known_diff (const struct ab_store_s *st, const char *blob)
{
	cleanup_free char *p = ab_store_path (st, "diffs/%s", blob + 7);
	cleanup_close int fd = open (p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char buf[7 + 64 + 2] = { 0 };
	ssize_t n;

	if (fd < 0 || (n = read (fd, buf, sizeof buf - 1)) <= 0)
		return NULL;
	buf[strcspn (buf, "\n")] = '\0';
	return ab_image_digest_valid (buf) ? xstrdup (buf) : NULL;
}

static int
remember_diff (const struct ab_store_s *st, const char *blob, const char *diff_id, ab_error_t *err)
{
	cleanup_free char *p = ab_store_path (st, "diffs/%s", blob + 7);
	cleanup_free char *text = xasprintf ("%s\n", diff_id);

	return ab_write_file_atomic (p, text, strlen (text), err);
}

static int
diff_mismatch (const char *blob, const char *got, const char *want, ab_error_t *err)
{
	return ab_error (err, 0, AB_E_INVALID,
	                 "layer %s: its uncompressed content is %s but the image config's "
	                 "diff_id is %s; refused",
	                 blob, got, want);
}

static int
open_blob (const struct ab_store_s *st, const char *blob, ab_error_t *err)
{
	cleanup_free char *p = ab_store_blob_path (st, blob);
	int fd = open (p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return ab_error (err, errno, AB_E_NOT_FOUND, "blob %s", blob);
	return fd;
}

/* Unpack blob into tmp/layer-…, hashing its uncompressed stream; synced
 * (syncfs) before it is renamed into layers/, so a layer directory that
 * exists is complete on disk. */
static int
unpack_into_temp (const struct ab_store_s *st, const char *blob, char **tmp_out, char **diff_out,
                  ab_error_t *err)
{
	cleanup_free char *tmp = ab_store_path (st, "tmp/layer-%.16s.XXXXXX", blob + 7);
	cleanup_close int fd = open_blob (st, blob, err), dfd = -1;
	struct ab_unpack_opts_s o = { .whiteouts = true, .diff_id = diff_out };

	if (fd < 0)
		return -1;
	if (!mkdtemp (tmp))
		return ab_error (err, errno, AB_E_SYSTEM, "mkdtemp %s", tmp);
	dfd = open (tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0 || ab_unpack_fd (fd, dfd, &o, err) < 0) {
		if (dfd < 0)
			ab_error (err, errno, AB_E_SYSTEM, "open %s", tmp);
		ab_rm_rf (tmp);
		return ab_error_wrap (err, "layer %s", blob);
	}
	/* The layer's root is the image's "/": 0755 whatever mkdtemp made. */
	if (fchmod (dfd, 0755) < 0 || syncfs (dfd) < 0) {
		int e = errno;
		ab_rm_rf (tmp);
		free (*diff_out);
		*diff_out = NULL;
		return ab_error (err, e, AB_E_SYSTEM, "chmod/sync %s", tmp);
	}
	*tmp_out = steal_pointer (&tmp);
	return 0;
}

/* The layer directory is there: check once that this blob is that
 * layer (decompress and hash; nothing written), then remember it. */
static int
check_present (const struct ab_store_s *st, const char *blob, const char *diff_id,
               const char *known, ab_error_t *err)
{
	cleanup_free char *got = NULL;
	cleanup_close int fd = -1;

	if (known)
		return 0;
	fd = open_blob (st, blob, err);
	if (fd < 0 || ab_unpack_digest_fd (fd, &got, err) < 0)
		return ab_error_wrap (err, "layer %s", blob);
	if (strcmp (got, diff_id) != 0)
		return diff_mismatch (blob, got, diff_id, err);
	return remember_diff (st, blob, diff_id, err);
}

int
ab_store_unpack_layer (const struct ab_store_s *st, const char *blob, const char *diff_id,
                       char **diff_out, ab_error_t *err)
{
	cleanup_free char *known = NULL, *got = NULL, *tmp = NULL, *dst = NULL;
	cleanup_free char *lockname = NULL;
	cleanup_close int lock = -1;
	const char *key;

	if (!ab_image_digest_valid (blob) || (diff_id && !ab_image_digest_valid (diff_id)))
		return ab_error (err, 0, AB_E_INVALID, "bad layer digest");
	known = known_diff (st, blob);
	if (known && diff_id && strcmp (known, diff_id) != 0)
		return diff_mismatch (blob, known, diff_id, err);
	key = diff_id ? diff_id : known;
	if (key) {
		if (layer_present (st, key))
			goto present;
		lockname = xasprintf ("layer-%s", key + 7);
		lock = ab_store_lock (st, lockname, err);
		if (lock < 0)
			return -1;
		if (layer_present (st, key))
			goto present; /* another puller unpacked it while we waited */
	}
	if (unpack_into_temp (st, blob, &tmp, &got, err) < 0)
		return -1;
	if (diff_id && strcmp (got, diff_id) != 0) {
		ab_rm_rf (tmp);
		return diff_mismatch (blob, got, diff_id, err);
	}
	if (!key) {
		lockname = xasprintf ("layer-%s", got + 7);
		lock = ab_store_lock (st, lockname, err);
		if (lock < 0) {
			ab_rm_rf (tmp);
			return -1;
		}
	}
	dst = ab_store_layer_path (st, got);
	if (layer_present (st, got))
		ab_rm_rf (tmp); /* the same layer, from another blob, meanwhile */
	else if (rename (tmp, dst) < 0) {
		/* Atomic: a layer directory exists complete or not at all. */
		int e = errno;
		ab_rm_rf (tmp);
		return ab_error (err, e, AB_E_SYSTEM, "rename %s", tmp);
	} else if (ab_store_sync_dir (st, "layers", err) < 0)
		return -1;
	if (remember_diff (st, blob, got, err) < 0)
		return -1;
	if (diff_out)
		*diff_out = steal_pointer (&got);
	return 0;
present:
	if (check_present (st, blob, key, known, err) < 0)
		return -1;
	if (diff_out)
		*diff_out = xstrdup (key);
	return 0;
}

json_t *
ab_store_layer_keys (const struct ab_store_s *st, json_t *rec, ab_error_t *err)
{
	cleanup_free char *cbody = NULL;
	json_t *keys = json_object_get (rec, "diff_ids"), *cfg, *out;
	const char *cdig = json_string_value (json_object_get (rec, "config_digest"));
	size_t clen;

	if (json_is_array (keys))
		return json_incref (keys);
	/* A record from before diff_ids were kept: its config's. */
	if (!cdig || ab_store_read_blob (st, cdig, AB_IMAGE_MAX_MANIFEST, &cbody, &clen, err) < 0)
		return NULL;
	cfg = json_loadb (cbody, clen, 0, NULL);
	out = json_object_get (json_object_get (cfg, "rootfs"), "diff_ids");
	if (!json_is_array (out)) {
		json_decref (cfg);
		ab_error (err, 0, AB_E_INVALID, "image config %s has no rootfs.diff_ids", cdig);
		return NULL;
	}
	json_incref (out);
	json_decref (cfg);
	return out;
}

/* The config's rootfs.diff_ids: one valid digest per layer. */
static json_t *
config_diff_ids (json_t *cfg, size_t n_layers, ab_error_t *err)
{
	json_t *d = json_object_get (json_object_get (cfg, "rootfs"), "diff_ids"), *v;
	size_t i;

	if (!json_is_array (d) || json_array_size (d) != n_layers) {
		ab_error (err, 0, AB_E_INVALID,
		          "image config: rootfs.diff_ids has %zu entries for %zu layers",
		          json_is_array (d) ? json_array_size (d) : (size_t)0, n_layers);
		return NULL;
	}
	json_array_foreach (d, i, v) if (!ab_image_digest_valid (json_string_value (v)))
	{
		ab_error (err, 0, AB_E_INVALID, "image config: diff_id %zu is not a digest", i);
		return NULL;
	}
	return d;
}

/* The parts of the config a sandbox uses (podman's defaults). */
static json_t *
config_subset (json_t *cfg)
{
	static const char *const keys[] = { "Env", "WorkingDir",   "User",   "Entrypoint",
		                            "Cmd", "ExposedPorts", "Labels", "StopSignal" };
	json_t *c = json_object_get (cfg, "config"), *out = json_object ();

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_t *v = json_object_get (c, keys[i]);
		if (v && !json_is_null (v))
			json_object_set (out, keys[i], v);
	}
	return out;
}

static json_t *
build_record (const struct ab_store_s *st, const char *manifest_digest, ab_error_t *err)
{
	cleanup_free char *mbody = NULL, *cbody = NULL, *cdig = NULL;
	cleanup_strv char **layers = NULL;
	size_t mlen, clen;
	json_t *cfg, *rec, *ls, *diffs;
	json_error_t je;
	uint64_t size = 0;

	if (ab_store_read_blob (st, manifest_digest, AB_IMAGE_MAX_MANIFEST, &mbody, &mlen, err) < 0
	    || ab_manifest_parse (mbody, mlen, &cdig, &layers, err) < 0
	    || ab_store_read_blob (st, cdig, AB_IMAGE_MAX_MANIFEST, &cbody, &clen, err) < 0)
		return NULL;
	cfg = json_loadb (cbody, clen, 0, &je);
	if (!json_is_object (cfg)) {
		json_decref (cfg);
		ab_error (err, 0, AB_E_INVALID, "image config: %s",
		          cfg ? "not an object" : je.text);
		return NULL;
	}
	size_t n = 0;
	while (layers[n])
		n++;
	if (!(diffs = config_diff_ids (cfg, n, err))) {
		json_decref (cfg);
		return NULL;
	}
	json_incref (diffs);
	ls = json_array ();
	for (size_t i = 0; layers[i]; i++) {
		cleanup_free char *bp = ab_store_blob_path (st, layers[i]);
		struct stat s;
		if (stat (bp, &s) == 0)
			size += (uint64_t)s.st_size;
		if (ab_store_unpack_layer (st, layers[i],
		                           json_string_value (json_array_get (diffs, i)), NULL, err)
		    < 0) {
			json_decref (ls);
			json_decref (diffs);
			json_decref (cfg);
			return NULL;
		}
		json_array_append_new (ls, json_string (layers[i]));
	}
	rec = json_pack ("{s:s, s:s, s:o, s:o, s:o, s:I, s:I, s:s?, s:s?}", "digest",
	                 manifest_digest, "config_digest", cdig, "layers", ls, "diff_ids", diffs,
	                 "config", config_subset (cfg), "size", (json_int_t)size, "stored",
	                 (json_int_t)time (NULL), "os",
	                 json_string_value (json_object_get (cfg, "os")), "architecture",
	                 json_string_value (json_object_get (cfg, "architecture")));
	json_decref (cfg);
	return rec;
}

int
ab_store_register (const struct ab_store_s *st, const char *manifest_digest,
                   const char *const *names, ab_error_t *err)
{
	cleanup_free char *rp = ab_store_path (st, "images/%s.json", manifest_digest + 7);
	cleanup_free char *text = NULL;
	cleanup_close int lock = -1;
	json_t *rec = build_record (st, manifest_digest, err), *idx;
	int r;

	if (!rec)
		return -1;
	text = json_dumps (rec, JSON_INDENT (1) | JSON_SORT_KEYS);
	json_decref (rec);
	lock = ab_store_lock (st, "store", err);
	if (lock < 0 || ab_write_file_atomic (rp, text, strlen (text), err) < 0)
		return -1;
	idx = ab_store_names (st, err);
	if (!idx)
		return -1;
	for (size_t i = 0; names && names[i]; i++)
		json_object_set_new (idx, names[i], json_string (manifest_digest));
	r = ab_store_set_names (st, idx, err);
	json_decref (idx);
	return r;
}
