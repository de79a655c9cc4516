/* Ownership through cleanup attributes (after crun's and bubblewrap's
 * utils.h).  A resource lives in a cleanup variable until it is stolen into
 * the slot that owns it: `return steal_fd (&fd);`. */
#ifndef AB_BASE_CLEANUP_H
#define AB_BASE_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

void ab_cleanup_freep (void *p);
void ab_cleanup_closep (int *fd);
void ab_cleanup_filep (FILE **f);
void ab_cleanup_dirp (DIR **d);
void ab_cleanup_pidp (pid_t *pid); /* SIGKILL and reap a child not handed off */
void ab_cleanup_strvp (char ***strv);

#define cleanup_free  __attribute__ ((cleanup (ab_cleanup_freep)))
#define cleanup_close __attribute__ ((cleanup (ab_cleanup_closep)))
#define cleanup_file  __attribute__ ((cleanup (ab_cleanup_filep)))
#define cleanup_dir   __attribute__ ((cleanup (ab_cleanup_dirp)))
#define cleanup_pid   __attribute__ ((cleanup (ab_cleanup_pidp)))
#define cleanup_strv  __attribute__ ((cleanup (ab_cleanup_strvp)))

static inline void *
ab_steal_pointer (void *pp)
{
	void **p = (void **)pp;
	void *v = *p;
	*p = NULL;
	return v;
}
#define steal_pointer(pp) ((__typeof__ (*(pp)))ab_steal_pointer (pp))

static inline int
steal_fd (int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

static inline pid_t
steal_pid (pid_t *pid)
{
	pid_t v = *pid;
	*pid = -1;
	return v;
}

#endif
