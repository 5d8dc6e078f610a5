# scaleplan — one Makefile for the CPU build, the optional CUDA objects, tests and benchmarks.
#
#   make            build ./scaleplan (CPU; CUDA objects too when nvcc exists)
#   make test       build and run the whole test suite (ends with "N passed, N failed")
#   make asan       the same tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      benchmarks, one line per figure: "bench <name> <value> <unit>"; then bench-loop
#   make bench-loop profile -> run 3 plans -> calibrate -> predict 12 others, tune --bench-top 4
#                   (CPU ranks under mpirun; minutes)
#   make fuzz       libFuzzer harnesses (tests/fuzz, clang) on the plan, config, GPU profile,
#                   validation, trace and framework-profile parsers, SECONDS=N each (default 60)
#   make check      install Debian packages, then test, asan and a short fuzz pass (.ci/run)
#   make clean
#
# V=1 shows full command lines. SAN=1 builds the sanitized tree into build-asan/.

# NOMPI=1: a one-rank build with plain gcc, the one-rank communicator (runtime/comm_self.c)
# in place of runtime/comm_mpi.c, into build-nompi/ (binary build-nompi/scaleplan), for
# machines without MPI
ifeq ($(origin CC),default)
CC = $(if $(filter 1,$(NOMPI)),gcc,mpicc)
endif
NVCC ?= nvcc

ifeq ($(SAN),1)
B := build-asan
# float-cast-overflow is not part of `undefined`: a double from input cast to an integer type
# out of range (1e19 -> int) is undefined behaviour it alone catches
SANFLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow
OPT := -O1
else
B := build
SANFLAGS :=
OPT := -O2
endif

ifeq ($(NOMPI),1)
B := $(B)-nompi
NOMPI_DEFS := -DSCALEPLAN_NOMPI
NOMPI_OUT := runtime/comm_mpi.c
endif

# CUDA=1: the binary links the CUDA rows of build/libscaleplan_cuda.a (kern_cuda_ops, bf16, of
# kernels/backend_cuda_bf16.cu; kern_cuda_fp32_ops of kernels/backend_cuda.cu; profile_cuda of
# runtime/profile_cuda.cu), so that `run --backend cuda|cuda-fp32` and `profile --backend cuda`
# exist; objects, tests and binary go to $(B)-cuda/ (binary $(B)-cuda/scaleplan). Without it
# the rows' weak references stay NULL. The layer libraries listed again after the CUDA one
# serve its objects' calls into them (the NCCL communicator's), BLAS and libm last.
ifeq ($(CUDA),1)
B := $(B)-cuda
CUDA_BIN_LIBS = -Wl,--undefined=kern_cuda_ops -Wl,--undefined=kern_cuda_fp32_ops -Wl,--undefined=profile_cuda build/libscaleplan_cuda.a \
	$(B)/libruntime.a $(B)/libkernels.a $(B)/libsim.a $(CUDA_LDFLAGS) \
	-L/usr/local/cuda/lib64 -lcudart -lcublasLt -lcublas -lcudnn -lnccl -lstdc++ -lopenblas -lm
endif

