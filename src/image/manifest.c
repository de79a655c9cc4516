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
ab_store_layer_path (const struct ab_store_s *st, const char *digest)
{
	return ab_store_path (st, "layers/%s", digest + 7);
}

static int
unpack_into_temp (const struct ab_store_s *st, const char *digest, char **tmp_out, ab_error_t *err)
{
	cleanup_free char *blob = ab_store_blob_path (st, digest);
	cleanup_free char *tmp = ab_store_path (st, "tmp/layer-%.16s.XXXXXX", digest + 7);
	cleanup_close int fd = open (blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), dfd = -1;
	struct ab_unpack_opts_s o = { .whiteouts = true };

	if (fd < 0)
		return ab_error (err, errno, AB_E_NOT_FOUND, "blob %s", digest);
	if (!mkdtemp (tmp))
		return ab_error (err, errno, AB_E_SYSTEM, "mkdtemp %s", tmp);
	dfd = open (tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0 || ab_unpack_fd (fd, dfd, &o, err) < 0) {
		if (dfd < 0)
			ab_error (err, errno, AB_E_SYSTEM, "open %s", tmp);
		ab_rm_rf (tmp);
		return ab_error_wrap (err, "layer %s", digest);
	}
	/* The layer's root is the image's "/": 0755 whatever mkdtemp made. */
	if (fchmod (dfd, 0755) < 0) {
		ab_rm_rf (tmp);
		return ab_error (err, errno, AB_E_SYSTEM, "chmod %s", tmp);
	}
	*tmp_out = steal_pointer (&tmp);
	return 0;
}

int
ab_store_unpack_layer (const struct ab_store_s *st, const char *digest, ab_error_t *err)
{
	cleanup_free char *dst = ab_store_layer_path (st, digest);
	cleanup_free char *lockname = xasprintf ("layer-%s", digest + 7);
	cleanup_free char *tmp = NULL;
	cleanup_close int lock = -1;
	struct stat s;

	if (lstat (dst, &s) == 0 && S_ISDIR (s.st_mode))
		return 0;
	lock = ab_store_lock (st, lockname, err);
	if (lock < 0)
		return -1;
	if (lstat (dst, &s) == 0 && S_ISDIR (s.st_mode))
		return 0; /* another puller unpacked it while we waited */
	if (unpack_into_temp (st, digest, &tmp, err) < 0)
		return -1;
	/* Atomic: a layer directory exists complete or not at all. */
	if (rename (tmp, dst) < 0) {
		int e = errno;
		ab_rm_rf (tmp);
		return ab_error (err, e, AB_E_SYSTEM, "rename %s", tmp);
	}
	return 0;
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
	json_t *cfg, *rec, *ls;
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
	ls = json_array ();
	for (size_t i = 0; layers[i]; i++) {
		cleanup_free char *bp = ab_store_blob_path (st, layers[i]);
		struct stat s;
		if (stat (bp, &s) == 0)
			size += (uint64_t)s.st_size;
		if (ab_store_unpack_layer (st, layers[i], err) < 0) {
			json_decref (ls);
			json_decref (cfg);
			return NULL;
		}
		json_array_append_new (ls, json_string (layers[i]));
	}
	rec = json_pack ("{s:s, s:s, s:o, s:o, s:I, s:I, s:s?, s:s?}", "digest", manifest_digest,
	                 "config_digest", cdig, "layers", ls, "config", config_subset (cfg), "size",
	                 (json_int_t)size, "stored", (json_int_t)time (NULL), "os",
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
