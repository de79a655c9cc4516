/* A spec's image -> its layered root and the image's defaults (podman's
 * rules), for `agentbox run`/`create` and the daemon alike. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "base/openat2-walk.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "image/image.h"
#include "image/ref.h"
#include "image/store.h"

int ab_image_pull_into (const struct ab_store_s *st, const char *refstr,
                        const struct ab_image_pull_opts_s *o, char **digest_out, ab_error_t *err);

#define MAX_PASSWD (1u << 20)

/* agentbox's own defaults (cli/run-options.c default_env): the image's
 * values replace these; anything else in the spec is the user's. */
static const char *const default_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/tmp",
	"LANG=C.UTF-8",
};

static bool
is_default (const char *kv)
{
	for (size_t i = 0; i < sizeof default_env / sizeof *default_env; i++)
		if (strcmp (kv, default_env[i]) == 0)
			return true;
	return false;
}

static void
apply_env (struct ab_spec_s *spec, json_t *env)
{
	json_t *v;
	size_t i;

	json_array_foreach (env, i, v)
	{
		const char *kv = json_string_value (v);
		size_t klen;
		bool user_set = false;
		if (!kv || !strchr (kv, '=') || kv[0] == '=')
			continue;
		klen = (size_t)(strchr (kv, '=') - kv);
		for (char **e = spec->env; e && *e; e++)
			if (strncmp (*e, kv, klen) == 0 && (*e)[klen] == '=' && !is_default (*e))
				user_set = true;
		if (!user_set)
			ab_spec_setenv (spec, kv);
	}
}

/* /etc/passwd or /etc/group of the image: the topmost layer that has it
 * (a whiteout or an opaque /etc above ends the search in a real overlay;
 * here a whiteout device is not a regular file, so the lower copy is
 * not read: see the loop).  Read beneath the layer (RESOLVE_IN_ROOT). */
