/* config.json (runtime-spec 1.0) into struct ab_oci_s: what agentbox-runc
 * honours, checked before anything is started. */
#include "cli/oci.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "spec/spec.h"

static const struct {
	const char *name;
	int type;
} ns_names[] = {
	{ "pid", CLONE_NEWPID },       { "network", CLONE_NEWNET },
	{ "mount", CLONE_NEWNS },      { "ipc", CLONE_NEWIPC },
	{ "uts", CLONE_NEWUTS },       { "user", CLONE_NEWUSER },
	{ "cgroup", CLONE_NEWCGROUP }, { "time", 0 },
};

/* Mount options that are flags; the rest is the filesystem's data. */
static const struct {
	const char *name;
	uint64_t set, clear;
	unsigned long prop;
	int bind; /* 1 bind, 2 rbind */
	bool rro;
} mount_flags[] = {
	{ "ro", MOUNT_ATTR_RDONLY, 0, 0, 0, false },
	{ "rw", 0, MOUNT_ATTR_RDONLY, 0, 0, false },
	{ "nosuid", MOUNT_ATTR_NOSUID, 0, 0, 0, false },
	{ "suid", 0, MOUNT_ATTR_NOSUID, 0, 0, false },
	{ "nodev", MOUNT_ATTR_NODEV, 0, 0, 0, false },
	{ "dev", 0, MOUNT_ATTR_NODEV, 0, 0, false },
	{ "noexec", MOUNT_ATTR_NOEXEC, 0, 0, 0, false },
	{ "exec", 0, MOUNT_ATTR_NOEXEC, 0, 0, false },
	{ "relatime", 0, 0, 0, 0, false },
	{ "norelatime", 0, 0, 0, 0, false },
	{ "strictatime", 0, 0, 0, 0, false },
	{ "noatime", MOUNT_ATTR_NOATIME, 0, 0, 0, false },
	{ "nodiratime", MOUNT_ATTR_NODIRATIME, 0, 0, 0, false },
	{ "bind", 0, 0, 0, 1, false },
	{ "rbind", 0, 0, 0, 2, false },
	{ "rro", MOUNT_ATTR_RDONLY, 0, 0, 0, true },
	{ "private", 0, 0, MS_PRIVATE, 0, false },
	{ "rprivate", 0, 0, MS_PRIVATE | MS_REC, 0, false },
	{ "slave", 0, 0, MS_SLAVE, 0, false },
	{ "rslave", 0, 0, MS_SLAVE | MS_REC, 0, false },
	{ "shared", 0, 0, MS_SHARED, 0, false },
	{ "rshared", 0, 0, MS_SHARED | MS_REC, 0, false },
	{ "unbindable", 0, 0, MS_UNBINDABLE, 0, false },
	{ "runbindable", 0, 0, MS_UNBINDABLE | MS_REC, 0, false },
	{ "tmpcopyup", 0, 0, 0, 0, false },
	{ "sync", 0, 0, 0, 0, false },
	{ "async", 0, 0, 0, 0, false },
	{ "defaults", 0, 0, 0, 0, false },
};

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{ "RLIMIT_AS", RLIMIT_AS },
	{ "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },
	{ "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },
	{ "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
	{ "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },
	{ "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },
	{ "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
	{ "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
	{ "RLIMIT_STACK", RLIMIT_STACK },
};

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{ "HUP", SIGHUP },       { "INT", SIGINT },   { "QUIT", SIGQUIT },   { "ILL", SIGILL },
	{ "TRAP", SIGTRAP },     { "ABRT", SIGABRT }, { "BUS", SIGBUS },     { "FPE", SIGFPE },
	{ "KILL", SIGKILL },     { "USR1", SIGUSR1 }, { "SEGV", SIGSEGV },   { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE },     { "ALRM", SIGALRM }, { "TERM", SIGTERM },   { "CHLD", SIGCHLD },
	{ "CONT", SIGCONT },     { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },   { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU },     { "URG", SIGURG },   { "XCPU", SIGXCPU },   { "XFSZ", SIGXFSZ },
	{ "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH }, { "IO", SIGIO },
	{ "PWR", SIGPWR },       { "SYS", SIGSYS },
};

int
ab_oci_signal_parse (const char *s, int *sig)
{
	char *end;
	long n;

	if (!s || !*s)
		return -1;
	n = strtol (s, &end, 10);
	if (*end == '\0') {
		if (n < 0 || n >= NSIG)
			return -1;
		*sig = (int)n;
		return 0;
	}
	if (strncasecmp (s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof signal_names / sizeof *signal_names; i++)
		if (strcasecmp (s, signal_names[i].name) == 0) {
			*sig = signal_names[i].sig;
			return 0;
		}
	return -1;
}

static char *
dup_str (const json_t *o, const char *key)
{
	const char *s = json_string_value (json_object_get (o, key));
	return s ? xstrdup (s) : NULL;
}

static int
strv_of (const json_t *a, const char *what, char ***out, ab_error_t *err)
{
	size_t i, n = json_array_size (a);
	json_t *v;
	char **r;

	if (a && !json_is_array (a))
		return ab_error (err, 0, AB_E_INVALID, "config.json: %s must be an array", what);
	r = xcalloc (n + 1, sizeof *r);
	json_array_foreach (a, i, v)
	{
		if (!json_is_string (v)) {
			ab_cleanup_strvp (&r);
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: %s[%zu] must be a string", what, i);
		}
		r[i] = xstrdup (json_string_value (v));
	}
	*out = r;
	return 0;
}

static uint64_t
rlim_of (const json_t *v)
{
	return json_is_integer (v) ? (uint64_t)json_integer_value (v) : RLIM_INFINITY;
}

static int
parse_rlimits (const json_t *a, struct ab_oci_process_s *p, ab_error_t *err)
{
	size_t i;
	json_t *v;

	p->rlimits = xcalloc (json_array_size (a) + 1, sizeof *p->rlimits);
	json_array_foreach (a, i, v)
	{
		const char *type = json_string_value (json_object_get (v, "type"));
		size_t k;
		for (k = 0; type && k < sizeof rlimit_names / sizeof *rlimit_names; k++)
			if (strcmp (type, rlimit_names[k].name) == 0)
				break;
		if (!type || k == sizeof rlimit_names / sizeof *rlimit_names)
			return ab_error (err, 0, AB_E_INVALID, "config.json: unknown rlimit %s",
			                 type ? type : "(none)");
		p->rlimits[p->n_rlimits++] =
		        (struct ab_oci_rlimit_s){ rlimit_names[k].resource,
			                          rlim_of (json_object_get (v, "soft")),
			                          rlim_of (json_object_get (v, "hard")) };
	}
	return 0;
}

static void
parse_user (const json_t *u, struct ab_oci_process_s *p)
{
	const json_t *g = json_object_get (u, "additionalGids");
	size_t i;
	json_t *v;

	p->uid = (uid_t)json_integer_value (json_object_get (u, "uid"));
	p->gid = (gid_t)json_integer_value (json_object_get (u, "gid"));
	if (json_is_integer (json_object_get (u, "umask"))) {
		p->umask = (mode_t)json_integer_value (json_object_get (u, "umask"));
		p->has_umask = true;
	}
	p->groups = xcalloc (json_array_size (g) + 1, sizeof *p->groups);
	json_array_foreach (g, i, v) p->groups[p->n_groups++] = (gid_t)json_integer_value (v);
}

int
ab_oci_process_parse (const json_t *p, struct ab_oci_process_s *proc, ab_error_t *err)
{
	const json_t *cs = json_object_get (p, "consoleSize");

	if (!json_is_object (p))
		return ab_error (err, 0, AB_E_INVALID, "config.json: process must be an object");
	if (strv_of (json_object_get (p, "args"), "process.args", &proc->args, err) < 0
	    || strv_of (json_object_get (p, "env"), "process.env", &proc->env, err) < 0)
		return -1;
	if (!proc->args[0])
		return ab_error (err, 0, AB_E_INVALID,
		                 "config.json: process.args must not be empty");
	proc->cwd = dup_str (p, "cwd");
	if (!proc->cwd)
		proc->cwd = xstrdup ("/");
	if (proc->cwd[0] != '/')
		return ab_error (err, 0, AB_E_INVALID,
		                 "config.json: process.cwd %s is not absolute", proc->cwd);
	parse_user (json_object_get (p, "user"), proc);
	proc->terminal = json_is_true (json_object_get (p, "terminal"));
	proc->rows = (unsigned short)json_integer_value (json_object_get (cs, "height"));
	proc->cols = (unsigned short)json_integer_value (json_object_get (cs, "width"));
	proc->no_new_privs = json_is_true (json_object_get (p, "noNewPrivileges"));
	if (json_is_integer (json_object_get (p, "oomScoreAdj"))) {
		proc->oom_score_adj = (int)json_integer_value (json_object_get (p, "oomScoreAdj"));
		proc->has_oom = true;
	}
	return parse_rlimits (json_object_get (p, "rlimits"), proc, err);
}

void
ab_oci_process_free (struct ab_oci_process_s *p)
{
	ab_cleanup_strvp (&p->args);
	ab_cleanup_strvp (&p->env);
	free (p->cwd);
	free (p->groups);
	free (p->rlimits);
	memset (p, 0, sizeof *p);
}

static int
parse_options (const json_t *opts, struct ab_oci_mount_s *m, ab_error_t *err)
{
	char data[4096] = "";
	size_t i, len = 0;
	json_t *v;

	json_array_foreach (opts, i, v)
	{
		const char *o = json_string_value (v);
		size_t k, n = sizeof mount_flags / sizeof *mount_flags;
		if (!o)
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: mount option not a string");
		for (k = 0; k < n && strcmp (o, mount_flags[k].name) != 0; k++)
			;
		if (k < n) {
			m->attr = (m->attr & ~mount_flags[k].clear) | mount_flags[k].set;
			if (mount_flags[k].prop)
				m->propagation = mount_flags[k].prop;
			if (mount_flags[k].bind) {
				m->bind = true;
				m->recursive = mount_flags[k].bind == 2;
			}
			m->recursive_ro |= mount_flags[k].rro;
			continue;
		}
		if (strncmp (o, "idmap", 5) == 0 || strncmp (o, "ridmap", 6) == 0)
			continue; /* every bind is idmapped to the container's root anyway */
		len += (size_t)snprintf (data + len, sizeof data - len, "%s%s", len ? "," : "", o);
		if (len >= sizeof data)
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: mount options too long");
	}
	m->data = len ? xstrdup (data) : NULL;
	return 0;
}

int
ab_oci_mounts_parse (const json_t *a, struct ab_oci_s *c, ab_error_t *err)
{
	size_t i;
	json_t *v;

	c->mounts = xcalloc (json_array_size (a) + 1, sizeof *c->mounts);
	json_array_foreach (a, i, v)
	{
		struct ab_oci_mount_s *m = &c->mounts[c->n_mounts++];
		m->destination = dup_str (v, "destination");
		m->type = dup_str (v, "type");
		m->source = dup_str (v, "source");
		if (!m->destination || m->destination[0] != '/')
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: mounts[%zu].destination must be absolute",
			                 i);
		if (parse_options (json_object_get (v, "options"), m, err) < 0)
			return -1;
		if (m->type && strcmp (m->type, "bind") == 0)
			m->bind = true;
		if (!m->type && !m->bind)
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: mounts[%zu] has no type", i);
		if (m->bind && m->source && m->source[0] != '/' && c->bundle) {
			/* runc: a relative source is relative to the bundle */
			char *abs = NULL;
			if (asprintf (&abs, "%s/%s", c->bundle, m->source) < 0)
				abort ();
			free (m->source);
			m->source = abs;
		}
		if (m->bind && (!m->source || m->source[0] != '/'))
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: bind mount %s has no source",
			                 m->destination);
	}
	return 0;
}

static int
parse_idmaps (const json_t *a, struct ab_oci_idmap_s *maps, size_t *n, ab_error_t *err)
{
	size_t i;
	json_t *v;

	if (json_array_size (a) > AB_OCI_MAX_IDMAPS)
		return ab_error (err, 0, AB_E_LIMIT, "config.json: more than %d id mappings",
		                 AB_OCI_MAX_IDMAPS);
	json_array_foreach (a, i, v)
	{
		maps[i].inside = (uint32_t)json_integer_value (json_object_get (v, "containerID"));
		maps[i].host = (uint32_t)json_integer_value (json_object_get (v, "hostID"));
		maps[i].size = (uint32_t)json_integer_value (json_object_get (v, "size"));
		/* Never the host's root, whatever the bundle says. */
		if (maps[i].host == 0 || maps[i].size == 0)
			return ab_error (
			        err, 0, AB_E_DENIED,
			        "config.json: id mapping to host id 0 refused (the container's "
			        "ids map to unprivileged host ids)");
	}
	*n = json_array_size (a);
	return 0;
}

static int
parse_namespaces (const json_t *a, struct ab_oci_s *c, ab_error_t *err)
{
	size_t i;
	json_t *v;

	json_array_foreach (a, i, v)
	{
		const char *type = json_string_value (json_object_get (v, "type"));
		size_t k, n = sizeof ns_names / sizeof *ns_names;
		for (k = 0; type && k < n && strcmp (type, ns_names[k].name) != 0; k++)
			;
		if (!type || k == n || c->n_ns == 8)
			return ab_error (err, 0, AB_E_INVALID, "config.json: unknown namespace %s",
			                 type ? type : "(none)");
		if (!ns_names[k].type)
			return ab_error (err, 0, AB_E_INVALID,
			                 "config.json: %s namespaces are not supported", type);
		c->ns[c->n_ns].type = ns_names[k].type;
		c->ns[c->n_ns++].path = dup_str (v, "path");
	}
	return 0;
}

/* run.agentbox.network: "none" gives the container a network namespace of
 * its own with only lo, whatever the engine prepared (its namespace is
 * not joined, the host's never shared); "engine" (the default) keeps the
 * engine's.  Our egress proxy ("proxy") needs a host side that outlives
 * create: refused, not silently dropped. */
static int
network_annotation (struct ab_oci_s *c, ab_error_t *err)
{
	const char *v = json_string_value (json_object_get (
	        json_object_get (c->json, "annotations"), AB_OCI_NETWORK_ANNOTATION));
	size_t i;

	if (!v || strcmp (v, "engine") == 0)
		return 0;
	if (strcmp (v, "none") != 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "annotation " AB_OCI_NETWORK_ANNOTATION
		                 "=%s is not supported (none or engine)",
		                 v);
	for (i = 0; i < c->n_ns && c->ns[i].type != CLONE_NEWNET; i++)
		;
	if (i == c->n_ns) {
		if (c->n_ns == 8)
			return ab_error (err, 0, AB_E_INVALID, "config.json: too many namespaces");
		c->ns[c->n_ns++] = (struct ab_oci_ns_s){ .type = CLONE_NEWNET };
	}
	free (c->ns[i].path);
	c->ns[i].path = NULL;
	return 0;
}

bool
ab_oci_ns_new (const struct ab_oci_s *c, int type)
{
	for (size_t i = 0; i < c->n_ns; i++)
		if (c->ns[i].type == type)
			return c->ns[i].path == NULL;
	return false;
}

static void
parse_resources (const json_t *r, struct ab_oci_s *c)
{
	const json_t *cpu = json_object_get (r, "cpu");
	json_int_t mem =
	        json_integer_value (json_object_get (json_object_get (r, "memory"), "limit"));
	json_int_t pids =
	        json_integer_value (json_object_get (json_object_get (r, "pids"), "limit"));
	json_int_t quota = json_integer_value (json_object_get (cpu, "quota"));
	json_int_t period = json_integer_value (json_object_get (cpu, "period"));

	c->memory = mem > 0 ? (uint64_t)mem : 0;
	c->pids = pids > 0 ? (uint64_t)pids : 0;
	if (quota > 0)
		c->cpu_millis = (uint64_t)quota * 1000 / (uint64_t)(period > 0 ? period : 100000);
}

static int
parse_linux (const json_t *l, struct ab_oci_s *c, ab_error_t *err)
{
	if (parse_namespaces (json_object_get (l, "namespaces"), c, err) < 0
	    || parse_idmaps (json_object_get (l, "uidMappings"), c->uids, &c->n_uids, err) < 0
	    || parse_idmaps (json_object_get (l, "gidMappings"), c->gids, &c->n_gids, err) < 0
	    || strv_of (json_object_get (l, "maskedPaths"), "linux.maskedPaths", &c->masked, err)
	               < 0
	    || strv_of (json_object_get (l, "readonlyPaths"), "linux.readonlyPaths", &c->readonly,
	                err)
	               < 0)
		return -1;
	for (size_t i = 0; i < c->n_ns; i++)
		if (c->ns[i].path
		    && (c->ns[i].type == CLONE_NEWUSER || c->ns[i].type == CLONE_NEWNS
		        || c->ns[i].type == CLONE_NEWPID))
			return ab_error (
			        err, 0, AB_E_INVALID,
			        "config.json: joining an existing user, mount or pid namespace "
			        "is not supported (each container gets its own)");
	parse_resources (json_object_get (l, "resources"), c);
	return 0;
}

/* The bundle's root: a directory, never a symlink (which could point
 * anywhere on the host). */
static int
resolve_root (const json_t *root, struct ab_oci_s *c, ab_error_t *err)
{
	const char *path = json_string_value (json_object_get (root, "path"));
	char buf[PATH_MAX];
	struct stat st;

	if (!path)
		return ab_error (err, 0, AB_E_INVALID, "config.json: root.path is missing");
	if (path[0] == '/')
		snprintf (buf, sizeof buf, "%s", path);
	else
		snprintf (buf, sizeof buf, "%s/%s", c->bundle, path);
	if (lstat (buf, &st) < 0)
		return ab_error (err, errno, AB_E_NOT_FOUND, "rootfs %s", buf);
	if (S_ISLNK (st.st_mode))
		return ab_error (err, 0, AB_E_DENIED, "rootfs %s is a symlink: refused", buf);
	if (!S_ISDIR (st.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "rootfs %s is not a directory", buf);
	c->rootfs = xstrdup (buf);
	c->root_readonly = json_is_true (json_object_get (root, "readonly"));
	return 0;
}

int
ab_oci_config_load (const char *bundle, struct ab_oci_s *c, ab_error_t *err)
{
	char path[PATH_MAX], real[PATH_MAX];
	json_error_t jerr;
	const json_t *p;

	if (!realpath (bundle, real))
		return ab_error (err, errno, AB_E_NOT_FOUND, "bundle %s", bundle);
	c->bundle = xstrdup (real);
	snprintf (path, sizeof path, "%s/config.json", real);
	c->json = json_load_file (path, 0, &jerr);
	if (!c->json) {
		if (access (path, F_OK) < 0)
			return ab_error (err, errno, AB_E_NOT_FOUND, "open %s", path);
		return ab_error (err, 0, AB_E_INVALID, "%s: line %d: %s", path, jerr.line,
		                 jerr.text);
	}
	if (!json_is_object (c->json))
		return ab_error (err, 0, AB_E_INVALID, "%s: not a JSON object", path);
	p = json_object_get (c->json, "process");
	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "config.json: process is missing");
	if (ab_oci_process_parse (p, &c->proc, err) < 0
	    || resolve_root (json_object_get (c->json, "root"), c, err) < 0
	    || ab_oci_mounts_parse (json_object_get (c->json, "mounts"), c, err) < 0
	    || parse_linux (json_object_get (c->json, "linux"), c, err) < 0)
		return -1;
	if (network_annotation (c, err) < 0)
		return -1;
	c->hostname = dup_str (c->json, "hostname");
	c->cgroups_path = dup_str (json_object_get (c->json, "linux"), "cgroupsPath");
	return 0;
}

void
ab_oci_config_free (struct ab_oci_s *c)
{
	for (size_t i = 0; i < c->n_mounts; i++) {
		free (c->mounts[i].destination);
		free (c->mounts[i].type);
		free (c->mounts[i].source);
		free (c->mounts[i].data);
	}
	free (c->mounts);
	for (size_t i = 0; i < c->n_ns; i++)
		free (c->ns[i].path);
	ab_oci_process_free (&c->proc);
	ab_cleanup_strvp (&c->masked);
	ab_cleanup_strvp (&c->readonly);
	free (c->bundle);
	free (c->rootfs);
	free (c->hostname);
	free (c->cgroups_path);
	json_decref (c->json);
	memset (c, 0, sizeof *c);
}

json_t *
ab_oci_default_spec (bool rootless)
{
	json_t *s = json_pack (
	        "{s:s, s:{s:b, s:{s:i, s:i}, s:[s], s:[s, s], s:s, s:b}, s:{s:s, s:b}, s:s,"
	        " s:[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:[s, s, s, s]},"
	        " {s:s, s:s, s:s, s:[s, s, s, s, s, s]}, {s:s, s:s, s:s, s:[s, s, s, s]}],"
	        " s:{s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}, {s:s}], s:[s, s], s:[s, s]}}",
	        "ociVersion", AB_OCI_SPEC_VERSION, "process", "terminal", 1, "user", "uid", 0,
	        "gid", 0, "args", "sh", "env",
	        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm",
	        "cwd", "/", "noNewPrivileges", 1, "root", "path", "rootfs", "readonly", 1,
	        "hostname", "agentbox", "mounts", "destination", "/proc", "type", "proc", "source",
	        "proc", "destination", "/dev", "type", "tmpfs", "source", "tmpfs", "options",
	        "nosuid", "strictatime", "mode=755", "size=65536k", "destination", "/dev/pts",
	        "type", "devpts", "source", "devpts", "options", "nosuid", "noexec", "newinstance",
	        "ptmxmode=0666", "mode=0620", "gid=5", "destination", "/dev/shm", "type", "tmpfs",
	        "source", "shm", "options", "nosuid", "noexec", "nodev", "mode=1777", "linux",
	        "namespaces", "type", "pid", "type", "network", "type", "ipc", "type", "uts",
	        "type", "mount", "type", "user", "maskedPaths", "/proc/kcore", "/proc/keys",
	        "readonlyPaths", "/proc/sys", "/proc/sysrq-trigger");
	(void)rootless; /* a user namespace is always there, so one form fits both */
	return s;
}
