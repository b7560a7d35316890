# nanoprobe: the two set-up commands are `make demo` and `make check`.
# Both install what is missing (Debian packages), build, and run.

BUILD    ?= build
PREFIX   ?= /usr/local
MESON    ?= meson
DEB_PKGS := meson ninja-build gcc g++ pkg-config binutils python3 libbpf-dev \
            xz-utils libzydis-dev libelf-dev libdw-dev \
            coreutils grep gzip sqlite3
# the command as a Unix citizen (issue 21): its man page is made with scdoc
# and read with man; its tests validate -j against the JSON Schema and load
# the completion scripts in bash and zsh
DEB_PKGS += scdoc man-db groff-base python3-jsonschema bash-completion zsh
# docs/cli.md's commands, which cli-docs runs, list libc's functions from its
# separate debug file and count its local ifunc implementations (__strcmp_avx2)
DEB_PKGS += libc6-dbg
# nanoprobe run's differential suite runs bpftrace itself (tests/cli/test_scripts.py)
DEB_PKGS += bpftrace
# <sys/sdt.h>: the USDT probes of the program tests/cli/test_usdt.py traces
DEB_PKGS += systemtap-sdt-dev
# a busy server for -p sessions (tests/cli/test_busy_server.py)
DEB_PKGS += redis-server redis-tools
# the differential corpus (tests/reliability/corpus.py): dpkg-source unpacks
# Debian's lua5.4 and sqlite3 source packages, tclsh generates SQLite's
# amalgamation
DEB_PKGS += dpkg-dev tcl
# C++ exceptions through return probes under LLVM's unwinder (e2e-unwind-llvm)
DEB_PKGS += clang-14 libc++-14-dev libc++abi-14-dev libunwind-14-dev
# arm64: objdump checks the unit vectors; gcc cross-builds what qemu runs
DEB_PKGS += binutils-aarch64-linux-gnu gcc-aarch64-linux-gnu qemu-user
# riscv64 (issue 7): cross binutils/gcc for the unit vectors and the analyze
# fixture, the Debian cross libcs that analyze is checked on.
DEB_PKGS += binutils-riscv64-linux-gnu gcc-riscv64-linux-gnu libc6-riscv64-cross \
            libc6-arm64-cross
# riscv64 cross build of the engine: bookworm has no riscv64 binary packages,
# so cross/riscv64-sysroot.sh unpacks libelf, libdw, Zydis and their glibc
# from a later Debian release into cross/sysroot/riscv64 (make deps)
DEB_PKGS += g++-riscv64-linux-gnu debian-archive-keyring
# arm64 cross build of the engine (Debian multiarch: make deps adds arm64)
DEB_PKGS += g++-aarch64-linux-gnu libelf-dev:arm64 libdw-dev:arm64 libzydis-dev:arm64
BUILD_ARM64 ?= $(BUILD)-arm64
CROSS_ARM64 := cross/aarch64-linux-gnu.ini
# the cross-built suites that run under qemu-aarch64 (no ptrace there: not
# the CLI's; no hardware breakpoints either: e2e-watch runs its bad-input
# cases only); see docs/arm64.md
ARM64_TESTS ?= e2e-asm-suite e2e-retprobe e2e-retprobe-pac e2e-storms e2e-torture e2e-ctx \
                e2e-regs e2e-bti e2e-api e2e-api-nopie e2e-sigchain e2e-watch e2e-many \
                e2e-agent-heap e2e-farjump core-detach-nomem e2e-ipara e2e-ipa-callers \
                e2e-unwind-shared e2e-unwind-static e2e-unwind-static-stripped e2e-unwind-dlopen e2e-fork e2e-quiet e2e-churn \
                core-reclaim core-clock host-tramp-bytes
