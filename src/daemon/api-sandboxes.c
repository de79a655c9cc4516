/* /v1/health, /v1/metrics and the sandbox collection. */
#include "daemon/daemon-internal.h"

#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

struct ab_box_s *
ab_api_box (struct ab_req_s *r, bool need_running)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_registry_get (r->d, r->params[0], &err);
	ab_box_state s;

	if (!b) {
		ab_resp_error (r, &err);
		return NULL;
	}
	/* A pool's ready entry is nobody's until claimed. */
	pthread_mutex_lock (&r->d->lock);
	bool pooled = b->pool != NULL;
	pthread_mutex_unlock (&r->d->lock);
	if (pooled) {
		ab_resp_fail (r, 404, "not_found", "no sandbox %s", r->params[0]);
		ab_box_unref (r->d, b);
		return NULL;
	}
	s = ab_box_get_state (r->d, b);
	if (need_running && s == AB_BOX_RUNNING && ab_api_unpaused (r, b) < 0) {
		ab_box_unref (r->d, b);
		return NULL;
	}
	if (need_running && s != AB_BOX_RUNNING) {
		pthread_mutex_lock (&r->d->lock);
		ab_resp_fail (r, 409, "conflict", "sandbox %s is %s%s%s", b->id,
		              ab_box_state_name (s), b->dead_reason ? ": " : "",
		              b->dead_reason ? b->dead_reason : "");
		pthread_mutex_unlock (&r->d->lock);
		ab_box_unref (r->d, b);
		return NULL;
	}
	return b;
}

void
ab_api_health (struct ab_req_s *r)
{
	unsigned counts[4];

	ab_registry_counts (r->d, counts);
	ab_resp_json (r, 200,
	              json_pack ("{s:s, s:{s:i, s:i, s:i}}", "status", "ok", "sandboxes", "running",
	                         counts[AB_BOX_RUNNING], "dead", counts[AB_BOX_DEAD], "creating",
	                         counts[AB_BOX_CREATING]));
}

void
ab_api_metrics (struct ab_req_s *r)
{
	cleanup_free char *text = ab_metrics_render (r->d);
	/* respond() is static in respond.c: stream it in one chunk instead. */
	if (ab_resp_stream_begin (r, 200, "text/plain; version=0.0.4; charset=utf-8") == 0
	    && ab_resp_stream (r, text, strlen (text)) == 0)
		ab_resp_stream_end (r);
}

void
ab_api_sandbox_create (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b;
	json_t *req;

	if (ab_req_body_json (r, &req, &err) < 0) {
		ab_resp_error (r, &err);
		return;
	}
	if (json_is_object (req) && json_object_get (req, "pool")) {
		ab_api_pool_claim (r, req);
		json_decref (req);
		return;
	}
	if (ab_box_create (r->d, req, &b, &err) < 0)
		ab_resp_error (r, &err);
	else {
		/* The port token is the owner's to hand out: this answer is the
		 * one place it is shown (GET and listings leave it out). */
		json_t *j = ab_box_json (r->d, b);
		json_object_set_new (j, "port_token", json_string (b->port_token));
		ab_resp_json (r, 201, j);
		ab_box_unref (r->d, b);
	}
	json_decref (req);
}

/* label=KEY=VALUE (repeatable; all must match) or label=KEY (present). */
static bool
labels_match (const json_t *labels, char **filters)
{
	for (char **f = filters; *f; f++) {
		char *eq = strchr (*f, '=');
		cleanup_free char *key = eq ? xstrndup (*f, (size_t)(eq - *f)) : xstrdup (*f);
		const char *v = json_string_value (json_object_get (labels, key));
		if (!v || (eq && strcmp (v, eq + 1) != 0))
			return false;
	}
	return true;
}

void
ab_api_sandbox_list (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_strv char **filters = ab_req_query_all (r, "label", &err);
	json_t *arr;
	size_t n;
	struct ab_box_s **v;

	if (!filters) {
		ab_resp_error (r, &err);
		return;
	}
	arr = json_array ();
	v = ab_registry_all (r->d, &n);
	for (size_t i = 0; i < n; i++)
		if (ab_box_get_state (r->d, v[i]) != AB_BOX_CREATING && !v[i]->pool
		    && labels_match (v[i]->labels, filters))
			json_array_append_new (arr, ab_box_json (r->d, v[i]));
	ab_registry_release (r->d, v, n);
	ab_resp_json (r, 200, json_pack ("{s:o}", "sandboxes", arr));
}

void
ab_api_sandbox_get (struct ab_req_s *r)
{
	struct ab_box_s *b = ab_api_box (r, false);

	if (!b)
		return;
	ab_resp_json (r, 200, ab_box_json (r->d, b));
	ab_box_unref (r->d, b);
}

void
ab_api_sandbox_delete (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_api_box (r, false);

	if (!b)
		return;
	if (ab_box_destroy (r->d, b, ab_req_query_flag (r, "force"), &err) < 0)
		ab_resp_error (r, &err);
	else
		ab_resp_empty (r, 204);
	ab_box_unref (r->d, b);
}
