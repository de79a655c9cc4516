/* A sandbox's life as the daemon sees it: create (spawner, then the
 * agent's one-time configuration), destroy (SIGTERM to the monitor, which
 * kills the sandbox and removes its cgroups and socket; then the state
 * directory goes), death (the monitor ended on its own) and re-adoption
 * after a daemon restart. */
#include "daemon/daemon-internal.h"
#include "daemon/pool.h"
#include "policy/egress-policy.h"
#include "session/agent-config.h"
#include "session/egress-relay.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/sys.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"
#include "image/image.h"
#include "spec/spec-json.h"

#define MONITOR_EXIT_WAIT_MS 15000
#define ADOPT_PING_MS        5000
#define MAX_LABELS           64
#define MAX_LABEL_LEN        256

static void
make_id (char id[AB_BOX_ID_LEN + 1])
{
	unsigned char raw[AB_BOX_ID_LEN / 2];
	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort (); /* never reuse a predictable id */
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (id + 2 * i, 3, "%02x", raw[i]);
}

/* Is pid the monitor of sandbox id?  Its comm is agentbox-mon and, being a
 * fork of `agentbox __create-sandbox ID`, its cmdline names the id. */
static bool
is_monitor_of (pid_t pid, const char *id)
{
	char path[64], buf[256];
	cleanup_close int fd = -1;
	ssize_t n;

	snprintf (path, sizeof path, "/proc/%d/comm", (int)pid);
	fd = open (path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read (fd, buf, sizeof buf - 1)) <= 0)
		return false;
	buf[n] = '\0';
	if (strcmp (buf, "agentbox-mon\n") != 0)
		return false;
	close (fd);
	snprintf (path, sizeof path, "/proc/%d/cmdline", (int)pid);
	fd = open (path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read (fd, buf, sizeof buf - 1)) <= 0)
		return false;
	buf[n] = '\0';
	const char *arg1 = buf + strlen (buf) + 1;
	if (arg1 >= buf + n || strcmp (arg1, "__create-sandbox") != 0)
		return false;
	const char *arg2 = arg1 + strlen (arg1) + 1;
	return arg2 < buf + n && strcmp (arg2, id) == 0;
}

int
ab_monitor_open (pid_t pid, uint64_t start, const char *id, ab_error_t *err)
{
	cleanup_close int fd = -1;

	if (pid <= 0 || ab_proc_start_time (pid) != start || !is_monitor_of (pid, id))
		return ab_error (err, ESRCH, AB_E_NOT_FOUND, "monitor of sandbox %s", id);
	fd = ab_sys_pidfd_open (pid, 0);
	if (fd < 0)
		return ab_error (err, errno, AB_E_NOT_FOUND, "monitor of sandbox %s", id);
	/* Checked again through the pidfd's lifetime: had the pid been
	 * reused between the check and pidfd_open, the start time differs. */
	if (ab_proc_start_time (pid) != start)
		return ab_error (err, ESRCH, AB_E_NOT_FOUND, "monitor of sandbox %s", id);
	return steal_fd (&fd);
}

/* A monitor we have no pid for (the daemon died while creating). */
static pid_t
find_monitor (const char *id)
{
	cleanup_dir DIR *dir = opendir ("/proc");
	struct dirent *e;

	while (dir && (e = readdir (dir)))
		if (isdigit ((unsigned char)e->d_name[0]) && is_monitor_of (atoi (e->d_name), id))
			return atoi (e->d_name);
	return -1;
}

static int
stop_monitor (int pidfd, ab_error_t *err)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (syscall (SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) < 0 && errno != ESRCH)
		return ab_error (err, errno, AB_E_SYSTEM, "signal sandbox monitor");
	if (poll (&p, 1, MONITOR_EXIT_WAIT_MS) != 1)
		return ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "sandbox monitor did not end");
	return 0;
}

ab_agent_conn_t *
ab_box_connect (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	ab_agent_conn_t *c;

	if (ab_box_unpaused (d, b, err) < 0)
		return NULL;
	if (!(c = ab_agent_connect (b->agent_sock, err)))
		return NULL;
	ab_agent_set_timeout (c, AB_AGENT_CALL_TIMEOUT_MS);
	return c;
}

int
ab_box_ping (struct ab_daemon_s *d, struct ab_box_s *b, int timeout_ms, ab_error_t *err)
{
	ab_agent_conn_t *c = ab_box_connect (d, b, err);
	int r;

	if (!c)
		return -1;
	ab_agent_set_timeout (c, timeout_ms);
	r = ab_agent_ping (c, err);
	ab_agent_close (c);
	return r;
}

