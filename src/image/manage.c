/* The store's commands: pull (the registry client's entry), list,
 * inspect, remove, prune, and the leases that keep an image in use. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fsutil.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "image/image.h"
#include "image/ref.h"
#include "image/store.h"

int ab_image_pull_into (const struct ab_store_s *st, const char *refstr,
                        const struct ab_image_pull_opts_s *o, char **digest_out, ab_error_t *err);

int
ab_pull_policy_parse (const char *s, ab_pull_policy *out, ab_error_t *err)
{
	if (strcmp (s, "missing") == 0)
		*out = AB_PULL_MISSING;
	else if (strcmp (s, "always") == 0)
		*out = AB_PULL_ALWAYS;
	else if (strcmp (s, "never") == 0)
		*out = AB_PULL_NEVER;
	else
		return ab_error (err, 0, AB_E_INVALID,
		                 "--pull %s: expected always, missing or never", s);
	return 0;
}

int
ab_image_pull (const char *state_dir, const char *ref, const struct ab_image_pull_opts_s *o,
               char **digest_out, ab_error_t *err)
{
	struct ab_store_s st;
	struct ab_image_pull_opts_s none = { 0 };
	int r;

	if (ab_store_open (state_dir, &st, err) < 0)
		return -1;
	r = ab_image_pull_into (&st, ref, o ? o : &none, digest_out, err);
	ab_store_close (&st);
	return r;
}

/* --- leases --- */