# the differential runs on arm64 (docs/reliability.md): Debian's arm64
# builds of the packages, unpacked under $(BUILD_ARM64)/debroot, never
# installed; the programs run from them.
ARM64_DIFF_DEBS ?= coreutils grep gzip sqlite3 python3-minimal python3.11-minimal libpython3.11-stdlib
ARM64_DIFF_PROGS ?= sort sha256sum grep gzip python3 sqlite3
ARM64_DIFF_SCALE ?= 0.2
# the cross ISAs' differential and corpus are the longest part of make
# check: each run takes a random sample of their programs (the pick and
# the seed that repeats it are printed; 0 runs them all)
ARM64_DIFF_SAMPLE ?= 3
ARM64_CORPUS_SAMPLE ?= 2
# the corpus under qemu-aarch64 (docs/reliability.md): both levels of Lua,
# SQLite at -O2 (riscv64 takes -O3 -flto), smaller workloads
CORPUS_DIR ?= $(abspath $(BUILD))/corpus
ARM64_CORPUS_PROGS ?= lua-O2 lua-O3-lto sqlite3-O2
ARM64_CORPUS_SCALE ?= 0.05
ARM64_CORPUS_LUA ?= strings tables functions compile gc
BUILD_RISCV64 ?= $(BUILD)-riscv64
RV_SYSROOT := cross/sysroot/riscv64
CROSS_RISCV64 := $(RV_SYSROOT).ini cross/riscv64-linux-gnu.ini
# the suites that run under qemu-riscv64 (as for arm64: no ptrace there,
# no hardware breakpoints: e2e-watch runs its bad-input cases only)
RISCV64_TESTS ?= e2e-asm-suite e2e-retprobe e2e-storms e2e-ctx \
                  e2e-sigchain e2e-watch e2e-many e2e-agent-heap e2e-trapback e2e-sigframe \
                  e2e-regs e2e-torture-short e2e-torture core-detach-nomem e2e-ipara e2e-ipa-callers \
                  e2e-unwind-shared e2e-unwind-static e2e-unwind-static-stripped e2e-unwind-dlopen e2e-fork e2e-quiet e2e-churn \
                  core-reclaim core-clock host-tramp-bytes
# the differential runs on riscv64 (docs/reliability.md): Debian's riscv64
# builds from a later release (bookworm has none), unpacked with their libc
# and the agent's libelf by cross/riscv64-sysroot.sh into a root of their
# own under $(BUILD_RISCV64), never installed; qemu-riscv64 -L runs them.
RISCV64_DIFF_DEBS ?= coreutils grep gzip sqlite3 libelf1t64 libatomic1 python3-minimal libpython3-stdlib
# python3 left out for now: python3.13 under qemu-riscv64 does ~0.1%
# different work under AUTO than under TRAP (docs/reliability.md, "Return
# probes in the differential under qemu"); x86-64 and arm64 run python3
RISCV64_DIFF_PROGS ?= sort sha256sum grep gzip sqlite3
RISCV64_DIFF_SCALE ?= 0.2
RISCV64_DIFF_SAMPLE ?= 3
RISCV64_CORPUS_SAMPLE ?= 2
RISCV64_CORPUS_PROGS ?= lua-O2 lua-O3-lto sqlite3-O3-lto
RISCV64_CORPUS_SCALE ?= 0.05
RISCV64_CORPUS_LUA ?= strings tables functions compile gc
ifeq ($(ARCH),arm64)
INSTALL_CROSS := --cross-file $(CROSS_ARM64)
endif
ifeq ($(ARCH),riscv64)
INSTALL_CROSS := $(foreach f,$(CROSS_RISCV64),--cross-file $(f))
endif

.PHONY: all deps build check check-native check-cross check-arm64 check-arm64-differential check-riscv64 \
        check-riscv64-differential riscv64-build check-sanitize demo bench install clean

all: build

# Install only what is missing; apt-get update once, only when needed.
deps:
	@dpkg --print-foreign-architectures | grep -qx arm64 || \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) dpkg --add-architecture arm64
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@sh cross/riscv64-sysroot.sh $(abspath $(RV_SYSROOT))
# bpftrace, which cli-scripts compares nanoprobe run with, needs tracefs: a
# fresh machine may not have it mounted
	@[ "$$(id -u)" != 0 ] || [ -d /sys/kernel/tracing/events ] || \
	  mount -t tracefs nodev /sys/kernel/tracing || \
	  echo "deps: tracefs not mounted: cli-scripts will not compare with bpftrace"

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The host's suites and the cross ISAs' (arm64, then riscv64) run side by
# side, one job each: the tests run one at a time within each (they patch
# live code), and a suite alone leaves the other core idle. Each job's
# output is printed whole when it ends; both run to the end.
check: build
	@echo "make check: the native suites and the arm64/riscv64 ones side by side;" \
	  "each prints its output when it ends"
	$(MAKE) --no-print-directory -k -j2 --output-sync=recurse check-native check-cross