static char *
read_image_file (char **layers, const char *rel)
{
	size_t n = 0;

	while (layers && layers[n])
		n++;
	for (size_t i = n; i-- > 0;) {
		cleanup_close int dfd = open (layers[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		cleanup_close int fd = -1;
		struct stat s;
		if (dfd < 0)
			continue;
		if (fstatat (dfd, rel, &s, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISREG (s.st_mode) && !S_ISLNK (s.st_mode))
			return NULL; /* a whiteout */
		fd = ab_openat2_or_walk (dfd, rel, O_RDONLY | O_CLOEXEC, 0,
		                         RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
		if (fd < 0 || fstat (fd, &s) < 0 || !S_ISREG (s.st_mode) || s.st_size > MAX_PASSWD)
			return NULL;
		char *buf = xmalloc ((size_t)s.st_size + 1);
		ssize_t got = read (fd, buf, (size_t)s.st_size);
		buf[got > 0 ? got : 0] = '\0';
		return buf;
	}
	return NULL;
}

/* Field 3 (uid or gid) and, for passwd, field 4 of the line for name. */
static int
lookup_name (char *db, const char *name, uint64_t *id, uint64_t *gid)
{
	char *save = NULL;
	for (char *line = strtok_r (db, "\n", &save); line; line = strtok_r (NULL, "\n", &save)) {
		char *f[5] = { 0 };
		size_t k = 0;
		for (char *p = line; k < 5; k++) {
			f[k] = p;
			p = strchr (p, ':');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (!f[0] || strcmp (f[0], name) != 0 || !f[2])
			continue;
		if (ab_parse_uint (f[2], 0, 65535, id, &(ab_error_t)AB_ERROR_INIT) < 0)
			return -1;
		if (gid
		    && (!f[3]
		        || ab_parse_uint (f[3], 0, 65535, gid, &(ab_error_t)AB_ERROR_INIT) < 0))
			*gid = *id;
		return 0;
	}
	return -1;
}

static int
resolve_id (char **layers, const char *s, bool group, uint64_t *id, uint64_t *gid, ab_error_t *err)
{
	cleanup_free char *db = NULL;

	if (ab_parse_uint (s, 0, 65535, id, &(ab_error_t)AB_ERROR_INIT) == 0)
		return 1; /* numeric */
	db = read_image_file (layers, group ? "etc/group" : "etc/passwd");
	if (!db || lookup_name (db, s, id, gid) < 0)
		return ab_error (err, 0, AB_E_INVALID, "image user '%s' is not in its /etc/%s", s,
		                 group ? "group" : "passwd");
	return 0;
}

/* The group of a numeric uid: its passwd line's, else 0 (docker and
 * podman: `USER 1000` without a passwd entry runs as 1000:0). */
static uint64_t
group_of_uid (char **layers, uint64_t uid)
{
	cleanup_free char *db = read_image_file (layers, "etc/passwd");
	char *save = NULL;
	uint64_t u, g;

	for (char *line = db ? strtok_r (db, "\n", &save) : NULL; line;
	     line = strtok_r (NULL, "\n", &save)) {
		char *f[4] = { 0 }, *p = line;
		size_t k;
		for (k = 0; k < 4 && p; k++) {
			f[k] = p;
			p = strchr (p, ':');
			if (p)
				*p++ = '\0';
		}
		if (k == 4 && ab_parse_uint (f[2], 0, 65535, &u, &(ab_error_t)AB_ERROR_INIT) == 0
		    && u == uid
		    && ab_parse_uint (f[3], 0, 65535, &g, &(ab_error_t)AB_ERROR_INIT) == 0)
			return g;
	}
	return 0;
}

static int
apply_user (struct ab_spec_s *spec, const char *user, ab_error_t *err)
{
	cleanup_free char *u = xstrdup (user);
	char *colon = strchr (u, ':');
	uint64_t uid = 0, gid = 0, g2 = 0;
	int r;

	if (colon)
		*colon++ = '\0';
	if (!*u)
		return 0;
	r = resolve_id (spec->root.layers, u, false, &uid, &gid, err);
	if (r < 0)
		return -1;
	if (r == 1)
		gid = group_of_uid (spec->root.layers, uid);
	if (colon && *colon) {
		if (resolve_id (spec->root.layers, colon, true, &g2, NULL, err) < 0)
			return -1;
		gid = g2;
	}
	spec->uid = (uid_t)uid;
	spec->gid = (gid_t)gid;
	return 0;
}

/* podman: Entrypoint + (the user's command, else Cmd). */
static int
apply_command (struct ab_spec_s *spec, json_t *cfg, bool given, ab_error_t *err)
{
	json_t *ep = json_object_get (cfg, "Entrypoint"), *cmd = json_object_get (cfg, "Cmd"), *v;
	char **argv = NULL;
	size_t i;

	json_array_foreach (ep, i, v) if (json_is_string (v))
	        ab_strv_push (&argv, json_string_value (v));
	if (given)
		for (char **a = spec->argv; a && *a; a++)
			ab_strv_push (&argv, *a);
	else
		json_array_foreach (cmd, i, v) if (json_is_string (v))
		        ab_strv_push (&argv, json_string_value (v));
	if (!argv && !given)
		return ab_error (err, 0, AB_E_INVALID,
		                 "image %s has no Entrypoint or Cmd: give a command", spec->image);
	if (argv) {
		ab_cleanup_strvp (&spec->argv);
		spec->argv = argv;
	}
	return 0;
}

static int
fill_layers (const struct ab_store_s *st, struct ab_spec_s *spec, json_t *rec, ab_error_t *err)
{
	json_t *ls = json_object_get (rec, "layers"), *keys = ab_store_layer_keys (st, rec, err),
	       *l;
	size_t i;
	int r = 0;

	if (!keys)
		return -1;
	ab_cleanup_strvp (&spec->root.layers);
	if (json_array_size (keys) != json_array_size (ls))
		r = ab_error (err, 0, AB_E_INTERNAL, "image record: %zu diff_ids for %zu layers",
		              json_array_size (keys), json_array_size (ls));
	json_array_foreach (ls, i, l)
	{
		const char *d = json_string_value (l);
		const char *k = json_string_value (json_array_get (keys, i));
		if (r < 0)
			break;
		if (!ab_image_digest_valid (d) || !ab_image_digest_valid (k)) {
			r = ab_error (err, 0, AB_E_INTERNAL, "image record: bad layer");
			break;
		}
		/* Unpacked at registration; again only if prune raced us, or
		 * for a record of a store from before layers were keyed by
		 * diff_id (docs/images.md). */
		if ((r = ab_store_unpack_layer (st, d, k, NULL, err)) < 0)
			break;
		cleanup_free char *p = ab_store_layer_path (st, k);
		ab_strv_push (&spec->root.layers, p);
	}
	json_decref (keys);
	if (r == 0 && !spec->root.layers)
		r = ab_error (err, 0, AB_E_INVALID, "image %s has no layers", spec->image);
	return r;
}

static char *
find_or_pull (const struct ab_store_s *st, const char *image, ab_pull_policy pull,
              const struct ab_image_pull_opts_s *o, ab_error_t *err)
{
	ab_error_t e2 = AB_ERROR_INIT;
	struct ab_image_pull_opts_s none = { .quiet = true };
	char *dg = NULL;

	if (pull != AB_PULL_ALWAYS && (dg = ab_store_resolve (st, image, &e2)))
		return dg;
	if (pull == AB_PULL_NEVER) {
		*err = e2;
		return NULL;
	}
	if (ab_image_pull_into (st, image, o ? o : &none, &dg, err) < 0)
		return NULL;
	return dg;
}

static int
apply_record (const struct ab_store_s *st, struct ab_spec_s *spec, const char *dg,
              const struct ab_image_given_s *given, ab_error_t *err)
{
	json_t *rec = ab_store_image_record (st, dg, err), *cfg;
	const char *wd, *user;
	int r = -1;

	if (!rec)
		return -1;
	if (fill_layers (st, spec, rec, err) < 0)
		goto done;
	free (spec->image_digest);
	spec->image_digest = xstrdup (dg);
	cfg = json_object_get (rec, "config");
	apply_env (spec, json_object_get (cfg, "Env"));
	wd = json_string_value (json_object_get (cfg, "WorkingDir"));
	if (!given->workdir) {
		free (spec->workdir);
		spec->workdir = xstrdup (wd && wd[0] == '/' ? wd : "/");
	}
	user = json_string_value (json_object_get (cfg, "User"));
	if (!given->user && user && apply_user (spec, user, err) < 0)
		goto done;
	r = apply_command (spec, cfg, given->command, err);
done:
	json_decref (rec);
	return r;
}

int
ab_image_prepare_spec (const char *state_dir, struct ab_spec_s *spec, ab_pull_policy pull,
                       const struct ab_image_given_s *given, const struct ab_image_pull_opts_s *o,
                       ab_error_t *err)
{
	struct ab_image_given_s none = { 0 };
	struct ab_store_s st;
	cleanup_free char *dg = NULL;
	int r;

	if (!spec->image)
		return 0;
	if (spec->rootfs)
		return ab_error (err, 0, AB_E_INVALID, "--image and --rootfs: one root, not both");
	if (ab_store_open (state_dir, &st, err) < 0)
		return -1;
	dg = find_or_pull (&st, spec->image, pull, o, err);
	r = dg ? apply_record (&st, spec, dg, given ? given : &none, err) : -1;
	ab_store_close (&st);
	return r < 0 ? ab_error_wrap (err, "image %s", spec->image) : 0;
}
