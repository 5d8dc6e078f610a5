/* failio — an LD_PRELOAD shim that makes one file write or rename fail the way a full disk or
 * a killed process would, for the tests of what scaleplan leaves behind (tests/cli/failio.sh).
 * Inert unless FAILIO_PATH is set. Environment:
 *   FAILIO_PATH   substring of the file's path (for writes: the open file, as /proc/self/fd
 *                 names it; for renames: the destination)
 *   FAILIO_OP     write (default) or rename
 *   FAILIO_AFTER  write: bytes that still succeed, summed over every matching file (default 0)
 *   FAILIO_NTH    rename: the n-th matching rename fails (default 1)
 *   FAILIO_DO     enospc (default: the write is cut short, then fails with ENOSPC; a rename
 *                 fails with ENOSPC) or kill (SIGKILL at that point)
 *   FAILIO_RANK   only in the MPI process of this rank (OMPI_COMM_WORLD_RANK)
 * scaleplan writes its files with write(2) and rename(2) (sim/outfile.c), which this shim
 * interposes; stdio inside the C library does not go through it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long written;
static long renames;

static int armed(const char *op)
{
	const char *path = getenv("FAILIO_PATH"), *want = getenv("FAILIO_OP"), *rank = getenv("FAILIO_RANK");
	if (!path || !*path) return 0;
	if (strcmp(want ? want : "write", op)) return 0;
	if (rank) {
		const char *mine = getenv("OMPI_COMM_WORLD_RANK");
		if (!mine || strcmp(mine, rank)) return 0;
	}
	return 1;
}

static int fd_matches(int fd)
{
	char link[64], target[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0) return 0;
	target[n] = 0;
	return strstr(target, getenv("FAILIO_PATH")) != NULL;
}

static int killing(void)
{
	const char *d = getenv("FAILIO_DO");
	return d && !strcmp(d, "kill");
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (fd > 2 && n > 0 && armed("write") && fd_matches(fd)) {
		unsigned long long after = strtoull(getenv("FAILIO_AFTER") ? getenv("FAILIO_AFTER") : "0", NULL, 10);
		if (written + n > after) {
			if (killing()) raise(SIGKILL);
			size_t room = written < after ? (size_t)(after - written) : 0;
			if (room > 0) {
				ssize_t k = real(fd, buf, room);
				if (k > 0) written += (unsigned long long)k;
				return k;
			}
			errno = ENOSPC;
			return -1;
		}
		ssize_t k = real(fd, buf, n);
		if (k > 0) written += (unsigned long long)k;
		return k;
	}
	return real(fd, buf, n);
}

int rename(const char *from, const char *to)
{
	static int (*real)(const char *, const char *);
	if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	if (armed("rename") && strstr(to, getenv("FAILIO_PATH"))) {
		long nth = strtol(getenv("FAILIO_NTH") ? getenv("FAILIO_NTH") : "1", NULL, 10);
		if (++renames == nth) {
			if (killing()) raise(SIGKILL);
			errno = ENOSPC;
			return -1;
		}
	}
	return real(from, to);
}
