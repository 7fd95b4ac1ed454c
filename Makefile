# sdm — scalable debug manager. `make demo` runs a debugging session,
# `make test` the whole test suite (what CI runs).

GO      ?= go
BIN     := bin/sdm
# Where the example programs go; the tests build them into a directory of
# their own with `make examples OUT=DIR`.
OUT     ?= bin
CFLAGS  ?= -g -O0 -Wall
# Open MPI's compiler: most examples run under its mpirun; ring, hang, pending and
# crash are also built with MPICH's, for mpiexec.
MPICC   ?= $(shell command -v mpicc.openmpi || echo mpicc)
MPICC_MPICH ?= $(shell command -v mpicc.mpich || echo mpicc)
# Fortran's compiler, for the Fortran example (make's FC is f77), and the
# MPIs' Fortran compilers, for the Fortran MPI example.
FC      := gfortran
MPIFC   ?= $(shell command -v mpif90.openmpi || echo mpif90)
MPIFC_MPICH ?= $(shell command -v mpif90.mpich || echo mpif90)
# Open MPI's C++ compiler, for the C++ example.
MPICXX  ?= $(shell command -v mpicxx.openmpi || echo mpicxx)
# The MPIR example starter, in one build per presence-only symbol.
STARTERS := $(OUT)/mpir-starter $(OUT)/mpir-starter-rank0 $(OUT)/mpir-starter-partial $(OUT)/mpir-starter-premain
STARTER_rank0   := -DRANK0
STARTER_partial := -DPARTIAL
STARTER_premain := -DPRE_MAIN
EXAMPLES := $(OUT)/plain $(OUT)/plain-nodebug $(OUT)/threads $(OUT)/values $(OUT)/flood $(OUT)/ring $(OUT)/ring-mpich $(OUT)/hang $(OUT)/hang-mpich $(OUT)/pending $(OUT)/pending-mpich $(OUT)/pending-f $(OUT)/pending-f-mpich $(OUT)/pending-f08 $(OUT)/pending-f08-mpich $(OUT)/crash $(OUT)/crash-mpich $(OUT)/fault $(OUT)/forks $(OUT)/busy $(OUT)/steps $(OUT)/domain $(OUT)/shapes $(OUT)/dlopen $(OUT)/libplugin.so \
            $(OUT)/dlopen-libs $(STARTERS)
# How many libraries examples/dlopen may load (`dlopen K`, K up to this).
DLOPEN_LIBS ?= 1000
# A static binary starts faster, which counts when a node starts hundreds.
export CGO_ENABLED := 0

.PHONY: build examples thirdparty test bench demo lint fuzz clean

