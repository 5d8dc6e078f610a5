/* outfile — writing an output file so that it appears whole or not at all. Everything
 * scaleplan writes for the user (charts, reports, traces, weight dumps, checkpoints) goes
 * through here: the bytes go to a temporary file beside the destination (".NAME.XXXXXX" in
 * the same directory, so the final rename stays on one file system), which is fsync'd and
 * renamed over the destination only when every write succeeded; the directory is fsync'd
 * after the rename. On any failure the temporary file is removed and the message carries the
 * destination and the OS reason ("out.svg: No space left on device").
 *
 * Text goes through outfile_text() (a memory stream: its bytes reach the disk at commit, by
 * write(2), so the first failing write's errno is the one reported); binary data through
 * outfile_write() (straight to the file). One outfile uses one of the two, not both.
 * A destination that exists and is not a regular file (a FIFO, /dev/stdout) is written in
 * place; a symbolic link is followed, and the file it points to is replaced; a replaced file
 * keeps its permission bits (a new one gets 0666 less the umask). The directory must be
 * writable, since the temporary file is created there.
 *
 * Ownership: struct outfile is caller-owned; outfile_abort() is safe after a failed
 * outfile_open(), after outfile_commit() and twice. Invariant: after commit or abort no
 * temporary file is left behind. */
#ifndef SCALEPLAN_OUTFILE_H
#define SCALEPLAN_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct outfile {
	char *path;      /* destination (a symbolic link resolved) */
	char *tmp;       /* temporary file beside it; NULL when written in place */
	int fd;
	FILE *text;      /* memory stream, created on first outfile_text() */
	char *buf;
	size_t len;
	int failed_errno;
};

/* Creates the temporary file. 0, or -1 with err ("PATH: Permission denied"). */
int outfile_open(struct outfile *o, const char *path, char *err);
/* The text stream (NULL only when out of memory; commit then fails). */
FILE *outfile_text(struct outfile *o);
/* Writes n bytes now. 0, or -1 with err naming the destination and the OS reason. */
int outfile_write(struct outfile *o, const void *p, size_t n, char *err);
/* Appends the whole file src (e.g. what a child process wrote elsewhere). 0 or -1 with err. */
int outfile_copy(struct outfile *o, const char *src, char *err);
/* Flushes, fsyncs, renames over the destination, fsyncs the directory. 0, or -1 with err;
 * either way the outfile is closed. */
int outfile_commit(struct outfile *o, char *err);
/* Closes and removes the temporary file; the destination is left as it was. */
void outfile_abort(struct outfile *o);

/* The whole of data (n bytes) as the file at path: open, write, commit. 0 or -1 with err. */
int outfile_put(const char *path, const void *data, size_t n, char *err);

/* fsync of a directory (after a rename or unlink in it); 0 or -1 with errno set. */
int fsync_dir(const char *dir);

#endif