WARN := -Wall -Wextra -Wpedantic -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wshadow
CFLAGS ?= $(OPT) -g
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) $(NOMPI_DEFS) -I. -Ibuild/gen -MMD -MP
LDLIBS := -lcjson -lsqlite3 -lglpk -lgsl -lopenblas -lm -lpthread
LDFLAGS += $(SANFLAGS)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# One static library per layer, linked highest first, so a call from a lower layer to a higher
# one is an undefined symbol (tests/cli/layers.sh checks the #includes and the symbols):
#   cli -> tuner -> runtime -> reports -> kernels -> sim
.DEFAULT_GOAL := all
LAYERS := cli tuner runtime reports kernels sim
layer_src = $(filter-out cli/main.c $(NOMPI_OUT),$(wildcard $(1)/*.c))
LAYER_LIBS := $(foreach l,$(LAYERS),$(B)/lib$(l).a)
$(foreach l,$(LAYERS),$(eval $(B)/lib$(l).a: $(patsubst %.c,$(B)/%.o,$(call layer_src,$(l)))))
$(B)/libsim.a: $(B)/gen/embedded.o
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
# multi-rank programs, started by tests/cli/*.sh under mpirun (not run bare by tests/run.sh)
MPI_TEST_BIN := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/mpi/*.c))
# LD_PRELOAD shim that fails one write or rename (tests/cli/failio.sh); never sanitized, so it
# loads into any build
FAILIO := $(B)/tests/libfailio.so
BENCH_SRC := $(wildcard bench/*.c)
PROFILES := $(sort $(wildcard profiles/hw/*.json profiles/stack/*.json profiles/models/*.json profiles/frameworks/*.json profiles/comm/*.json))

ifneq ($(filter 1,$(SAN) $(NOMPI)),)
BIN := $(B)/scaleplan
else
BIN := scaleplan
endif
ifeq ($(CUDA),1)
BIN := $(B)/scaleplan
LDLIBS += $(CUDA_BIN_LIBS)
$(BIN) $(TEST_BIN) $(MPI_TEST_BIN): build/libscaleplan_cuda.a
endif

CUDA_SRC := $(wildcard kernels/*.cu runtime/*.cu)
HAVE_NVCC := $(shell command -v $(NVCC) >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_NVCC)$(if $(CUDA_SRC),1),11)
CUDA_LIB := build/libscaleplan_cuda.a
endif

.PHONY: all test asan bench bench-comm bench-loop check clean cuda deps fuzz fuzz-build gpu-build gpu-test validate
all: $(BIN) $(TEST_BIN) $(if $(NOMPI_DEFS),,$(MPI_TEST_BIN)) $(FAILIO) $(if $(SAN),,$(CUDA_LIB))

$(BIN): $(B)/cli/main.o $(LAYER_LIBS)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/lib%.a:
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Profiles are compiled into the binary so a fresh build needs no install step.
$(B)/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O1 -o $@ $<
$(B)/gen/embedded.c: $(B)/tools/embed $(PROFILES)
	@mkdir -p $(dir $@)
	@echo "  EMBED   profiles"
	$(Q)$(B)/tools/embed $(PROFILES) > $@
$(B)/gen/embedded.o: $(B)/gen/embedded.c
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-overlength-strings -c -o $@ $<

$(B)/tests/%: tests/%.c $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LAYER_LIBS) $(LDLIBS)

$(FAILIO): tests/faults/failio.c
	@mkdir -p $(dir $@)
	@echo "  SHIM    $@"
	$(Q)gcc -std=c11 -O1 -Wall -Wextra -shared -fPIC -o $@ $< -ldl

$(B)/bench/bench: $(BENCH_SRC) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(BENCH_SRC) $(LAYER_LIBS) $(LDLIBS)

# --- CUDA. Every .cu is compiled whenever nvcc exists, even on machines without a GPU, so a
# broken kernel fails the build here; objects carry sm_90 (H100/H200) and sm_80 (A100) code.
# CUDA_INC / CUDA_LDFLAGS add -I / -L for headers and libraries outside the toolkit (cuDNN and
# NCCL installed as Python wheels). `make gpu-test` needs a GPU: it builds and runs the checks
# of every CUDA kernel against its CPU reference, then the attention benchmark. The GPU
# programs link only the CUDA objects they test and the reference kernels of kernels/cpu.h,
# compiled here with GPU_CC (a plain C compiler: no MPI, no host libraries but OpenBLAS's cblas,
# which linear.c and attention.c call, hence -lopenblas).
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80
CUDA_INC ?=
CUDA_LDFLAGS ?=
GPU_CC ?= cc
NVCC_FLAGS := -std=c++17 $(CUDA_ARCH) -I. $(CUDA_INC) -Xcompiler -Wall,-Wextra -MMD -MP
GPU_REF_SRC := kernels/attention.c kernels/linear.c kernels/loss.c kernels/moe.c kernels/optim.c kernels/pointwise.c
GPU_REF_OBJ := $(GPU_REF_SRC:%.c=build/gpu/ref/%.o)
GPU_BF16_OBJ := $(patsubst %.cu,build/cuda/%.o,$(wildcard kernels/cuda_bf16*.cu))
GPU_LT_OBJ := $(patsubst %.cu,build/cuda/%.o,$(wildcard kernels/cublaslt*.cu))
GPU_ATT_OBJ := $(patsubst %.cu,build/cuda/%.o,$(wildcard kernels/cudnn_attention*.cu))
GPU_LDLIBS := $(CUDA_LDFLAGS) -lopenblas -lm
GPU_TESTS := build/gpu/test_kernels_cuda build/gpu/test_bf16_cuda build/gpu/test_gemm_attention_cuda
cuda: $(CUDA_LIB)
build/cuda/%.o: %.cu
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) -O3 $(NVCC_FLAGS) -c -o $@ $<
build/libscaleplan_cuda.a: $(CUDA_SRC:%.cu=build/cuda/%.o)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^
build/gpu/ref/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (GPU reference)"
	$(Q)$(GPU_CC) -std=c11 -O2 -Wall -Wextra -I. -c -o $@ $<

build/gpu/test_kernels_cuda: tests/gpu/test_kernels_cuda.cu build/cuda/kernels/cuda_kernels.o \
		build/cuda/kernels/cuda_attention.o $(GPU_REF_OBJ)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $@"
	$(Q)$(NVCC) -O2 $(NVCC_FLAGS) -o $@ $(filter %.cu %.o,$^) -lcublas $(GPU_LDLIBS)
build/gpu/test_bf16_cuda: tests/gpu/test_bf16_cuda.cu tests/gpu/test_bf16_moe.cu $(GPU_BF16_OBJ) $(GPU_REF_OBJ)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $@"
	$(Q)$(NVCC) -O2 $(NVCC_FLAGS) -o $@ $(filter %.cu %.o,$^) $(GPU_LDLIBS)
build/gpu/test_gemm_attention_cuda: tests/gpu/test_gemm_attention_cuda.cu $(GPU_LT_OBJ) $(GPU_ATT_OBJ) \
		$(GPU_BF16_OBJ) $(GPU_REF_OBJ)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $@"
	$(Q)$(NVCC) -O2 $(NVCC_FLAGS) -o $@ $(filter %.cu %.o,$^) -lcudnn -lcublasLt $(GPU_LDLIBS)
build/gpu/bench_attention_cuda: tests/gpu/bench_attention_cuda.cu $(GPU_ATT_OBJ)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $@"
	$(Q)$(NVCC) -O2 $(NVCC_FLAGS) -o $@ $(filter %.cu %.o,$^) -lcudnn $(CUDA_LDFLAGS)
gpu-build: $(GPU_TESTS) build/gpu/bench_attention_cuda
# `make` links the GPU programs too (they need no GPU to build)
all: $(if $(SAN),,$(if $(CUDA_LIB),gpu-build))
# every check runs even after a failure; the target fails if any did
gpu-test: gpu-build
	$(Q)rc=0; for t in $(GPU_TESTS); do echo "== $$t"; $$t || rc=1; done; \
		echo "== build/gpu/bench_attention_cuda"; build/gpu/bench_attention_cuda || rc=1; exit $$rc

test: all
	$(Q)tests/run.sh $(B) $(BIN)

asan:
	$(Q)$(MAKE) --no-print-directory SAN=1 test

bench: all $(B)/bench/bench
	$(Q)$(B)/bench/bench
	$(Q)$(MAKE) --no-print-directory bench-loop

# the measure-and-learn loop on this machine's CPU ranks (bench/loop.sh says what it runs)
bench-loop: all
	$(Q)SCALEPLAN=./$(BIN) bench/loop.sh

# nccl-tests-style algbw/busbw of the MPI backend over shared memory, 2, 4 and 8 ranks
bench-comm: all
	$(Q)for n in 2 4 8; do OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --oversubscribe -np $$n $(B)/tests/mpi/bench_comm_mpi || exit 1; done

# the accuracy figures of the README: the summary of `scaleplan validate` on every measured-run
# file (shared/validation/FORMAT.md) in VALIDATION
VALIDATION ?= ../shared/validation
validate: all
	$(Q)ls $(VALIDATION)/*.tsv >/dev/null 2>&1 || { echo "make validate: no .tsv files in $(VALIDATION) (set VALIDATION=DIR)" >&2; exit 2; }
	$(Q)for f in $(VALIDATION)/*.tsv; do echo "== $$f"; out=$$(./$(BIN) validate $$f) || exit 1; \
		printf '%s\n' "$$out" | sed -n '/^rows [0-9]/,$$p'; done

# --- fuzzing: sim/ and the trace reader built by clang with libFuzzer, ASan, UBSan and
# float-cast-overflow into build-fuzz/; each harness runs SECONDS, growing its corpus in
# build-fuzz/corpus/NAME from the seeds in tests/fuzz/corpus/NAME; a finding stops the run
# (exit 1) and leaves build-fuzz/crash-NAME-* to replay with build-fuzz/fuzz_NAME FILE.
FUZZ_CC ?= clang
FZ := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 $(FUZZ_SAN) -I. -I$(FZ)/gen
FUZZERS := plan model hw validate trace framework
FUZZ_OBJ := $(patsubst %.c,$(FZ)/%.o,$(wildcard sim/*.c) reports/trace.c reports/json_out.c) $(FZ)/gen/embedded.o
SECONDS ?= 60

# the fuzz objects are kept between runs (make would delete them as intermediates)
.SECONDARY:

$(FZ)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
$(FZ)/gen/embedded.c: $(B)/tools/embed $(PROFILES)
	@mkdir -p $(dir $@)
	$(Q)$(B)/tools/embed $(PROFILES) > $@
$(FZ)/gen/embedded.o: $(FZ)/gen/embedded.c
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-overlength-strings -c -o $@ $<
$(FZ)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	@echo "  FUZZER  $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) -lcjson -lm

fuzz-build: $(FUZZERS:%=$(FZ)/fuzz_%)
fuzz: fuzz-build
	$(Q)for f in $(FUZZERS); do mkdir -p $(FZ)/corpus/$$f; echo "== fuzz_$$f ($(SECONDS) s)"; \
		$(FZ)/fuzz_$$f -max_total_time=$(SECONDS) -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
			-artifact_prefix=$(FZ)/crash-$$f- $(FZ)/corpus/$$f tests/fuzz/corpus/$$f 2>$(FZ)/fuzz_$$f.log; \
		rc=$$?; grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done)' $(FZ)/fuzz_$$f.log; \
		if [ $$rc -ne 0 ]; then grep -E -A30 'ERROR|runtime error|deadly signal|timeout' $(FZ)/fuzz_$$f.log | head -n 60; \
			echo "fuzz_$$f: FINDING (exit $$rc), see $(FZ)/fuzz_$$f.log"; exit 1; fi; done

deps:
	$(Q)scripts/install-deps.sh

check: deps
	$(Q)scripts/check.sh

clean:
	rm -rf build build-asan build-nompi build-nompi-* build-cuda build-*-cuda $(FZ) scaleplan

-include $(shell find build build-asan build-nompi $(FZ) -name '*.d' 2>/dev/null)
