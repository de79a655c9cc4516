/* getaddrinfo in a small thread pool; see resolve.h.  Only the event loop's
 * thread touches libevent and calls callbacks; workers only run
 * getaddrinfo and hand finished jobs back under the mutex. */
#include "net/resolve.h"

#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"

struct ab_resolve_job_s {
	struct ab_resolve_job_s *next;
	char *name;
	ab_resolve_cb cb;
	void *arg;
	bool cancelled; /* under r->mu */
	struct ab_resolve_result_s res;
};

struct job_list_s {
	struct ab_resolve_job_s *head;
	struct ab_resolve_job_s **tail;
	unsigned n;
};

struct ab_resolver_s {
	struct event_base *base;
	struct event *ev;
	int efd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job_list_s queued; /* waiting for a worker */
	struct job_list_s done;   /* waiting for the event loop */
	unsigned max_queued;
	bool stopping;
	pthread_t *threads;
	unsigned n_threads;
};

static void
list_init (struct job_list_s *l)
{
	l->head = NULL;
	l->tail = &l->head;
	l->n = 0;
}

static void
list_push (struct job_list_s *l, struct ab_resolve_job_s *j)
{
	j->next = NULL;
	*l->tail = j;
	l->tail = &j->next;
	l->n++;
}

static struct ab_resolve_job_s *
list_pop (struct job_list_s *l)
{
	struct ab_resolve_job_s *j = l->head;

	if (j == NULL)
		return NULL;
	l->head = j->next;
	if (l->head == NULL)
		l->tail = &l->head;
	l->n--;
	return j;
}

static bool
list_remove (struct job_list_s *l, struct ab_resolve_job_s *j)
{
	for (struct ab_resolve_job_s **pp = &l->head; *pp; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			if (*pp == NULL)
				l->tail = pp;
			l->n--;
			return true;
		}
	}
	return false;
}

static void
job_free (struct ab_resolve_job_s *j)
{
	free (j->name);
	free (j->res.addrs);
	free (j);
}

static bool
has_addr (const struct ab_resolve_result_s *res, const struct ab_addr_s *a)
{
	for (size_t i = 0; i < res->n; i++)
		if (ab_addr_equal (&res->addrs[i], a))
			return true;
	return false;
}

/* No AI_ADDRCONFIG: every answer the name has is vetted, not only the ones
 * this host could reach today. */
static void
lookup (struct ab_resolve_job_s *j)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	size_t cap = 0;

	j->res.gai_error = getaddrinfo (j->name, NULL, &hints, &ai);
	if (j->res.gai_error != 0)
		return;
	for (struct addrinfo *p = ai; p; p = p->ai_next) {
		struct ab_addr_s a;
		if (ab_addr_from_sockaddr (p->ai_addr, &a) < 0 || has_addr (&j->res, &a))
			continue;
		if (j->res.n == cap) {
			cap = cap ? cap * 2 : 4;
			j->res.addrs = xrealloc (j->res.addrs, cap * sizeof *j->res.addrs);
		}
		j->res.addrs[j->res.n++] = a;
	}
	freeaddrinfo (ai);
	if (j->res.n == 0)
		j->res.gai_error = EAI_NONAME;
}

static void *
worker (void *arg)
{
	struct ab_resolver_s *r = arg;
	const uint64_t one = 1;

	pthread_mutex_lock (&r->mu);
	for (;;) {
		struct ab_resolve_job_s *j;

		while (!r->stopping && r->queued.head == NULL)
			pthread_cond_wait (&r->cv, &r->mu);
		if (r->stopping)
			break;
		j = list_pop (&r->queued);
		if (j == NULL)
			continue;
		pthread_mutex_unlock (&r->mu);
		lookup (j);
		pthread_mutex_lock (&r->mu);
		list_push (&r->done, j);
		if (write (r->efd, &one, sizeof one) < 0 && errno != EAGAIN)
			abort (); /* an eventfd write fails only on overflow */
	}
	pthread_mutex_unlock (&r->mu);
	return NULL;
}

static void
on_done (evutil_socket_t fd, short what, void *arg)
{
	struct ab_resolver_s *r = arg;
	struct job_list_s done;
	struct ab_resolve_job_s *j;
	uint64_t v;

	if (read (r->efd, &v, sizeof v) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock (&r->mu);
	done = r->done;
	if (done.head == NULL)
		done.tail = &done.head;
	list_init (&r->done);
	/* Jobs cancelled after they finished are dropped here. */
	pthread_mutex_unlock (&r->mu);
	while ((j = list_pop (&done)) != NULL) {
		if (!j->cancelled)
			j->cb (j->arg, &j->res);
		job_free (j);
	}
}

static int
start_workers (struct ab_resolver_s *r, unsigned threads, ab_error_t *err)
{
	sigset_t all, old;

	/* Signals are for the event loop's thread, never a resolver worker. */
	sigfillset (&all);
	pthread_sigmask (SIG_BLOCK, &all, &old);
	r->threads = xcalloc (threads, sizeof *r->threads);
	for (; r->n_threads < threads; r->n_threads++) {
		int e = pthread_create (&r->threads[r->n_threads], NULL, worker, r);
		if (e != 0) {
			pthread_sigmask (SIG_SETMASK, &old, NULL);
			return ab_error (err, e, AB_E_SYSTEM, "start resolver thread");
		}
	}
	pthread_sigmask (SIG_SETMASK, &old, NULL);
	return 0;
}

struct ab_resolver_s *
ab_resolver_new (struct event_base *base, unsigned threads, unsigned max_queued, ab_error_t *err)
{
	struct ab_resolver_s *r = xcalloc (1, sizeof *r);

	r->base = base;
	r->max_queued = max_queued ? max_queued : 1;
	list_init (&r->queued);
	list_init (&r->done);
	pthread_mutex_init (&r->mu, NULL);
	pthread_cond_init (&r->cv, NULL);
	r->efd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "eventfd");
		ab_resolver_free (r);
		return NULL;
	}
	r->ev = event_new (base, r->efd, EV_READ | EV_PERSIST, on_done, r);
	if (r->ev == NULL || event_add (r->ev, NULL) < 0) {
		ab_error (err, 0, AB_E_SYSTEM, "register resolver event");
		ab_resolver_free (r);
		return NULL;
	}
	if (start_workers (r, threads ? threads : 1, err) < 0) {
		ab_resolver_free (r);
		return NULL;
	}
	return r;
}