# libsdmq-MPI.so, preloaded into the ranks of a job that sdm launches,
# keeps their MPI operations in flight (queues, deadlock): one build per
# MPI's mpi.h, not linked with its library (mpiq/lib/sdmq.c says why).
#
# sdm-pmix reads the ranks of a job whose launcher has no MPIR but a PMIx
# server (Open MPI 5's mpirun), linked against OpenPMIx: built where its
# headers are, and sdm runs without it elsewhere.
#
# sdm-msgq runs an MPI's own message-queue library for the ranks of a job
# that sdm attached to, with the types that library needs where libmpi
# has none (mpiq/lib/types.sh).
#
# sdm-server, the server role alone, runs beside sdm for every server of a
# job that sdm launches; sdm-rank, the lean start of a server that hands
# its rank over, for most of them when they do. sdm-rank's start is C's
# (cgo), before Go's, linked statically: its resolver is Go's (netgo),
# which a static C library's would not be, and which it never uses.
build:
	$(GO) build -o $(BIN) ./cmd/sdm
	$(GO) build -o $(dir $(BIN))sdm-server ./cmd/sdm-server
	CGO_ENABLED=1 $(GO) build -tags netgo -ldflags=-extldflags=-static -o $(dir $(BIN))sdm-rank ./cmd/sdm-rank
	@if pkg-config --exists pmix 2>/dev/null; then \
		echo "CGO_ENABLED=1 $(GO) build -o $(dir $(BIN))sdm-pmix ./cmd/sdm-pmix"; \
		CGO_ENABLED=1 $(GO) build -o $(dir $(BIN))sdm-pmix ./cmd/sdm-pmix; \
	else echo "no OpenPMIx headers (libpmix-dev): sdm-pmix, which attaches to Open MPI 5 jobs, is not built"; fi
	@for mpi in openmpi:ompi-c mpich:mpich; do \
		name=$${mpi%%:*}; pc=$${mpi#*:}; \
		if pkg-config --exists $$pc 2>/dev/null; then \
			echo "$(CC) -shared -fPIC -O2 -Wall \$$(pkg-config --cflags $$pc) -o $(dir $(BIN))libsdmq-$$name.so mpiq/lib/sdmq.c"; \
			$(CC) -shared -fPIC -O2 -Wall $$(pkg-config --cflags $$pc) -o $(dir $(BIN))libsdmq-$$name.so mpiq/lib/sdmq.c || exit 1; \
		else echo "no $$name headers ($$pc.pc): ranks of $$name run without the library that keeps their MPI operations"; fi; \
	done
	$(CC) -O2 -Wall -o $(dir $(BIN))sdm-msgq mpiq/lib/msgq.c -ldl
	@mpiq/lib/types.sh $(dir $(BIN))

examples: $(EXAMPLES)

# MPI programs nobody here wrote, from Debian's source packages, built for
# both MPIs into a cache (the tests do this themselves when they need them).
thirdparty:
	scripts/thirdparty.sh

$(OUT)/plain: examples/plain/plain.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -o $@ $<

# plain without debugging symbols, as a program built without -g is.
$(OUT)/plain-nodebug: examples/plain/plain.c
	@mkdir -p $(OUT)
	$(CC) $(filter-out -g,$(CFLAGS)) -o $@ $<

$(OUT)/threads: examples/threads/threads.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -pthread -o $@ $<

$(OUT)/values: examples/values/values.cpp
	@mkdir -p $(OUT)
	$(MPICXX) $(CFLAGS) -o $@ $<

$(OUT)/flood: examples/flood/flood.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -o $@ $<

$(OUT)/dlopen: examples/dlopen/dlopen.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -o $@ $< -ldl

$(OUT)/libplugin.so: examples/dlopen/plugin.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -shared -fPIC -o $@ $<

# One small library, copied DLOPEN_LIBS times as libgen-0000.so and on:
# copies, not links, since the dynamic linker takes two names of one file
# for one library. tee writes many copies in one process, 500 at a time
# to stay well within the open-files limit.
$(OUT)/dlopen-libs: examples/dlopen/gen.c
	@rm -rf $@ && mkdir -p $@
	$(CC) $(CFLAGS) -shared -fPIC -Wl,-z,noseparate-code -o $@/libgen.so $<
	cd $@ && seq -f 'libgen-%04g.so' 0 $$(($(DLOPEN_LIBS) - 1)) | xargs -n 500 sh -c 'tee "$$@" < libgen.so > /dev/null' tee

$(OUT)/mpir-starter: examples/mpir-starter/mpir-starter.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -pthread -o $@ $<

$(OUT)/mpir-starter-%: examples/mpir-starter/mpir-starter.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -pthread $(STARTER_$*) -o $@ $<

$(OUT)/ring: examples/ring/ring.c
	@mkdir -p $(OUT)
	$(MPICC) $(CFLAGS) -o $@ $<

$(OUT)/ring-mpich: examples/ring/ring.c
	@mkdir -p $(OUT)
	$(MPICC_MPICH) $(CFLAGS) -o $@ $<

$(OUT)/hang: examples/hang/hang.c
	@mkdir -p $(OUT)
	$(MPICC) $(CFLAGS) -o $@ $<

$(OUT)/hang-mpich: examples/hang/hang.c
	@mkdir -p $(OUT)
	$(MPICC_MPICH) $(CFLAGS) -o $@ $<

$(OUT)/pending: examples/pending/pending.c
	@mkdir -p $(OUT)
	$(MPICC) $(CFLAGS) -o $@ $<

$(OUT)/pending-mpich: examples/pending/pending.c
	@mkdir -p $(OUT)
	$(MPICC_MPICH) $(CFLAGS) -o $@ $<

$(OUT)/pending-f: examples/pending/pending.f90
	@mkdir -p $(OUT)
	$(MPIFC) $(CFLAGS) -o $@ $<

$(OUT)/pending-f-mpich: examples/pending/pending.f90
	@mkdir -p $(OUT)
	$(MPIFC_MPICH) $(CFLAGS) -o $@ $<

$(OUT)/pending-f08: examples/pending/pending-f08.f90
	@mkdir -p $(OUT)
	$(MPIFC) $(CFLAGS) -o $@ $<

$(OUT)/pending-f08-mpich: examples/pending/pending-f08.f90
	@mkdir -p $(OUT)
	$(MPIFC_MPICH) $(CFLAGS) -o $@ $<

$(OUT)/crash: examples/crash/crash.c
	@mkdir -p $(OUT)
	$(MPICC) $(CFLAGS) -o $@ $<

$(OUT)/crash-mpich: examples/crash/crash.c
	@mkdir -p $(OUT)
	$(MPICC_MPICH) $(CFLAGS) -o $@ $<

$(OUT)/domain: examples/domain/domain.cpp
	@mkdir -p $(OUT)
	$(CXX) $(CFLAGS) -o $@ $<

$(OUT)/shapes: examples/shapes/shapes.f90
	@mkdir -p $(OUT)
	$(FC) $(CFLAGS) -o $@ $<

$(OUT)/busy: examples/busy/busy.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -o $@ $<

$(OUT)/steps: examples/steps/steps.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -o $@ $<

$(OUT)/fault: examples/fault/fault.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -pthread -o $@ $<

$(OUT)/forks: examples/forks/forks.c
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) -o $@ $<

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The race detector needs cgo. TEST_TIMEOUT bounds each package's tests: a
# hang fails with every goroutine's stack instead of running on. The
# end-to-end tests run twice: with the host's ranks sharing gdbs of 16
# (the default), and with a gdb per rank (SDM_RANKS_PER_GDB=1), the mode
# kept for a comparison and for programs gdb cannot share.
TEST_TIMEOUT ?= 20m
test: lint
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	SDM_RANKS_PER_GDB=1 CGO_ENABLED=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./integration/

