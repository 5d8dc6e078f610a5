/* spawn — starts a command as a process group of its own, captures its stdout and stderr in
 * temporary files, and ends the whole group (SIGTERM, then SIGKILL) when it outlives its
 * timeout; used by `tune --bench-top` to run `scaleplan run` under mpirun. Only cli/ starts
 * processes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "sim/util.h"

static int temp_file(char *path, size_t cap)
{
	const char *dir = getenv("TMPDIR");
	snprintf(path, cap, "%s/scaleplan-bench-XXXXXX", dir && *dir ? dir : "/tmp");
	return mkstemp(path);
}

static void nap(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

/* waits for pid until timeout_s (0: none); ends its group then. Returns the wait status. */
static int wait_for(pid_t pid, const struct spawn_opts *o, struct spawn_result *r)
{
	double t0 = now_s(), next_tick = t0 + 1;
	int st = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR)) break;
		double now = now_s();
		if (o->tick && now >= next_tick) { o->tick(o->tick_ctx, now - t0); next_tick = now + 1; }
		if (o->timeout_s > 0 && now - t0 > o->timeout_s && !r->timed_out) {
			r->timed_out = 1;
			kill(-pid, SIGTERM);
			double grace = now_s() + 3;
			while (waitpid(pid, &st, WNOHANG) == 0 && now_s() < grace) nap(0.05);
			kill(-pid, SIGKILL); /* whatever of the group is left */
			waitpid(pid, &st, 0);
			break;
		}
		nap(0.05);
	}
	r->wall_s = now_s() - t0;
	return st;
}

int cli_spawn(char *const argv[], const struct spawn_opts *o, struct spawn_result *r, char *err)
{
	memset(r, 0, sizeof(*r));
	char out_path[512], err_path[512];
	int fo = temp_file(out_path, sizeof(out_path)), fe = fo >= 0 ? temp_file(err_path, sizeof(err_path)) : -1;
	if (fo < 0 || fe < 0) {
		if (fo >= 0) { close(fo); unlink(out_path); }
		return errf(err, "cannot create a temporary file for the output of %s", argv[0]);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fo); close(fe); unlink(out_path); unlink(err_path);
		return errf(err, "cannot start %s (fork failed)", argv[0]);
	}
	if (pid == 0) {
		setpgid(0, 0); /* a group of its own: the timeout ends mpirun and every rank */
		dup2(fo, 1);
		dup2(fe, 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0) dup2(devnull, 0);
		execvp(argv[0], argv);
		cli_error("", "cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(fo);
	close(fe);
	int st = wait_for(pid, o, r);
	if (WIFEXITED(st)) r->exit_code = WEXITSTATUS(st);
	else if (WIFSIGNALED(st)) r->signal = WTERMSIG(st);
	char e2[ERR_LEN];
	r->out = read_file(out_path, 64 << 20, e2);
	r->errtext = read_file(err_path, 64 << 20, e2);
	unlink(out_path);
	unlink(err_path);
	if (!r->out || !r->errtext) {
		spawn_result_free(r);
		return errf(err, "cannot read the output of %s: %s", argv[0], e2);
	}
	return 0;
}

void spawn_result_free(struct spawn_result *r)
{
	free(r->out);
	free(r->errtext);
	r->out = r->errtext = NULL;
}
