/* outfile — temporary file, write(2), fsync, rename, fsync of the directory. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "sim/outfile.h"
#include "sim/util.h"

static int fail(struct outfile *o, int e, char *err)
{
	if (!o->failed_errno) o->failed_errno = e;
	return errf(err, "%s: %s", o->path ? o->path : "output", strerror(o->failed_errno));
}

/* the directory part of path ("." when it has none) into a malloc'd string */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash) return strdup(".");
	if (slash == path) return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	if (rc && e == EINVAL) return 0; /* a file system without directory fsync */
	errno = e;
	return rc;
}

/* "DIR/.NAME.PID-N" created with O_EXCL, so the mode follows the umask as fopen's would */
static int open_temp(struct outfile *o)
{
	static unsigned counter;
	const char *slash = strrchr(o->path, '/');
	size_t dlen = slash ? (size_t)(slash - o->path) + 1 : 0, cap = strlen(o->path) + 48;
	o->tmp = malloc(cap);
	if (!o->tmp) return ENOMEM;
	for (int tries = 0; tries < 100; tries++) {
		unsigned salt = (unsigned)time(NULL) ^ (unsigned)clock() ^ (++counter * 2654435761u);
		snprintf(o->tmp, cap, "%.*s.%s.%ld-%08x", (int)dlen, o->path, o->path + dlen, (long)getpid(), salt);
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (o->fd >= 0) return 0;
		if (errno != EEXIST) break;
	}
	int e = errno;
	free(o->tmp);
	o->tmp = NULL;
	return e;
}

int outfile_open(struct outfile *o, const char *path, char *err)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!path || !*path) return errf(err, "output: empty file name");
	struct stat st;
	int e = 0;
	if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
		o->path = realpath(path, NULL);
		if (!o->path) return errf(err, "%s: %s", path, strerror(errno));
	} else {
		o->path = strdup(path);
	}
	if (!o->path) return errf(err, "%s: %s", path, strerror(ENOMEM));
	int exists = !stat(o->path, &st);
	if (exists && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) e = EISDIR;
		else if ((o->fd = open(o->path, O_WRONLY | O_CLOEXEC)) < 0) e = errno;
	} else {
		e = open_temp(o);
		/* a file being replaced keeps its permission bits */
		if (!e && exists && fchmod(o->fd, st.st_mode & 07777)) e = errno;
	}
	if (e) {
		int rc = fail(o, e, err);
		outfile_abort(o);
		return rc;
	}
	return 0;
}

FILE *outfile_text(struct outfile *o)
{
	if (!o->text && o->fd >= 0) o->text = open_memstream(&o->buf, &o->len);
	return o->text;
}

int outfile_write(struct outfile *o, const void *p, size_t n, char *err)
{
	const char *b = p;
	if (o->failed_errno) return fail(o, o->failed_errno, err);
	if (o->fd < 0) return fail(o, EBADF, err);
	while (n > 0) {
		ssize_t k = write(o->fd, b, n > (size_t)1 << 30 ? (size_t)1 << 30 : n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return fail(o, k < 0 ? errno : EIO, err);
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int outfile_copy(struct outfile *o, const char *src, char *err)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return errf(err, "%s: %s", src, strerror(errno));
	char buf[65536];
	int rc = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR) continue;
		if (k < 0) { rc = errf(err, "%s: %s", src, strerror(errno)); break; }
		if (k == 0 || (rc = outfile_write(o, buf, (size_t)k, err))) break;
	}
	close(fd);
	return rc;
}

static void release(struct outfile *o)
{
	if (o->text) fclose(o->text);
	if (o->fd >= 0) close(o->fd);
	free(o->buf);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

int outfile_commit(struct outfile *o, char *err)
{
	int rc = 0;
	if (o->text) {
		int bad = fflush(o->text) || ferror(o->text);
		if (bad) rc = fail(o, ENOMEM, err);
		else rc = outfile_write(o, o->buf, o->len, err);
	}
	if (!rc && o->failed_errno) rc = fail(o, o->failed_errno, err);
	if (!rc && o->tmp && fsync(o->fd)) rc = fail(o, errno, err);
	if (o->fd >= 0) {
		int c = close(o->fd);
		o->fd = -1;
		if (!rc && c) rc = fail(o, errno, err);
	}
	if (!rc && o->tmp) {
		if (rename(o->tmp, o->path)) {
			rc = fail(o, errno, err);
		} else {
			free(o->tmp);
			o->tmp = NULL;
			char *dir = dir_of(o->path);
			if (!dir || fsync_dir(dir)) rc = fail(o, dir ? errno : ENOMEM, err);
			free(dir);
		}
	}
	outfile_abort(o);
	return rc;
}

int outfile_put(const char *path, const void *data, size_t n, char *err)
{
	struct outfile o;
	if (outfile_open(&o, path, err)) return -1;
	if (outfile_write(&o, data, n, err)) {
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o, err);
}

void outfile_abort(struct outfile *o)
{
	if (o->fd >= 0) { close(o->fd); o->fd = -1; }
	if (o->tmp) unlink(o->tmp);
	release(o);
}