# Figures for docs/PERFORMANCE.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./wire/ ./sdm/ ./op/ ./routing/
	$(GO) test -run '^$$' -bench 'BringUp$$' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'BringUpOrder' -benchtime 2x ./integration/
	$(GO) test -run '^$$' -bench 'Broadcast$$' -benchtime 200x ./integration/
	$(GO) test -run '^$$' -bench 'PausedBroadcast' -benchtime 5x ./integration/
	$(GO) test -run '^$$' -bench 'Idle' -benchtime 1x ./integration/
	$(GO) test -run '^$$' -bench 'StalledServer' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'GDB64' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'Launchers' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'Sample64' -benchtime 5x -count 3 ./stackwalk/
	$(GO) test -run '^$$' -bench 'SampleRunning' -benchtime 500x -count 3 ./stackwalk/
	$(GO) test -run '^$$' -bench 'MPIR' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'Dlopen$$' -benchtime 1x -timeout 60m ./integration/
	$(GO) test -run '^$$' -bench 'DlopenMPI' -benchtime 5x -timeout 60m ./integration/
	$(GO) test -run '^$$' -bench 'Flood' -benchtime 1x ./integration/
	$(GO) test -run '^$$' -bench 'StacksPid' -benchtime 3x ./integration/
	scripts/trixie.sh run "go test -run '^\$$' -bench StacksPid -benchtime 3x ./integration/"
	$(GO) test -run '^$$' -bench 'StacksSlurmJob' -benchtime 5x ./integration/
	$(GO) test -run '^$$' -bench 'StacksRunning64' -benchtime 5x -timeout 30m ./integration/
	$(GO) test -run '^$$' -bench 'Interposition' -benchtime 9x ./mpiq/
	$(GO) test -run '^$$' -bench 'Deadlock64' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'DeadlockSim1024' -benchtime 10x ./console/
	$(GO) test -run '^$$' -bench 'CompareSim1024' -benchtime 20x ./console/
	$(GO) test -run '^$$' -bench 'DebugUp64' -benchtime 5x ./integration/
	$(GO) test -run '^$$' -bench 'RunToEnd64/lazy' -benchtime 10x ./integration/
	$(GO) test -run '^$$' -bench 'StacksFirst64' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'SharedGDB' -benchtime 2x ./integration/
	$(GO) test -run '^$$' -bench 'InferiorsPerGDB' -benchtime 2x ./backend/gdbmi/
	$(GO) test -run '^$$' -bench 'KilledEnd' -benchtime 20x ./backend/gdbmi/
	SDM_TEST_RANKS_PER_GDB=4 $(GO) test -run '^$$' -bench 'KilledEnd' -benchtime 20x ./backend/gdbmi/

# Every fuzz target (scripts/fuzz.sh finds them) for FUZZTIME each, under a
# 2 GiB memory limit; the seeds and every crasher kept in testdata/fuzz run
# in every `make test`.
FUZZTIME ?= 60s
fuzz:
	CGO_ENABLED=1 FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

# The demo needs gdb and a C compiler only: no MPI.
demo: build $(OUT)/plain
	$(BIN) debug -n 8 \
		-e 'break compute' -e 'break special' -e run -e wait -e stacks \
		-e 'print rank % 2' -e next -e next -e 'print value' -e '[7] print value' \
		-e continue -e wait \
		-- $(OUT)/plain

clean:
	rm -rf bin
