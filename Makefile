# sdm — scalable debug manager. `make demo` runs a debugging session,
# `make test` the whole test suite (what CI runs).

GO      ?= go
BIN     := bin/sdm
# A static binary starts faster, which counts when a node starts hundreds.
export CGO_ENABLED := 0

.PHONY: build test bench demo lint fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/sdm

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The race detector needs cgo.
test: lint
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

# Figures for docs/PERFORMANCE.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./wire/ ./sdm/
	$(GO) test -run '^$$' -bench 'BringUp$$' -benchtime 3x ./integration/
	$(GO) test -run '^$$' -bench 'BringUpOrder' -benchtime 2x ./integration/
	$(GO) test -run '^$$' -bench 'Broadcast' -benchtime 200x ./integration/
	$(GO) test -run '^$$' -bench 'Idle' -benchtime 1x ./integration/

# A short run of every fuzz target; the seeds run in every `make test`.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 20s ./routing/
	$(GO) test -run '^$$' -fuzz FuzzTree -fuzztime 10s ./routing/
	$(GO) test -run '^$$' -fuzz FuzzDecodeMessage -fuzztime 20s ./wire/
	$(GO) test -run '^$$' -fuzz FuzzHandshake -fuzztime 20s ./wire/

demo: build
	$(BIN) debug -n 8 --backend sim \
		-e status -e where -e stacks -e '[0-3] where' -e continue -e halt -e status \
		-- hang

clean:
	rm -rf bin
