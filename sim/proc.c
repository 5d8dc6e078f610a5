/* proc — process identity from /proc. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "sim/proc.h"
#include "sim/util.h"

/* field 22 (starttime) of /proc/PID/stat; the comm field (2) may hold spaces and parentheses,
 * so fields are counted after its last ')' */
static int start_ticks(long pid, unsigned long long *ticks)
{
	char path[64], err[ERR_LEN];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	char *text = read_file(path, 8192, err);
	if (!text) return -1;
	char *p = strrchr(text, ')');
	int field = 2, rc = -1;
	char *save = NULL;
	for (char *tok = p ? strtok_r(p + 1, " ", &save) : NULL; tok; tok = strtok_r(NULL, " ", &save))
		if (++field == 22) {
			*ticks = strtoull(tok, NULL, 10);
			rc = 0;
			break;
		}
	free(text);
	return rc;
}

int proc_identity(long pid, char *buf, size_t cap)
{
	buf[0] = 0;
	if (pid <= 0 || (kill((pid_t)pid, 0) && errno == ESRCH)) return -1;
	unsigned long long ticks;
	char err[ERR_LEN], *boot = read_file("/proc/sys/kernel/random/boot_id", 64, err);
	if (boot && start_ticks(pid, &ticks) == 0) {
		boot[strcspn(boot, "\n")] = 0;
		snprintf(buf, cap, "%s/%llu", boot, ticks);
	}
	free(boot);
	return 0;
}

int proc_alive(long pid, const char *identity)
{
	char now[128];
	if (proc_identity(pid, now, sizeof(now))) return 0;
	return !identity || !identity[0] || !now[0] || !strcmp(now, identity);
}