void
ab_resolver_free (struct ab_resolver_s *r)
{
	struct ab_resolve_job_s *j;

	if (r == NULL)
		return;
	pthread_mutex_lock (&r->mu);
	r->stopping = true;
	pthread_cond_broadcast (&r->cv);
	pthread_mutex_unlock (&r->mu);
	for (unsigned i = 0; i < r->n_threads; i++)
		pthread_join (r->threads[i], NULL);
	while ((j = list_pop (&r->queued)) != NULL)
		job_free (j);
	while ((j = list_pop (&r->done)) != NULL)
		job_free (j);
	if (r->ev)
		event_free (r->ev);
	if (r->efd >= 0)
		close (r->efd);
	pthread_cond_destroy (&r->cv);
	pthread_mutex_destroy (&r->mu);
	free (r->threads);
	free (r);
}

struct ab_resolve_job_s *
ab_resolver_submit (struct ab_resolver_s *r, const char *name, ab_resolve_cb cb, void *arg,
                    ab_error_t *err)
{
	struct ab_resolve_job_s *j;

	pthread_mutex_lock (&r->mu);
	if (r->queued.n >= r->max_queued) {
		pthread_mutex_unlock (&r->mu);
		ab_error (err, 0, AB_E_LIMIT, "resolver queue full");
		return NULL;
	}
	j = xcalloc (1, sizeof *j);
	j->name = xstrdup (name);
	j->cb = cb;
	j->arg = arg;
	list_push (&r->queued, j);
	pthread_cond_signal (&r->cv);
	pthread_mutex_unlock (&r->mu);
	return j;
}

void
ab_resolve_cancel (struct ab_resolver_s *r, struct ab_resolve_job_s *job)
{
	pthread_mutex_lock (&r->mu);
	if (list_remove (&r->queued, job)) {
		pthread_mutex_unlock (&r->mu);
		job_free (job);
		return;
	}
	/* Running or done: on_done frees it without calling back. */
	job->cancelled = true;
	pthread_mutex_unlock (&r->mu);
}

/* --- one blocking lookup under a deadline ---------------------------------- */

/* Shared by the caller and its worker thread; the last one out frees it
 * (a caller that gave up leaves the worker to finish getaddrinfo). */
struct sync_job_s {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned refs;
	bool done;
	struct ab_resolve_job_s job;
};

static void
sync_unref (struct sync_job_s *s)
{
	bool last;

	pthread_mutex_lock (&s->mu);
	last = --s->refs == 0;
	pthread_mutex_unlock (&s->mu);
	if (!last)
		return;
	free (s->job.name);
	free (s->job.res.addrs);
	pthread_mutex_destroy (&s->mu);
	pthread_cond_destroy (&s->cv);
	free (s);
}

static void *
sync_worker (void *arg)
{
	struct sync_job_s *s = arg;

	lookup (&s->job);
	pthread_mutex_lock (&s->mu);
	s->done = true;
	pthread_cond_signal (&s->cv);
	pthread_mutex_unlock (&s->mu);
	sync_unref (s);
	return NULL;
}

int
ab_resolve_sync (const char *name, unsigned timeout_ms, struct ab_resolve_result_s *out,
                 ab_error_t *err)
{
	struct sync_job_s *s = xcalloc (1, sizeof *s);
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t t;
	struct timespec until;
	int rc = 0;

	memset (out, 0, sizeof *out);
	pthread_mutex_init (&s->mu, NULL);
	pthread_condattr_init (&ca);
	pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
	pthread_cond_init (&s->cv, &ca);
	pthread_condattr_destroy (&ca);
	s->refs = 2;
	s->job.name = xstrdup (name);
	pthread_attr_init (&ta);
	pthread_attr_setdetachstate (&ta, PTHREAD_CREATE_DETACHED);
	if ((errno = pthread_create (&t, &ta, sync_worker, s)) != 0) {
		pthread_attr_destroy (&ta);
		s->refs = 1;
		sync_unref (s);
		return ab_error (err, errno, AB_E_SYSTEM, "starting a resolver thread");
	}
	pthread_attr_destroy (&ta);
	clock_gettime (CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock (&s->mu);
	while (!s->done && rc == 0)
		rc = pthread_cond_timedwait (&s->cv, &s->mu, &until);
	if (s->done) {
		*out = s->job.res;
		s->job.res = (struct ab_resolve_result_s){ 0 };
		rc = 0;
	}
	pthread_mutex_unlock (&s->mu);
	sync_unref (s);
	if (rc != 0)
		return ab_error (err, 0, AB_E_LIMIT, "resolving %s took over %u ms", name,
		                 timeout_ms);
	return 0;
}