static bool
valid_holder (const char *h)
{
	return h && *h && strlen (h) < 128
	       && strspn (h, "abcdefghijklmnopqrstuvwxyz"
	                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
	                  == strlen (h)
	       && h[0] != '.';
}

/* Under the store lock, as `image rm` checks leases: an image removed
 * between a prepare and its lease fails the lease, never the sandbox's
 * layers later. */
int
ab_image_lease_take (const char *state_dir, const char *holder, const char *digest,
                     const char *alive_dir, ab_error_t *err)
{
	struct ab_store_s st;
	cleanup_free char *p = NULL, *rec = NULL, *text = NULL;
	cleanup_close int lock = -1;
	pid_t pid = getpid ();
	json_t *j;
	int r = -1;

	if (!valid_holder (holder) || !ab_image_digest_valid (digest))
		return ab_error (err, 0, AB_E_INVALID, "bad lease '%s'", holder ? holder : "");
	if (ab_store_open (state_dir, &st, err) < 0)
		return -1;
	p = ab_store_path (&st, "leases/%s", holder);
	rec = ab_store_path (&st, "images/%s.json", digest + 7);
	j = json_pack ("{s:s, s:i, s:I, s:s?}", "digest", digest, "pid", (int)pid, "start",
	               (json_int_t)ab_proc_start_time (pid), "alive_dir", alive_dir);
	text = json_dumps (j, JSON_SORT_KEYS);
	json_decref (j);
	lock = ab_store_lock (&st, "store", err);
	if (lock >= 0 && access (rec, F_OK) < 0)
		ab_error (err, 0, AB_E_CONFLICT, "image %s was removed", digest);
	else if (lock >= 0)
		r = ab_write_file_atomic (p, text, strlen (text), err);
	ab_store_close (&st);
	return r;
}

void
ab_image_lease_release (const char *state_dir, const char *holder)
{
	struct ab_store_s st;

	if (!valid_holder (holder)
	    || ab_store_open (state_dir, &st, &(ab_error_t)AB_ERROR_INIT) < 0)
		return;
	cleanup_free char *p = ab_store_path (&st, "leases/%s", holder);
	unlink (p);
	ab_store_close (&st);
}

static bool
lease_live (json_t *l)
{
	const char *dir = json_string_value (json_object_get (l, "alive_dir"));
	json_int_t pid = json_integer_value (json_object_get (l, "pid"));
	json_int_t start = json_integer_value (json_object_get (l, "start"));
	struct stat s;

	if (dir)
		return stat (dir, &s) == 0;
	return pid > 0 && kill ((pid_t)pid, 0) == 0
	       && (json_int_t)ab_proc_start_time ((pid_t)pid) == start;
}

/* The digests live leases hold (an object used as a set); stale leases
 * removed when prune. */
static json_t *
live_leases (const struct ab_store_s *st, bool prune)
{
	cleanup_free char *dir = ab_store_path (st, "leases");
	cleanup_dir DIR *d = opendir (dir);
	json_t *set = json_object ();
	struct dirent *de;

	while (d && (de = readdir (d))) {
		if (de->d_name[0] == '.')
			continue;
		cleanup_free char *p = xasprintf ("%s/%s", dir, de->d_name);
		json_t *l = json_load_file (p, 0, NULL);
		const char *dg = json_string_value (json_object_get (l, "digest"));
		if (l && dg && lease_live (l))
			json_object_set_new (set, dg, json_true ());
		else if (prune)
			unlink (p);
		json_decref (l);
	}
	return set;
}

/* --- list, inspect --- */

static json_t *
names_of (json_t *names, const char *digest)
{
	json_t *out = json_array (), *v;
	const char *k;

	json_object_foreach (names, k, v) if (json_is_string (v)
	                                      && strcmp (json_string_value (v), digest) == 0)
	        json_array_append_new (out, json_string (k));
	return out;
}

static json_t *
each_record (const struct ab_store_s *st)
{
	cleanup_free char *dir = ab_store_path (st, "images");
	cleanup_dir DIR *d = opendir (dir);
	json_t *out = json_array ();
	struct dirent *de;

	while (d && (de = readdir (d))) {
		size_t n = strlen (de->d_name);
		if (n != 64 + 5 || strcmp (de->d_name + 64, ".json") != 0)
			continue;
		cleanup_free char *p = xasprintf ("%s/%s", dir, de->d_name);
		json_t *r = json_load_file (p, 0, NULL);
		if (json_is_object (r))
			json_array_append_new (out, r);
		else
			json_decref (r);
	}
	return out;
}

json_t *
ab_image_list (const char *state_dir, ab_error_t *err)
{
	struct ab_store_s st;
	json_t *names, *recs, *leases, *r, *out;
	size_t i;

	if (ab_store_open (state_dir, &st, err) < 0)
		return NULL;
	names = ab_store_names (&st, err);
	if (!names) {
		ab_store_close (&st);
		return NULL;
	}
	recs = each_record (&st);
	leases = live_leases (&st, false);
	out = json_array ();
	json_array_foreach (recs, i, r)
	{
		const char *dg = json_string_value (json_object_get (r, "digest"));
		json_array_append_new (
		        out,
		        json_pack ("{s:o, s:s, s:O, s:I, s:O, s:b}", "names", names_of (names, dg),
		                   "digest", dg, "size", json_object_get (r, "size"), "layers",
		                   (json_int_t)json_array_size (json_object_get (r, "layers")),
		                   "stored", json_object_get (r, "stored"), "in_use",
		                   json_object_get (leases, dg) != NULL));
	}
	json_decref (recs);
	json_decref (leases);
	json_decref (names);
	ab_store_close (&st);
	return out;
}

json_t *
ab_image_inspect (const char *state_dir, const char *name, ab_error_t *err)
{
	struct ab_store_s st;
	cleanup_free char *dg = NULL;
	json_t *rec = NULL, *names, *dirs, *keys, *l;
	size_t i;

	if (ab_store_open (state_dir, &st, err) < 0)
		return NULL;
	dg = ab_store_resolve (&st, name, err);
	if (dg && (rec = ab_store_image_record (&st, dg, err))) {
		names = ab_store_names (&st, err);
		json_object_set_new (rec, "names", names ? names_of (names, dg) : json_array ());
		json_decref (names);
		dirs = json_array ();
		keys = ab_store_layer_keys (&st, rec, &(ab_error_t)AB_ERROR_INIT);
		json_array_foreach (keys, i, l) if (ab_image_digest_valid (json_string_value (l)))
		{
			cleanup_free char *p = ab_store_layer_path (&st, json_string_value (l));
			json_array_append_new (dirs, json_string (p));
		}
		if (keys && !json_object_get (rec, "diff_ids"))
			json_object_set (rec, "diff_ids", keys);
		json_decref (keys);
		json_object_set_new (rec, "layer_dirs", dirs);
	}
	ab_store_close (&st);
	return rec;
}

/* --- rm, prune --- */

int
ab_image_remove (const char *state_dir, const char *name, ab_error_t *err)
{
	struct ab_store_s st;
	cleanup_free char *dg = NULL, *canon = NULL;
	cleanup_close int lock = -1;
	struct ab_image_ref_s ref;
	json_t *names = NULL, *leases = NULL, *left;
	int r = -1;

	if (ab_store_open (state_dir, &st, err) < 0)
		return -1;
	lock = ab_store_lock (&st, "store", err);
	if (lock < 0 || !(dg = ab_store_resolve (&st, name, err))
	    || !(names = ab_store_names (&st, err)))
		goto out;
	leases = live_leases (&st, false);
	if (json_object_get (leases, dg)) {
		r = ab_error (err, 0, AB_E_CONFLICT, "image %s is in use by a sandbox", name);
		goto out;
	}
	if (ab_image_ref_parse (name, &ref, &(ab_error_t)AB_ERROR_INIT) == 0) {
		canon = ab_image_ref_name (&ref);
		ab_image_ref_free (&ref);
	}
	/* A name removes that name; a digest (or no name left) the image. */
	if (canon && json_object_get (names, canon) && !ab_image_digest_valid (name))
		json_object_del (names, canon);
	else {
		const char *k;
		json_t *v;
		void *tmp;
		json_object_foreach_safe (names, tmp, k, v) if (strcmp (json_string_value (v), dg)
		                                                == 0) json_object_del (names, k);
	}
	if (ab_store_set_names (&st, names, err) < 0)
		goto out;
	left = names_of (names, dg);
	if (json_array_size (left) == 0) {
		cleanup_free char *p = ab_store_path (&st, "images/%s.json", dg + 7);
		unlink (p);
	}
	json_decref (left);
	r = 0;
out:
	json_decref (names);
	json_decref (leases);
	ab_store_close (&st);
	return r;
}

static uint64_t
du (const char *path)
{
	struct stat s;
	if (lstat (path, &s) < 0)
		return 0;
	if (!S_ISDIR (s.st_mode))
		return (uint64_t)s.st_blocks * 512;
	uint64_t sum = 0;
	cleanup_dir DIR *d = opendir (path);
	struct dirent *de;
	while (d && (de = readdir (d)))
		if (strcmp (de->d_name, ".") && strcmp (de->d_name, "..")) {
			cleanup_free char *p = xasprintf ("%s/%s", path, de->d_name);
			sum += du (p);
		}
	return sum;
}

/* Remove every entry of dir not in keep (a set of digests) */
static void
sweep (const struct ab_store_s *st, const char *rel, json_t *keep, uint64_t *freed)
{
	cleanup_free char *dir = ab_store_path (st, "%s", rel);
	cleanup_dir DIR *d = opendir (dir);
	struct dirent *de;

	while (d && (de = readdir (d))) {
		if (de->d_name[0] == '.')
			continue;
		cleanup_free char *dg = xasprintf ("sha256:%s", de->d_name);
		if (keep && json_object_get (keep, dg))
			continue;
		cleanup_free char *p = xasprintf ("%s/%s", dir, de->d_name);
		*freed += du (p);
		ab_rm_rf (p);
	}
}

int
ab_image_prune (const char *state_dir, uint64_t *freed_bytes, ab_error_t *err)
{
	struct ab_store_s st;
	cleanup_close int lock = -1;
	json_t *names, *leases, *recs, *keep, *keep_layers, *r, *l;
	uint64_t freed = 0;
	size_t i, j;

	if (ab_store_open (state_dir, &st, err) < 0)
		return -1;
	lock = ab_store_lock (&st, "store", err);
	if (lock < 0 || !(names = ab_store_names (&st, err))) {
		ab_store_close (&st);
		return -1;
	}
	leases = live_leases (&st, true);
	recs = each_record (&st);
	keep = json_object ();        /* blobs (and their diffs/ entries) */
	keep_layers = json_object (); /* layer directories, by diff_id */
	json_array_foreach (recs, i, r)
	{
		const char *dg = json_string_value (json_object_get (r, "digest"));
		json_t *n = names_of (names, dg);
		bool used = json_array_size (n) > 0 || json_object_get (leases, dg);
		json_decref (n);
		if (!used) {
			cleanup_free char *p = ab_store_path (&st, "images/%s.json", dg + 7);
			unlink (p);
			continue;
		}
		json_object_set_new (keep, dg, json_true ());
		json_object_set_new (keep, json_string_value (json_object_get (r, "config_digest")),
		                     json_true ());
		json_array_foreach (json_object_get (r, "layers"), j, l)
		        json_object_set_new (keep, json_string_value (l), json_true ());
		/* Layer directories by diff_id (an old record: its config's;
		 * layers/ keyed by blob digest are then not kept). */
		json_t *keys = ab_store_layer_keys (&st, r, &(ab_error_t)AB_ERROR_INIT);
		json_array_foreach (keys, j, l) if (json_is_string (l))
		        json_object_set_new (keep_layers, json_string_value (l), json_true ());
		json_decref (keys);
	}
	/* Pulls in progress hold blob locks, not this one: prune is meant
	 * for a quiet store (docs/images.md). */
	sweep (&st, "blobs/sha256", keep, &freed);
	sweep (&st, "layers", keep_layers, &freed);
	sweep (&st, "diffs", keep, &freed); /* by blob: a blob kept keeps its diff_id */
	sweep (&st, "tmp", NULL, &freed);
	json_decref (keep);
	json_decref (keep_layers);
	json_decref (recs);
	json_decref (leases);
	json_decref (names);
	ab_store_close (&st);
	if (freed_bytes)
		*freed_bytes = freed;
	return 0;
}
