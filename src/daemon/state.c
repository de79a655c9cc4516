/* Sandbox state on disk: <state-dir>/sandboxes/<id>/state.json, written
 * atomically (temporary file, fsync, rename, fsync of the directory) so a
 * daemon killed at any instant leaves the old or the new file, never a
 * torn one. */
#include "daemon/daemon-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "net/credential-config.h"
#include "spec/spec-json.h"

#define STATE_VERSION 1

/* The spec as JSON without the sandbox's credential token: the variables
 * that carry it (AGENTBOX_CREDENTIAL_TOKEN, OPENAI_API_KEY, ...; any
 * value containing it) are dropped for state.json, where
 * ab_box_cred_load puts them back from credentials.json after a restart,
 * and shown as "<redacted>" in the API's output.  The token lives in one
 * file and in the sandbox, nowhere a GET or a listing reaches. */
static json_t *
spec_json (const struct ab_box_s *b, unsigned flags, bool drop)
{
	json_t *j = ab_spec_to_json (&b->spec, flags);
	json_t *env = json_object_get (j, "env");
	const char *tok = b->cred_config ? b->cred_config->token : NULL;
	const char *k;
	json_t *v;
	void *tmp;

	if (!tok || !*tok || !json_is_object (env))
		return j;
	json_object_foreach_safe (env, tmp, k, v)
	{
		const char *s = json_string_value (v);
		if (!s || !strstr (s, tok))
			continue;
		if (drop)
			json_object_del (env, k);
		else
			json_object_set_new (env, k, json_string ("<redacted>"));
	}
	return j;
}

json_t *
ab_box_state_json (struct ab_daemon_s *d, struct ab_box_s *b)
{
	json_t *j;

	pthread_mutex_lock (&d->lock);
	j = json_pack ("{s:i, s:s, s:s, s:s?, s:I, s:I, s:I, s:O, s:b, s:s, s:{s:i, s:I}, s:o}",
	               "version", STATE_VERSION, "id", b->id, "state", ab_box_state_name (b->state),
	               "dead_reason", b->dead_reason, "created_ms", (json_int_t)b->created_ms,
	               "expires_ms", (json_int_t)b->expires_ms, "ttl_ms", (json_int_t)b->ttl_ms,
	               "labels", b->labels, "workspace_owned", b->workspace_owned, "backend",
	               b->backend, "monitor", "pid", (int)b->monitor_pid, "start_time",
	               (json_int_t)b->monitor_start, "spec",
	               spec_json (b, AB_SPEC_JSON_INTERNAL, true));
	if (b->port_token[0])
		json_object_set_new (j, "port_token", json_string (b->port_token));
	ab_box_pause_state_save (b, j);
	if (b->pool)
		json_object_set_new (
		        j, "pool", json_pack ("{s:s, s:s}", "name", b->pool, "hash", b->pool_hash));
	pthread_mutex_unlock (&d->lock);
	return j;
}

/* A state file written before port tokens existed (or with a damaged
 * one) gets a fresh token; it is saved with the next state write. */
static void
port_token_from_json (struct ab_box_s *b, const json_t *v)
{
	const char *t = json_string_value (v);
	bool ok = t && strlen (t) == AB_PORT_TOKEN_LEN;

	for (size_t i = 0; ok && i < AB_PORT_TOKEN_LEN; i++)
		ok = (t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f');
	if (ok)
		memcpy (b->port_token, t, AB_PORT_TOKEN_LEN + 1);
	else
		ab_port_token_new (b->port_token);
}

int
ab_box_from_state_json (struct ab_box_s *b, const json_t *j, ab_error_t *err)
{
	const char *state, *backend;
	json_t *reason = NULL;
	json_int_t created, expires, ttl, start;
	json_t *labels, *spec;
	int version, pid, owned;
	json_error_t je;

	if (json_unpack_ex ((json_t *)j, &je, 0,
	                    "{s:i, s:s, s?o, s:I, s:I, s:I, s:o, s:b, s:s, s:{s:i, s:I}, s:o}",
	                    "version", &version, "state", &state, "dead_reason", &reason,
	                    "created_ms", &created, "expires_ms", &expires, "ttl_ms", &ttl,
	                    "labels", &labels, "workspace_owned", &owned, "backend", &backend,
	                    "monitor", "pid", &pid, "start_time", &start, "spec", &spec)
	    < 0)
		return ab_error (err, 0, AB_E_INVALID, "state file: %s", je.text);
	if (version != STATE_VERSION)
		return ab_error (err, 0, AB_E_INVALID, "state file version %d", version);
	if (ab_spec_from_json (spec, AB_SPEC_JSON_INTERNAL, &b->spec, err) < 0)
		return ab_error_wrap (err, "state file");
	b->state = strcmp (state, "running") == 0 ? AB_BOX_RUNNING
	           : strcmp (state, "dead") == 0  ? AB_BOX_DEAD
	                                          : AB_BOX_CREATING;
	b->dead_reason = json_is_string (reason) ? xstrdup (json_string_value (reason)) : NULL;
	b->created_ms = created;
	b->expires_ms = expires;
	b->ttl_ms = ttl;
	json_decref (b->labels);
	b->labels = json_deep_copy (labels);
	b->workspace_owned = owned;
	snprintf (b->backend, sizeof b->backend, "%s", backend);
	b->monitor_pid = pid;
	b->monitor_start = (uint64_t)start;
	port_token_from_json (b, json_object_get (j, "port_token"));
	ab_box_pause_state_load (b, j);
	{
		const char *pool = NULL, *hash = "";
		if (json_unpack (json_object_get (j, "pool"), "{s:s, s?s}", "name", &pool, "hash",
		                 &hash)
		    == 0) {
			b->pool = xstrdup (pool);
			snprintf (b->pool_hash, sizeof b->pool_hash, "%s", hash);
		}
	}
	return 0;
}

int
ab_box_save (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	return ab_box_save_ex (d, b, true, err);
}

int
ab_box_save_ex (struct ab_daemon_s *d, struct ab_box_s *b, bool durable, ab_error_t *err)
{
	json_t *j = ab_box_state_json (d, b);
	cleanup_free char *text = json_dumps (j, JSON_COMPACT);

	json_decref (j);
	return ab_write_file_atomic_ex (b->state_path, text, strlen (text), durable, err);
}

static json_t *
iso_time (int64_t ms)
{
	char buf[AB_UTC_MS_LEN];

	if (!ms)
		return json_null ();
	ab_utc_ms_format (ms, buf);
	return json_string (buf);
}

json_t *
ab_box_json (struct ab_daemon_s *d, struct ab_box_s *b)
{
	json_t *j;

	pthread_mutex_lock (&d->lock);
	j = json_pack ("{s:s, s:s, s:o, s:o, s:O, s:s, s:i, s:o}", "id", b->id, "state",
	               b->paused ? "paused" : ab_box_state_name (b->state), "created_at",
	               iso_time (b->created_ms), "expires_at", iso_time (b->expires_ms), "labels",
	               b->labels, "backend", b->backend, "monitor_pid", (int)b->monitor_pid, "spec",
	               spec_json (b, 0, false));
	if (b->ttl_ms)
		json_object_set_new (j, "ttl_ms", json_integer (b->ttl_ms));
	if (b->dead_reason)
		json_object_set_new (j, "dead_reason", json_string (b->dead_reason));
	ab_box_pause_state_save (b, j);
	pthread_mutex_unlock (&d->lock);
	return j;
}