int
ab_box_configure (struct ab_daemon_s *d, struct ab_box_s *b, ab_agent_conn_t *conn, ab_error_t *err)
{
	ab_agent_conn_t *c = conn ? conn : ab_box_connect (d, b, err);
	int r = c ? ab_session_configure_agent (c, &b->spec, err) : -1;

	if (!conn)
		ab_agent_close (c);
	return r == 0 ? ab_box_egress_start (b, err) : -1;
}

int
ab_labels_check (const json_t *labels, ab_error_t *err)
{
	const char *k;
	json_t *v;

	if (!json_is_object (labels))
		return ab_error (err, 0, AB_E_INVALID, "'labels' must be an object of strings");
	if (json_object_size (labels) > MAX_LABELS)
		return ab_error (err, 0, AB_E_INVALID, "at most %d labels", MAX_LABELS);
	json_object_foreach ((json_t *)labels, k, v)
	{
		if (!json_is_string (v) || !*k || strlen (k) > MAX_LABEL_LEN || strchr (k, '=')
		    || json_string_length (v) > MAX_LABEL_LEN)
			return ab_error (err, 0, AB_E_INVALID,
			                 "label '%.64s': a name without '=' and a string value, "
			                 "each at most %d bytes",
			                 k, MAX_LABEL_LEN);
	}
	return 0;
}