check-native: build
	$(MESON) test -C $(BUILD) --no-rebuild --print-errorlogs --num-processes 1 \
	  --timeout-multiplier 3; \
	  status=$$?; python3 tools/test-summary.py $(BUILD)/meson-logs/testlog.json; exit $$status

check-cross: build
	$(MAKE) --no-print-directory check-arm64 || status=1; \
	  $(MAKE) --no-print-directory check-riscv64 || status=1; exit $${status:-0}

# The engine cross-built for arm64, its e2e suites run under qemu-aarch64
# (the cross file's exe_wrapper); then the differential runs of Debian's
# arm64 programs, driven by the host's command with the arm64 agent.
check-arm64: build
	[ -f $(BUILD_ARM64)/build.ninja ] || $(MESON) setup $(BUILD_ARM64) --cross-file $(CROSS_ARM64)
	ninja -C $(BUILD_ARM64)
	$(MESON) test -C $(BUILD_ARM64) --print-errorlogs --num-processes 1 --timeout-multiplier 3 \
	  $(ARM64_TESTS); status=$$?; \
	  python3 tools/test-summary.py $(BUILD_ARM64)/meson-logs/testlog.json; \
	  $(MAKE) --no-print-directory check-arm64-differential || status=1; exit $$status

check-arm64-differential: build
	python3 tests/reliability/debroot.py arm64 $(BUILD_ARM64)/debroot $(ARM64_DIFF_DEBS)
	NP_DIFF_ISA=arm64 NP_DIFF_ROOT=$(abspath $(BUILD_ARM64))/debroot/root \
	  NP_DIFF_AGENT=$(abspath $(BUILD_ARM64))/src/agent/libnanoprobe-agent.so \
	  NP_CLI=$(abspath $(BUILD))/tools/nanoprobe/nanoprobe NP_DIFF_SCALE=$(ARM64_DIFF_SCALE) \
	  NP_DIFF_SAMPLE=$(ARM64_DIFF_SAMPLE) \
	  python3 tests/reliability/differential.py $(ARM64_DIFF_PROGS); status=$$?; \
	NP_DIFF_ISA=arm64 NP_DIFF_ROOT=$(abspath $(BUILD_ARM64))/debroot/root \
	  NP_DIFF_AGENT=$(abspath $(BUILD_ARM64))/src/agent/libnanoprobe-agent.so \
	  NP_CLI=$(abspath $(BUILD))/tools/nanoprobe/nanoprobe NP_CORPUS_DIR=$(CORPUS_DIR) \
	  NP_CORPUS_SCALE=$(ARM64_CORPUS_SCALE) NP_CORPUS_LUA='$(ARM64_CORPUS_LUA)' \
	  NP_CORPUS_SAMPLE=$(ARM64_CORPUS_SAMPLE) \
	  python3 tests/reliability/corpus.py $(ARM64_CORPUS_PROGS) || status=1; exit $$status

# The engine cross-built for riscv64 against the sysroot, its e2e suites run
# under qemu-riscv64 (docs/riscv64.md); then the differential runs of
# Debian's riscv64 programs, driven by the host's command with the riscv64
# agent.
riscv64-build: deps
	[ -f $(BUILD_RISCV64)/build.ninja ] || \
	  $(MESON) setup $(BUILD_RISCV64) $(foreach f,$(CROSS_RISCV64),--cross-file $(f))
	ninja -C $(BUILD_RISCV64)

check-riscv64: riscv64-build
	$(MESON) test -C $(BUILD_RISCV64) --print-errorlogs --num-processes 1 --timeout-multiplier 3 \
	  $(RISCV64_TESTS); status=$$?; \
	  python3 tools/test-summary.py $(BUILD_RISCV64)/meson-logs/testlog.json; \
	  $(MAKE) --no-print-directory check-riscv64-differential || status=1; exit $$status

