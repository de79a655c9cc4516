/* agentbox-statx-shim.so: preloaded into commands under gVisor (see
 * src/agent/preload.c).  Debian's runsc 0.0~20221219 rejects
 * AT_NO_AUTOMOUNT in statx(2) and fstatat(2) with EINVAL (fixed upstream
 * in 2023); coreutils passes it on every stat, so `ls DIR`, `ls -l` and
 * `stat` fail.  The flag only stops automount triggers, and gVisor has no
 * automounter: dropping it changes nothing else.  Built -shared against the
 * host's libc, which the sandbox's read-only /usr provides. */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>

typedef int (*statx_fn) (int, const char *, int, unsigned int, struct statx *);
typedef int (*fstatat_fn) (int, const char *, struct stat *, int);
typedef int (*fstatat64_fn) (int, const char *, struct stat64 *, int);

int
statx (int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
	static statx_fn real;

	if (!real)
		real = (statx_fn)dlsym (RTLD_NEXT, "statx");
	return real (dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}

int
fstatat (int dirfd, const char *path, struct stat *buf, int flags)
{
	static fstatat_fn real;

	if (!real)
		real = (fstatat_fn)dlsym (RTLD_NEXT, "fstatat");
	return real (dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}

int
fstatat64 (int dirfd, const char *path, struct stat64 *buf, int flags)
{
	static fstatat64_fn real;

	if (!real)
		real = (fstatat64_fn)dlsym (RTLD_NEXT, "fstatat64");
	return real (dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}
