/* blas_arch — make sure OpenBLAS runs the GEMM kernels this CPU can run.
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's libopenblas0) picks its kernels from the CPU's
 * family and model number when the library loads. A model number the release does not know
 * (a new Xeon under a hypervisor that names it "Intel(R) Xeon(R) Processor") falls back to
 * Prescott, SSE3 kernels: on an AVX-512 Xeon sgemm then runs at 27 GFLOP/s on 2 cores
 * instead of 204 (SkylakeX kernels) or 263 (Cooperlake), measured on this project's CI VM with
 * OpenBLAS 0.3.21. OpenBLAS reads OPENBLAS_CORETYPE in its load-time constructor only, so the
 * fix is to set it from the CPU's feature flags and execute the program again, once, before
 * anything else ran. This file says whether that is needed and with which value; the program
 * (cli/reexec.c) sets the variable and executes itself. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu.h"

const char *blas_core_for(int avx2_fma, int avx512, int avx512_bf16)
{
	if (avx512 && avx512_bf16) return "Cooperlake";
	if (avx512) return "SkylakeX";
	if (avx2_fma) return "Haswell";
	return NULL;
}

int blas_core_has_avx2(const char *core)
{
	static const char *const avx2[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"};
	if (!core) return 0;
	for (size_t i = 0; i < sizeof(avx2) / sizeof(avx2[0]); i++)
		if (!strcmp(core, avx2[i])) return 1;
	return 0;
}

const char *blas_core_wanted(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	int bf16 = __builtin_cpu_supports("avx512bf16");
	return blas_core_for(avx2, avx512, bf16);
#else
	return NULL;
#endif
}

const char *blas_arch_reexec_core(void)
{
	if (getenv("OPENBLAS_CORETYPE")) return NULL; /* chosen by the user, or by our first run */
	const char *want = blas_core_wanted();
	if (!want || blas_core_has_avx2(openblas_get_corename())) return NULL;
	return want;
}
