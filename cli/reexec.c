/* reexec — the one place the program executes itself again: when OpenBLAS chose kernels
 * below what this CPU runs (kernels/blas_arch.c says which core type to ask for), set
 * OPENBLAS_CORETYPE and execute /proc/self/exe with the same arguments, once, before anything
 * else ran (OpenBLAS reads the variable only when it loads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "kernels/cpu.h"

/* this process's argv as the kernel holds it (NUL-separated in /proc/self/cmdline), in one
 * malloc'd block: the pointer array, then the strings; NULL when it cannot be read */
static char **self_argv(void)
{
	FILE *f = fopen("/proc/self/cmdline", "rb");
	if (!f) return NULL;
	char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf), f);
	int whole = feof(f);
	fclose(f);
	if (!n || !whole) return NULL; /* empty, or longer than we copy */
	if (buf[n - 1]) return NULL;
	size_t argc = 0;
	for (size_t i = 0; i < n; i++) argc += !buf[i];
	char **argv = malloc((argc + 1) * sizeof(*argv) + n);
	if (!argv) return NULL;
	char *s = (char *)(argv + argc + 1);
	memcpy(s, buf, n);
	for (size_t i = 0, a = 0; a < argc; a++) {
		argv[a] = s + i;
		i += strlen(s + i) + 1;
	}
	argv[argc] = NULL;
	return argv;
}

void cli_blas_reexec(void)
{
	const char *want = blas_arch_reexec_core();
	if (!want) return;
	char **argv = self_argv();
	if (!argv || setenv("OPENBLAS_CORETYPE", want, 1)) { free(argv); return; }
	execv("/proc/self/exe", argv);
	free(argv); /* exec failed: keep running on the kernels OpenBLAS chose */
}
