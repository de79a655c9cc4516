#include "base/cleanup.h"

#include <signal.h>
#include <sys/wait.h>

void
ab_cleanup_freep (void *p)
{
	free (*(void **)p);
}

void
ab_cleanup_closep (int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close (*fd);
		errno = saved;
	}
}

void
ab_cleanup_filep (FILE **f)
{
	if (*f)
		fclose (*f);
}

void
ab_cleanup_dirp (DIR **d)
{
	if (*d)
		closedir (*d);
}

void
ab_cleanup_pidp (pid_t *pid)
{
	if (*pid > 0) {
		int saved = errno;
		kill (*pid, SIGKILL);
		while (waitpid (*pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = saved;
	}
}

void
ab_cleanup_strvp (char ***strv)
{
	if (*strv) {
		for (char **s = *strv; *s; s++)
			free (*s);
		free (*strv);
	}
}
