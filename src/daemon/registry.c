/* The sandboxes this daemon serves.  One lock guards the list, the
 * reference counts, the states and the exec counts; a sandbox is freed
 * when it has left the list and its last reference is dropped, so a
 * handler that holds one never sees it vanish under it. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

static const char *const state_names[] = {
	[AB_BOX_CREATING] = "creating",
	[AB_BOX_RUNNING] = "running",
	[AB_BOX_DEAD] = "dead",
	[AB_BOX_DELETING] = "deleting",
};

const char *
ab_box_state_name (ab_box_state s)
{
	return state_names[s];
}

struct ab_box_s *
ab_box_new (struct ab_daemon_s *d, const char *id)
{
	struct ab_box_s *b = xcalloc (1, sizeof *b);

	snprintf (b->id, sizeof b->id, "%s", id);
	b->refs = 1;
	b->pidfd = -1;
	b->monitor_pid = -1;
	b->dir = xasprintf ("%s/%s", d->sandboxes_dir, id);
	b->agent_sock = xasprintf ("%s/agent.sock", b->dir);
	b->state_path = xasprintf ("%s/state.json", b->dir);
	b->labels = json_object ();
	ab_spec_init (&b->spec);
	return b;
}

static void
box_free (struct ab_box_s *b)
{
	if (b->pidfd >= 0)
		close (b->pidfd);
	free (b->dead_reason);
	free (b->from_snapshot);
	ab_cleanup_strvp (&b->workspace_mounts);
	free (b->pool);
	free (b->dir);
	free (b->agent_sock);
	free (b->state_path);
	json_decref (b->labels);
	ab_box_cred_free (b);
	ab_spec_free (&b->spec);
	free (b);
}

int
ab_registry_add (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	pthread_mutex_lock (&d->lock);
	/* The limit is for new sandboxes; re-adopted ones are served whatever it is. */
	if (b->state == AB_BOX_CREATING && d->cfg->max_sandboxes
	    && d->n_boxes >= d->cfg->max_sandboxes) {
		pthread_mutex_unlock (&d->lock);
		return ab_error (err, 0, AB_E_LIMIT, "at most %u sandboxes (--max-sandboxes)",
		                 d->cfg->max_sandboxes);
	}
	b->next = d->boxes;
	d->boxes = b;
	d->n_boxes++;
	b->refs++; /* the list's own reference */
	pthread_mutex_unlock (&d->lock);
	return 0;
}

struct ab_box_s *
ab_registry_get (struct ab_daemon_s *d, const char *id, ab_error_t *err)
{
	struct ab_box_s *b;

	pthread_mutex_lock (&d->lock);
	for (b = d->boxes; b; b = b->next)
		if (strcmp (b->id, id) == 0) {
			b->refs++;
			break;
		}
	pthread_mutex_unlock (&d->lock);
	if (!b)
		ab_error (err, 0, AB_E_NOT_FOUND, "no sandbox '%s'", id);
	return b;
}

void
ab_box_ref (struct ab_daemon_s *d, struct ab_box_s *b)
{
	pthread_mutex_lock (&d->lock);
	b->refs++;
	pthread_mutex_unlock (&d->lock);
}

void
ab_box_unref (struct ab_daemon_s *d, struct ab_box_s *b)
{
	bool last;

	if (!b)
		return;
	pthread_mutex_lock (&d->lock);
	last = --b->refs == 0;
	pthread_mutex_unlock (&d->lock);
	if (last)
		box_free (b);
}

void
ab_registry_remove (struct ab_daemon_s *d, struct ab_box_s *b)
{
	bool found = false;

	pthread_mutex_lock (&d->lock);
	for (struct ab_box_s **p = &d->boxes; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			d->n_boxes--;
			found = true;
			break;
		}
	pthread_mutex_unlock (&d->lock);
	if (found)
		ab_box_unref (d, b);
}

struct ab_box_s **
ab_registry_all (struct ab_daemon_s *d, size_t *n)
{
	struct ab_box_s **v;
	size_t i = 0;

	pthread_mutex_lock (&d->lock);
	v = xcalloc (d->n_boxes + 1, sizeof *v);
	for (struct ab_box_s *b = d->boxes; b; b = b->next) {
		b->refs++;
		v[i++] = b;
	}
	pthread_mutex_unlock (&d->lock);
	*n = i;
	return v;
}

void
ab_registry_release (struct ab_daemon_s *d, struct ab_box_s **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ab_box_unref (d, v[i]);
	free (v);
}

ab_box_state
ab_box_get_state (struct ab_daemon_s *d, struct ab_box_s *b)
{
	ab_box_state s;
	pthread_mutex_lock (&d->lock);
	s = b->state;
	pthread_mutex_unlock (&d->lock);
	return s;
}

int
ab_box_exec_begin (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	int r = 0;

	pthread_mutex_lock (&d->lock);
	if (b->state != AB_BOX_RUNNING)
		r = ab_error (err, 0, AB_E_CONFLICT, "sandbox %s is %s", b->id,
		              state_names[b->state]);
	else if (d->cfg->max_execs && b->n_execs >= d->cfg->max_execs)
		r = ab_error (err, 0, AB_E_LIMIT,
		              "sandbox %s has %u exec streams open (--max-execs)", b->id,
		              b->n_execs);
	else
		b->n_execs++;
	pthread_mutex_unlock (&d->lock);
	return r;
}

void
ab_box_exec_end (struct ab_daemon_s *d, struct ab_box_s *b)
{
	pthread_mutex_lock (&d->lock);
	b->n_execs--;
	pthread_mutex_unlock (&d->lock);
}

void
ab_registry_counts (struct ab_daemon_s *d, unsigned counts[4])
{
	memset (counts, 0, 4 * sizeof *counts);
	pthread_mutex_lock (&d->lock);
	for (struct ab_box_s *b = d->boxes; b; b = b->next)
		counts[b->state]++;
	pthread_mutex_unlock (&d->lock);
}