static int
real_dir (char **slot, const char *what, ab_error_t *err)
{
	char real[PATH_MAX];
	struct stat st;

	if (!*slot)
		return 0;
	if ((*slot)[0] != '/' || !realpath (*slot, real) || stat (real, &st) < 0)
		return ab_error (err, errno, AB_E_INVALID,
		                 "%s '%s' must be an existing absolute host path", what, *slot);
	if (!S_ISDIR (st.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "%s '%s' is not a directory", what, *slot);
	free (*slot);
	*slot = xstrdup (real);
	return 0;
}

/* "workspace_mounts": absolute paths inside the sandbox where its
 * workspace is bound read-write as well as at /workspace. */
static int
parse_workspace_mounts (struct ab_box_s *b, const json_t *v, ab_error_t *err)
{
	size_t i;
	json_t *p;

	if (!v || json_is_null (v))
		return 0;
	if (!json_is_array (v))
		return ab_error (err, 0, AB_E_INVALID, "'workspace_mounts' must be an array");
	json_array_foreach (v, i, p)
	{
		const char *s = json_string_value (p);
		if (!s || s[0] != '/')
			return ab_error (
			        err, 0, AB_E_INVALID,
			        "workspace_mounts[%zu] must be an absolute path in the sandbox", i);
		ab_strv_push (&b->workspace_mounts, s);
	}
	return 0;
}

/* The request's own keys (ttl, labels) apart from the spec's. */
static int
parse_request (struct ab_box_s *b, const json_t *req, ab_error_t *err)
{
	json_t *spec = json_deep_copy (req);
	json_t *ttl = json_object_get (req, "ttl"), *labels = json_object_get (req, "labels");
	json_t *creds = json_object_get (req, "credentials");
	uint64_t ttl_ms = 0;
	int r = 0;

	json_object_del (spec, "ttl");
	json_object_del (spec, "labels");
	json_object_del (spec, "credentials");
	json_object_del (spec, "pull");
	json_object_del (spec, "workspace_mounts");
	if (parse_workspace_mounts (b, json_object_get (req, "workspace_mounts"), err) < 0) {
		json_decref (spec);
		return -1;
	}
	if (ab_box_snap_request (b, spec, err) < 0) {
		json_decref (spec);
		return -1;
	}
	b->workspace_owned = !json_object_get (spec, "workspace");
	if (ttl && !json_is_null (ttl) && ab_json_duration_ms (ttl, "ttl", &ttl_ms, err) < 0)
		r = -1;
	else if (labels && ab_labels_check (labels, err) < 0)
		r = -1;
	else
		r = ab_spec_from_json (spec, 0, &b->spec, err);
	json_decref (spec);
	if (r == 0 && creds && !json_is_null (creds))
		r = ab_box_cred_take (b, creds, err);
	if (r < 0)
		return -1;
	if (labels) {
		json_decref (b->labels);
		b->labels = json_deep_copy (labels);
	}
	b->ttl_ms = (int64_t)ttl_ms;
	return 0;
}

static int
check_spec (struct ab_box_s *b, ab_error_t *err)
{
	struct ab_spec_s *s = &b->spec;
	char *argv[] = { (char *)"true", NULL };
	struct sockaddr_un sun;
	socklen_t sun_len;
	int r;

	if (s->network == AB_NETWORK_PROXY) {
		struct ab_egress_policy_s *p = ab_egress_policy_from_spec (&s->egress, err);
		if (!p)
			return -1; /* a bad policy is the request's fault: 400 */
		ab_egress_policy_free (p);
		ab_spec_add_proxy_env (s);
	}
	if (b->workspace_owned)
		s->workspace = xasprintf ("%s/workspace", b->dir);
	else if (real_dir (&s->workspace, "workspace", err) < 0)
		return -1;
	if (!s->workspace && strcmp (s->workdir, AB_WORKSPACE_DIR) == 0) {
		free (s->workdir);
		s->workdir = xstrdup ("/");
	}
	if (real_dir (&s->rootfs, "rootfs", err) < 0)
		return -1;
	for (size_t i = 0; i < s->n_mounts; i++)
		if (s->mounts[i].source && real_dir (&s->mounts[i].source, "mount source", err) < 0
		    && (ab_error_clear (err), access (s->mounts[i].source, F_OK) < 0))
			return ab_error (err, errno, AB_E_INVALID, "mount source '%s'",
			                 s->mounts[i].source);
	/* Added after the sources' check: a workspace the daemon makes does
	 * not exist yet.  Validation below still refuses a duplicate. */
	if (b->workspace_mounts && !s->workspace)
		return ab_error (err, 0, AB_E_INVALID, "'workspace_mounts' needs a workspace");
	for (char **m = b->workspace_mounts; m && *m; m++)
		ab_spec_add_mount (s, AB_MOUNT_RW_BIND, s->workspace, *m, 0);
	ab_cleanup_strvp (&b->workspace_mounts);
	b->workspace_mounts = NULL;
	if (ab_unix_addr (b->agent_sock, &sun, &sun_len, err) < 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "state directory path too long for a socket: %s", b->agent_sock);
	/* The spec's command is the one-shot path's; a service sandbox has none. */
	s->argv = argv;
	r = ab_spec_validate (s, err);
	s->argv = NULL;
	return r;
}

/* What the spawner gets: the spec with the service socket, and without
 * the sandbox-wide timeout (here it is every exec's default instead; the
 * monitor's backstop would otherwise end the whole sandbox). */
static json_t *
spawn_spec (struct ab_box_s *b)
{
	uint64_t timeout = b->spec.limits.timeout_ms;
	json_t *j;

	b->spec.limits.timeout_ms = 0;
	b->spec.service_socket = b->agent_sock;
	j = ab_spec_to_json (&b->spec, AB_SPEC_JSON_INTERNAL);
	b->spec.service_socket = NULL;
	b->spec.limits.timeout_ms = timeout;
	return j;
}

static int
start_sandbox (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	struct ab_spawn_result_s res;
	json_t *spec = spawn_spec (b);
	int r;

	r = ab_spawn_sandbox (b->id, spec, &res, err);
	json_decref (spec);
	if (r < 0)
		return -1;
	snprintf (b->backend, sizeof b->backend, "%s", res.backend);
	snprintf (b->backend_id, sizeof b->backend_id, "%s", res.backend_id);
	b->monitor_pid = res.monitor_pid;
	b->monitor_start = ab_proc_start_time (res.monitor_pid);
	b->pidfd = ab_monitor_open (b->monitor_pid, b->monitor_start, b->id, err);
	if (b->pidfd < 0)
		return ab_error_wrap (err, "sandbox started but its monitor is gone");
	/* A pool's entry only proves its agent answers: the configuration
	 * is the claim's (daemon/pool-claim.c). */
	r = b->pool ? ab_box_ping (d, b, ADOPT_PING_MS, err) : ab_box_configure (d, b, NULL, err);
	if (r < 0) {
		stop_monitor (b->pidfd, &(ab_error_t)AB_ERROR_INIT);
		return ab_error_wrap (err, "configure the sandbox's agent");
	}
	return 0;
}

/* "image": the layered root and the image's defaults from the store the
 * CLI shares (STATE/images); what the request names wins over the
 * image's config.  A client's own "root" is dropped with an image. */
static int
prepare_image (struct ab_daemon_s *d, struct ab_box_s *b, const json_t *req, ab_error_t *err)
{
	json_t *pull = json_object_get (req, "pull");
	struct ab_image_given_s given = { json_object_get (req, "workdir") != NULL,
		                          json_object_get (req, "user") != NULL, false };
	ab_pull_policy p = AB_PULL_MISSING;
	char *argv[] = { (char *)"true", NULL };
	int r;

	if (!b->spec.image)
		return 0;
	if (pull
	    && (!json_is_string (pull)
	        || ab_pull_policy_parse (json_string_value (pull), &p, err) < 0))
		return ab_error (err, 0, AB_E_INVALID, "pull: expected always, missing or never");
	ab_cleanup_strvp (&b->spec.root.layers);
	if (ab_image_prepare_spec (d->cfg->state_dir, &b->spec, p, &given, NULL, err) < 0)
		return -1;
	/* The spec's command is the one-shot path's; a service sandbox has none. */
	ab_cleanup_strvp (&b->spec.argv);
	b->spec.argv = argv;
	r = ab_spec_validate (&b->spec, err);
	b->spec.argv = NULL;
	return r;
}

static void
undo_create (struct ab_daemon_s *d, struct ab_box_s *b)
{
	ab_image_lease_release (d->cfg->state_dir, b->id);
	ab_rm_rf (b->dir);
	ab_registry_remove (d, b);
}

int
ab_box_create (struct ab_daemon_s *d, const json_t *req, struct ab_box_s **out, ab_error_t *err)
{
	return ab_box_create_in (d, req, NULL, NULL, out, err);
}

int
ab_box_create_in (struct ab_daemon_s *d, const json_t *req, const char *pool, const char *hash,
                  struct ab_box_s **out, ab_error_t *err)
{
	char id[AB_BOX_ID_LEN + 1];
	struct ab_box_s *b;
	uint64_t t0 = ab_mono_us ();

	if (!json_is_object (req))
		return ab_error (err, 0, AB_E_INVALID, "the request body must be a JSON object");
	make_id (id);
	b = ab_box_new (d, id);
	b->state = AB_BOX_CREATING;
	if (pool) {
		b->pool = xstrdup (pool);
		snprintf (b->pool_hash, sizeof b->pool_hash, "%s", hash);
	}
	ab_port_token_new (b->port_token);
	if (parse_request (b, req, err) < 0 || check_spec (b, err) < 0
	    || prepare_image (d, b, req, err) < 0 || ab_registry_add (d, b, err) < 0) {
		ab_box_unref (d, b);
		return -1;
	}
	/* A workspace the daemon makes belongs to the sandbox's user (who may
	 * not be root: E2B's "user"), also where no idmapped mount maps its
	 * owner onto them; with one, the owner shows as the user anyway. */
	if (mkdir (b->dir, 0700) < 0 || (b->workspace_owned && mkdir (b->spec.workspace, 0755) < 0)
	    || (b->workspace_owned && b->spec.uid != 0 && geteuid () == 0
	        && chown (b->spec.workspace, b->spec.uid, b->spec.gid) < 0)) {
		ab_error (err, errno, AB_E_SYSTEM, "create %s", b->dir);
		undo_create (d, b);
		ab_box_unref (d, b);
		return -1;
	}
	if (b->spec.image_digest
	    && ab_image_lease_take (d->cfg->state_dir, b->id, b->spec.image_digest, b->dir, err)
	               < 0) {
		undo_create (d, b);
		ab_box_unref (d, b);
		return -1;
	}
	if (b->from_snapshot && ab_box_snap_restore (d, b, err) < 0) {
		undo_create (d, b);
		ab_box_unref (d, b);
		return -1;
	}
	b->created_ms = (int64_t)ab_unix_ms ();
	b->expires_ms = b->ttl_ms ? b->created_ms + b->ttl_ms : 0;
	if (ab_box_cred_save (b, err) < 0 || ab_box_save (d, b, err) < 0
	    || start_sandbox (d, b, err) < 0) {
		undo_create (d, b);
		ab_box_unref (d, b);
		return -1;
	}
	pthread_mutex_lock (&d->lock);
	b->state = AB_BOX_RUNNING;
	pthread_mutex_unlock (&d->lock);
	if (ab_box_save (d, b, err) < 0) {
		stop_monitor (b->pidfd, &(ab_error_t)AB_ERROR_INIT);
		undo_create (d, b);
		ab_box_unref (d, b);
		return -1;
	}
	ab_housekeeping_watch (d, b);
	/* Only now may a claim or the replenisher take a pool's entry: its
	 * state file is written (two writers of it would race). */
	pthread_mutex_lock (&d->lock);
	b->pool_ready = b->pool != NULL;
	pthread_mutex_unlock (&d->lock);
	ab_metrics_observe (AB_M_CREATE, ab_mono_us () - t0);
	ab_metrics_inc ("sandboxes_created");
	*out = b;
	return 0;
}

static int
has_running (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	struct ab_agent_proc_info_s *v = NULL;
	size_t n = 0, running = 0;
	ab_agent_conn_t *c = ab_box_connect (d, b, err);

	if (!c || ab_agent_proc_list (c, &v, &n, err) < 0) {
		ab_agent_close (c);
		return -1;
	}
	ab_agent_close (c);
	for (size_t i = 0; i < n; i++)
		running += v[i].running;
	ab_agent_proc_info_free (v, n);
	return running > 0;
}

int
ab_box_destroy (struct ab_daemon_s *d, struct ab_box_s *b, bool force, ab_error_t *err)
{
	ab_box_state prev;

	/* A frozen agent answers nothing (so whether processes run cannot be
	 * asked), and a frozen group dies slowly: thaw only what goes. */
	if (ab_box_is_paused (d, b)) {
		if (!force)
			return ab_error (err, 0, AB_E_CONFLICT,
			                 "sandbox %s is paused (force it: rm -f, or ?force=1)",
			                 b->id);
		if (ab_box_resume (d, b, err) < 0)
			ab_error_clear (err);
	}
	if (!force && ab_box_get_state (d, b) == AB_BOX_RUNNING) {
		int r = has_running (d, b, err);
		if (r > 0)
			return ab_error (
			        err, 0, AB_E_CONFLICT,
			        "sandbox %s has running processes (force it: rm -f, or ?force=1)",
			        b->id);
		ab_error_clear (err); /* an agent that does not answer is no reason to keep it */
	}
	pthread_mutex_lock (&d->lock);
	prev = b->state;
	if (prev == AB_BOX_RUNNING || prev == AB_BOX_DEAD)
		b->state = AB_BOX_DELETING;
	pthread_mutex_unlock (&d->lock);
	if (prev != AB_BOX_RUNNING && prev != AB_BOX_DEAD)
		return ab_error (err, 0, AB_E_CONFLICT, "sandbox %s is %s", b->id,
		                 ab_box_state_name (prev));
	ab_box_egress_stop (b);
	if (b->pidfd >= 0 && stop_monitor (b->pidfd, err) < 0) {
		pthread_mutex_lock (&d->lock);
		b->state = prev;
		pthread_mutex_unlock (&d->lock);
		return -1;
	}
	if (ab_rm_rf (b->dir) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "remove %s", b->dir);
	ab_image_lease_release (d->cfg->state_dir, b->id);
	ab_registry_remove (d, b);
	ab_metrics_inc ("sandboxes_deleted");
	return 0;
}

/* A step of a cleanup that no caller waits for: the daemon's log hears of it. */
static void
warn_step (const struct ab_box_s *b, const char *step, ab_error_t *err)
{
	ab_log_error (AB_LOG_WARN, err, "sandbox %s: %s", b->id, step);
	ab_error_clear (err);
}

void
ab_box_mark_dead (struct ab_daemon_s *d, struct ab_box_s *b, const char *reason)
{
	ab_error_t err = AB_ERROR_INIT;
	bool mine;

	pthread_mutex_lock (&d->lock);
	mine = b->state == AB_BOX_RUNNING || b->state == AB_BOX_CREATING;
	if (mine) {
		b->state = AB_BOX_DEAD;
		free (b->dead_reason);
		b->dead_reason = xstrdup (reason);
	}
	pthread_mutex_unlock (&d->lock);
	if (!mine)
		return;
	ab_box_egress_stop (b);
	/* An agent that no longer answers: its monitor ends it. */
	if (b->pidfd >= 0 && stop_monitor (b->pidfd, &err) < 0)
		warn_step (b, "stop its monitor", &err);
	unlink (b->agent_sock);
	if (b->workspace_owned) {
		cleanup_free char *ws = xasprintf ("%s/workspace", b->dir);
		ab_rm_rf (ws);
	}
	/* A monitor killed with SIGKILL could not remove its cgroups. */
	if (ab_backend_sweep_stale (&err) < 0)
		warn_step (b, "sweep stale cgroups", &err);
	if (ab_box_save (d, b, &err) < 0)
		warn_step (b, "save its state", &err);
	ab_metrics_inc ("sandboxes_died");
	ab_log (AB_LOG_INFO, "sandbox %s is dead: %s", b->id, reason);
}

/* A one-shot whose command was running when the daemon died
 * (daemon/pool-run.c): its caller is gone, the teardown is finished now. */
static void
adopt_oneshot (struct ab_daemon_s *d, struct ab_box_s *b)
{
	ab_error_t err = AB_ERROR_INIT;

	if (b->state != AB_BOX_DEAD
	    && (b->pidfd = ab_monitor_open (b->monitor_pid, b->monitor_start, b->id, &err)) < 0)
		ab_box_mark_dead (d, b, "its monitor ended while the daemon was down");
	ab_pool_oneshot_finish (d, b);
	ab_log (AB_LOG_INFO, "finished the teardown of one-shot sandbox %s", b->id);
	ab_box_unref (d, b);
}

/* One sandbox directory found at startup. */
static void
adopt_one (struct ab_daemon_s *d, const char *id)
{
	struct ab_box_s *b = ab_box_new (d, id);
	ab_error_t err = AB_ERROR_INIT;
	json_error_t je;
	json_t *j = json_load_file (b->state_path, 0, &je);
	ab_agent_conn_t *c;

	if (!j)
		ab_error (&err, 0, AB_E_INVALID, "%s: %s", b->state_path, je.text);

	if (!j || ab_box_from_state_json (b, j, &err) < 0 || b->state == AB_BOX_CREATING) {
		/* Never finished: whatever started is ended and forgotten. */
		pid_t pid = find_monitor (id);
		if (pid > 0)
			kill (pid, SIGTERM);
		json_decref (j);
		ab_rm_rf (b->dir);
		ab_box_unref (d, b);
		ab_log (AB_LOG_INFO, "removed unfinished sandbox %s%s%s", id,
		        err.msg[0] ? ": " : "", err.msg);
		return;
	}
	json_decref (j);
	if (ab_registry_add (d, b, &err) < 0) {
		ab_log_error (AB_LOG_WARN, &err, "sandbox %s not adopted", id);
		ab_box_unref (d, b);
		return;
	}
	if (ab_pool_oneshot_marked (b)) {
		adopt_oneshot (d, b);
		return;
	}
	/* Adoption runs before the API and the pools start: nobody claims yet. */
	b->pool_ready = b->pool != NULL;
	if (b->state == AB_BOX_DEAD) {
		ab_box_unref (d, b);
		return;
	}
	b->pidfd = ab_monitor_open (b->monitor_pid, b->monitor_start, id, &err);
	if (b->pidfd < 0) {
		ab_box_mark_dead (d, b, "its monitor ended while the daemon was down");
		ab_box_unref (d, b);
		return;
	}
	/* A paused agent cannot answer: it is adopted frozen, as it was left,
	 * and its monitor's pidfd still tells when it dies. */
	c = b->paused ? NULL : ab_agent_connect (b->agent_sock, &err);
	if (c)
		ab_agent_set_timeout (c, ADOPT_PING_MS);
	if (!b->paused
	    && (!c || ab_agent_ping (c, &err) < 0
	        || (!b->pool && ab_session_configure_agent (c, &b->spec, &err) < 0))) {
		ab_agent_close (c);
		cleanup_free char *why = xasprintf ("its agent does not answer: %s", err.msg);
		ab_box_mark_dead (d, b, why);
		ab_box_unref (d, b);
		return;
	}
	ab_agent_close (c);
	if (!b->pool && (ab_box_cred_load (b, &err) < 0 || ab_box_egress_start (b, &err) < 0))
		ab_log_error (AB_LOG_WARN, &err, "sandbox %s: forwarded ports", id);
	ab_housekeeping_watch (d, b);
	ab_box_unref (d, b);
}

int
ab_daemon_adopt (struct ab_daemon_s *d, ab_error_t *err)
{
	cleanup_dir DIR *dir = opendir (d->sandboxes_dir);
	struct dirent *e;

	if (!dir)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", d->sandboxes_dir);
	while ((e = readdir (dir))) {
		size_t len = strlen (e->d_name);
		if (len != AB_BOX_ID_LEN || strspn (e->d_name, "0123456789abcdef") != len)
			continue;
		adopt_one (d, e->d_name);
	}
	return 0;
}