check-riscv64-differential: build riscv64-build
	sh cross/riscv64-sysroot.sh $(abspath $(BUILD_RISCV64))/debroot $(RISCV64_DIFF_DEBS)
	NP_DIFF_ISA=riscv64 NP_DIFF_ROOT=$(abspath $(BUILD_RISCV64))/debroot \
	  NP_DIFF_AGENT=$(abspath $(BUILD_RISCV64))/src/agent/libnanoprobe-agent.so \
	  NP_CLI=$(abspath $(BUILD))/tools/nanoprobe/nanoprobe NP_DIFF_SCALE=$(RISCV64_DIFF_SCALE) \
	  NP_DIFF_SAMPLE=$(RISCV64_DIFF_SAMPLE) \
	  python3 tests/reliability/differential.py $(RISCV64_DIFF_PROGS); status=$$?; \
	NP_DIFF_ISA=riscv64 NP_DIFF_ROOT=$(abspath $(RV_SYSROOT)) \
	  NP_DIFF_AGENT=$(abspath $(BUILD_RISCV64))/src/agent/libnanoprobe-agent.so \
	  NP_CLI=$(abspath $(BUILD))/tools/nanoprobe/nanoprobe NP_CORPUS_DIR=$(CORPUS_DIR) \
	  NP_CORPUS_SCALE=$(RISCV64_CORPUS_SCALE) NP_CORPUS_LUA='$(RISCV64_CORPUS_LUA)' \
	  NP_CORPUS_SAMPLE=$(RISCV64_CORPUS_SAMPLE) \
	  python3 tests/reliability/corpus.py $(RISCV64_CORPUS_PROGS) || status=1; exit $$status

# The suite under ASan+UBSan, built by gcc and by clang (clang's build also
# runs the libFuzzer harnesses for a bounded number of executions); the
# 'sanitize' test setup (meson.build) says which suites it leaves out.
SAN_OPTS := -Db_sanitize=address,undefined -Db_lundef=false
check-sanitize: deps
	@dpkg-query -W -f='$${Status}' clang 2>/dev/null | grep -q 'ok installed' || \
	  { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang; }
	[ -f $(BUILD)-asan-gcc/build.ninja ] || CC=gcc CXX=g++ $(MESON) setup $(BUILD)-asan-gcc $(SAN_OPTS)
	[ -f $(BUILD)-asan-clang/build.ninja ] || CC=clang CXX=clang++ $(MESON) setup $(BUILD)-asan-clang $(SAN_OPTS)
	ninja -C $(BUILD)-asan-gcc && ninja -C $(BUILD)-asan-clang
	status=0; for b in $(BUILD)-asan-gcc $(BUILD)-asan-clang; do \
	  $(MESON) test -C $$b --setup sanitize --print-errorlogs --num-processes 1 || status=1; \
	  python3 tools/test-summary.py $$b/meson-logs/testlog-sanitize.json; done; exit $$status

demo: build
	sh examples/demo.sh $(BUILD)
	@printf '\n== 6. The same engine as a C library, linked into a program (examples/demo.c)\n'
	$(BUILD)/examples/demo

# np-bench: the engine's strategies side by side; nanoprobe bench: against
# the kernel's uprobes (as root), attach cost and real programs, then the
# tables and chart of docs/performance.md from its JSON.
bench: build
	$(BUILD)/bench/np-bench
	$(BUILD)/tools/nanoprobe/nanoprobe bench -j > $(BUILD)/bench.json
	python3 bench/report $(BUILD)/bench.json -o $(BUILD)/bench-chart.svg

install: deps
	rm -rf $(BUILD)-install
	$(MESON) setup $(BUILD)-install $(INSTALL_CROSS) --prefix=$(abspath $(PREFIX)) --libdir=lib \
	  --buildtype=release -Dtests=false
	ninja -C $(BUILD)-install
	$(MESON) install -C $(BUILD)-install --quiet

clean:
	rm -rf $(BUILD) $(BUILD)-install $(BUILD)-asan-gcc $(BUILD)-asan-clang $(BUILD_ARM64) \
	  $(BUILD_RISCV64)
