package mpiq

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Types are found by their typedef's or struct's name, and members by
// name, by path through members, and through unnamed members, at the
// offsets the compiler gave them; each answer is kept once.
func TestTypes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	src, obj := filepath.Join(dir, "t.c"), filepath.Join(dir, "t.so")
	os.WriteFile(src, []byte(`
struct inner { char c; long size; };
typedef struct outer { int a; struct inner super; union { short s; double d; }; } outer_t;
outer_t v;
`), 0o644)
	if out, err := exec.CommandContext(ctx, "cc", "-g", "-shared", "-fPIC", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	ty, err := readTypes(obj)
	if err != nil {
		t.Fatal(err)
	}
	id, size, ok := ty.find("outer_t")
	if !ok || size != 32 {
		t.Fatalf("outer_t: %v, size %d", ok, size)
	}
	for name, want := range map[string]int64{"a": 0, "super": 8, "super.size": 16, "d": 24, "s": 24} {
		if off, ok := ty.field(id, name); !ok || off != want {
			t.Errorf("field %s: %d %v, want %d", name, off, ok, want)
		}
	}
	for _, name := range []string{"b", "super.nothing", "a.b"} {
		if _, ok := ty.field(id, name); ok {
			t.Errorf("field %s found", name)
		}
	}
	if _, _, ok := ty.find("no_such_t"); ok {
		t.Error("no_such_t found")
	}
	if _, ok := ty.field(99, "a"); ok {
		t.Error("a field of a type never found")
	}
	// The answers are kept for the next helper, misses too, each once.
	if again, _, ok := ty.find("outer_t"); !ok || again != id {
		t.Errorf("outer_t again: %d %v, want %d", again, ok, id)
	}
	known := strings.Join(ty.known(), "\n")
	for _, want := range []string{"type outer_t 0 32", "field 0 super.size 16", "field 0 b -1", "type no_such_t 0 -1"} {
		if !strings.Contains(known, want) {
			t.Errorf("no %q in the answers kept:\n%s", want, known)
		}
	}
	if strings.Count(known, "type outer_t") != 1 {
		t.Errorf("an answer kept twice:\n%s", known)
	}
}

// What a message-queue library tells becomes the wire's queues:
// MPI_COMM_WORLD is communicator 0 and gives the rank, MPI_COMM_NULL is
// left out, a wildcard tag and source are told so, an unexpected message
// by its source, and a completed operation not at all.
func TestLibraryQueues(t *testing.T) {
	var s session
	for _, l := range []string{
		"comm 0 2 4 MPI_COMM_WORLD", "group 0 1 2 3",
		"op 0 0 3 0 7 16 0 0 0", "op 1 0 -1 1 0 8 0 0 0", "op 2 0 0 0 0 0 1 5 4", "op 1 2 1 0 3 4 1 3 4",
		"comm 2 -2 0 MPI_COMM_NULL", "comm 3 1 2 MPI COMMUNICATOR 3 SPLIT FROM 0", "group 1 2", "op 1 0 1 0 9 4 0 0 0",
	} {
		kind, rest, _ := strings.Cut(l, " ")
		s.tell(kind, rest)
	}
	q := s.queues()
	if q.Rank != 2 || q.Size != 4 || len(q.Comms) != 1 || q.Comms[3].String() != "1-2" {
		t.Fatalf("rank %d size %d comms %v", q.Rank, q.Size, q.Comms)
	}
	want := []wire.MPIOp{
		{Call: wire.PostedSend, Peer: 3, Tag: 7, CommSize: 4, Bytes: 16, Root: wire.NoRank, Request: true},
		{Call: wire.PostedRecv, Peer: wire.AnySource, Tag: wire.AnyTag, CommSize: 4, Bytes: 8, Root: wire.NoRank, Request: true},
		{Call: wire.Unexpected, Peer: 1, Tag: 5, CommSize: 4, Bytes: 4, Root: wire.NoRank},
		{Call: wire.PostedRecv, Peer: 1, Tag: 9, Comm: 3, CommSize: 2, Bytes: 4, Root: wire.NoRank, Request: true},
	}
	if len(q.Ops) != len(want) {
		t.Fatalf("%d ops, want %d: %+v", len(q.Ops), len(want), q.Ops)
	}
	for i, o := range q.Ops {
		if o.Call != want[i].Call || o.Peer != want[i].Peer || o.Tag != want[i].Tag || o.Comm != want[i].Comm ||
			o.CommSize != want[i].CommSize || o.Bytes != want[i].Bytes || o.Request != want[i].Request {
			t.Errorf("op %d: %+v, want %+v", i, o, want[i])
		}
	}
}

// Whatever lines a helper prints (a library that wrote garbage), reading
// them neither panics nor hangs.
func FuzzLibraryLines(f *testing.F) {
	for _, seed := range []string{"comm 0 2 4 MPI_COMM_WORLD\ngroup 0 1 2 3\nop 0 0 3 0 7 16 0 0 0\nend\n",
		"group 1\nop 1\ncomm\ncomm x y z\nerror boom\n", "op 9 9 9 9 9 9 9 9 9 9 9\ncomm 1 1 -5 W\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var s session
		for line := range strings.Lines(text) {
			kind, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			if kind == "sym" || kind == "type" || kind == "field" || kind == "read" {
				continue
			}
			s.tell(kind, rest)
		}
		s.queues()
	})
}

// The library a rank names is loaded only where no other user could have
// written it.
func TestTrustedLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libx.so")
	os.WriteFile(lib, nil, 0o644)
	if err := trusted(lib); err != nil {
		t.Errorf("%s: %v", lib, err)
	}
	os.Chmod(lib, 0o666)
	if err := trusted(lib); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a library anyone may write: %v", err)
	}
	if err := trusted("libx.so"); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("a relative name: %v", err)
	}
	if err := trusted(filepath.Join(dir, "none.so")); err == nil {
		t.Error("a library that is not there")
	}
}
