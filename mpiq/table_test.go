package mpiq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// build compiles the library as make build does (against an MPI's
// headers, found by pkg-config as pc, not linked with the MPI) and
// examples/pending with the MPI's compiler.
func build(t testing.TB, mpicc, pc string) (lib, prog string) {
	t.Helper()
	mpiCC := testenv.RequireTool(t, mpicc)
	cflags, err := exec.Command("pkg-config", "--cflags", pc).Output()
	if err != nil {
		t.Fatalf("pkg-config --cflags %s: %v", pc, err)
	}
	dir := t.TempDir()
	lib, prog = filepath.Join(dir, "libsdmq.so"), filepath.Join(dir, "pending")
	for _, c := range [][]string{
		append(append([]string{"cc", "-shared", "-fPIC", "-O2", "-Wall"}, strings.Fields(string(cflags))...), "-o", lib, "lib/sdmq.c"),
		{mpiCC, "-g", "-o", prog, "../examples/pending/pending.c"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	// A process that is not an MPI program loads it as well (gdb starts
	// programs through a shell).
	sh := exec.Command("/bin/sh", "-c", "echo loaded")
	sh.Env = append(os.Environ(), "LD_PRELOAD="+lib)
	if out, err := sh.CombinedOutput(); err != nil || string(out) != "loaded\n" {
		t.Fatalf("sh with the library preloaded: %v: %q", err, out)
	}
	return lib, prog
}

// Hung ranks of Open MPI and MPICH, the library preloaded into them:
// each rank's table holds what it waits in, peers as world ranks (through
// a communicator of two), tags, sizes, the posted receive with its
// request; each thread of a rank of MPI_THREAD_MULTIPLE its own call.
func TestPendingOperations(t *testing.T) {
	for _, mpi := range []struct{ name, cc, pc, run string }{
		{"openmpi", "mpicc.openmpi", "ompi-c", "mpirun.openmpi"},
		{"mpich", "mpicc.mpich", "mpich", "mpiexec.mpich"},
	} {
		t.Run(mpi.name, func(t *testing.T) {
			lib, prog := build(t, mpi.cc, mpi.pc)
			want := map[int]string{
				0: "MPI_Irecv peer 1 tag 5 comm 0 of 3, 4 elements, 16 bytes, request; MPI_Recv peer 1 tag 7 comm 0 of 3, 1 elements, 4 bytes",
				1: "MPI_Barrier peer -2 tag 0 comm 1 of 2, 0 elements, 0 bytes",
				2: "MPI_Recv peer 1 tag 9 comm 1 of 2, 2 elements, 16 bytes",
			}
			hung(t, mpi.name, mpi.run, lib, prog, 3, nil, want)
			// Three threads of a rank of MPI_THREAD_MULTIPLE, each in a
			// receive of its own.
			want = map[int]string{
				0: "MPI_Recv peer 1 tag 100 comm 0 of 2, 1 elements, 4 bytes; MPI_Recv peer 1 tag 101 comm 0 of 2, 1 elements, 4 bytes; MPI_Recv peer 1 tag 102 comm 0 of 2, 1 elements, 4 bytes",
				1: "MPI_Barrier peer -2 tag 0 comm 0 of 2, 0 elements, 0 bytes",
			}
			hung(t, mpi.name, mpi.run, lib, prog, 2, []string{"threads"}, want)
			// Waits on requests: persistent, collective, synchronous, and
			// MPI-4's where the MPI has them.
			isendrecv := "MPI_Irecv peer 1 tag 15 comm 0 of 3, 3 elements, 12 bytes, request"
			if mpi.name == "mpich" {
				isendrecv = "MPI_Isendrecv peer 1 tag 15 comm 0 of 3, 3 elements, 12 bytes, request"
			}
			want = map[int]string{
				0: "MPI_Ibarrier peer -2 tag 0 comm 0 of 3, 0 elements, 0 bytes, request; " +
					"MPI_Recv_init peer 1 tag 11 comm 0 of 3, 1 elements, 4 bytes, request; " +
					"MPI_Waitall peer -2 tag 0 comm 0 of 0, 2 elements, 0 bytes",
				1: "MPI_Ibarrier peer -2 tag 0 comm 0 of 3, 0 elements, 0 bytes, request; " +
					"MPI_Issend peer 2 tag 12 comm 0 of 3, 2 elements, 8 bytes, request; " +
					"MPI_Waitall peer -2 tag 0 comm 0 of 0, 2 elements, 0 bytes",
				2: isendrecv + "; MPI_Recv peer 1 tag 14 comm 0 of 3, 1 elements, 4 bytes",
			}
			hung(t, mpi.name, mpi.run, lib, prog, 3, []string{"requests"}, want)
		})
	}
}

// hung runs n ranks of prog with the library preloaded under an MPI's
// starter and waits until each rank's table reads as want.
func hung(t *testing.T, mpi, run, lib, prog string, n int, progArgs []string, want map[int]string) {
	t.Helper()
	run = testenv.RequireTool(t, run)
	dir := t.TempDir()
	ranks := strconv.Itoa(n)
	args := []string{"-n", ranks, "-x", "LD_PRELOAD=" + lib, "-x", "SDMQ_DIR=" + dir, "--allow-run-as-root", "--oversubscribe", prog}
	if mpi == "mpich" {
		args = []string{"-n", ranks, "-genv", "LD_PRELOAD", lib, "-genv", "SDMQ_DIR", dir, prog}
	}
	args = append(args, progArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, run, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM) // the starter ends its ranks
		cmd.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := tables(t, dir)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tables after 30s:\n%v\nwant\n%v\n%s", got, want, out.String())
		}
		time.Sleep(50 * time.Millisecond) // the ranks tell no one when they block
	}
}

// tables reads every rank's table of dir, each as one line by rank.
func tables(t *testing.T, dir string) map[int]string {
	t.Helper()
	files, _ := os.ReadDir(dir)
	got := map[int]string{}
	for _, f := range files {
		tab, err := Read(filepath.Join(dir, f.Name()))
		if errors.Is(err, ErrNotYet) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, o := range tab.Ops {
			s := fmt.Sprintf("%v peer %d tag %d comm %d of %d, %d elements, %d bytes", o.Kind, o.Peer, o.Tag, o.Comm, o.CommSize, o.Count, o.Bytes)
			if o.Request != 0 {
				s += ", request"
			}
			if o.Caller == 0 || o.Waiting <= 0 || o.Thread == 0 {
				s += fmt.Sprintf(" (caller %#x, waiting %v, thread %d)", o.Caller, o.Waiting, o.Thread)
			}
			ops = append(ops, s)
		}
		slices.Sort(ops)
		got[tab.Rank] = strings.Join(ops, "; ")
	}
	return got
}

// table is a file of one busy slot (op) and one free, as the library
// writes it.
func table(op Op, start int64) []byte {
	le := binary.LittleEndian
	b := make([]byte, headerSize+2*slotSize)
	for i, v := range []uint32{magic, version, 2, slotSize, 3, 8, 4242} {
		le.PutUint32(b[4*i:], v)
	}
	s := b[headerSize:]
	le.PutUint32(s[0:], 2)
	le.PutUint32(s[4:], 1)
	le.PutUint16(s[8:], uint16(op.Kind))
	for at, v := range map[int]int{12: op.Peer, 16: op.Tag, 20: op.CommSize, 24: int(op.Comm), 28: op.Count, 32: op.Root, 36: op.Thread} {
		le.PutUint32(s[at:], uint32(int32(v)))
	}
	le.PutUint64(s[40:], uint64(op.Bytes))
	le.PutUint64(s[48:], op.Request)
	le.PutUint64(s[56:], uint64(start))
	le.PutUint64(s[64:], op.Caller)
	return b
}

func TestParse(t *testing.T) {
	op := Op{Kind: Recv, Peer: AnySource, Tag: AnyTag, CommSize: 8, Count: 3, Root: NoRank, Thread: 77, Bytes: 12, Caller: 0x401234}
	b := table(op, 1000)
	got, err := Parse(b, 1000+int64(2*time.Second))
	op.Waiting = 2 * time.Second
	if err != nil || got.Rank != 3 || got.Size != 8 || got.Pid != 4242 || len(got.Ops) != 1 || got.Ops[0] != op {
		t.Fatalf("%+v, %v", got, err)
	}
	binary.LittleEndian.PutUint32(b[headerSize:], 3) // being written
	if got, err := Parse(b, 0); err != nil || len(got.Ops) != 0 {
		t.Fatalf("a slot being written: %+v, %v", got, err)
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{b[:10], "shorter than its header"},
		{make([]byte, 64), ErrNotYet.Error()},
		{nil, ErrNotYet.Error()},
		{append([]byte("XXXX"), b[4:]...), "magic"},
		{b[:headerSize+slotSize], "2 slots of 80 bytes in 144 bytes"},
	} {
		if _, err := Parse(c.b, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.b, err, c.want)
		}
	}
}

// Bad files get an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(table(Op{Kind: Send, Peer: 1}, 5))
	f.Add(make([]byte, headerSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse(b, 0)
	})
}

// The library's kinds and this package's are one list: K_REDUCE_SCATTER
// is MPI_Reduce_scatter, in the same place.
func TestKindsAreTheLibrarys(t *testing.T) {
	src, err := os.ReadFile("lib/sdmq.c")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(src), "enum {")
	list, _, _ := strings.Cut(rest, "};")
	var names []string
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "K_"), "=")
		if name == "1" || name == "" {
			continue
		}
		names = append(names, "MPI_"+name[:1]+strings.ToLower(name[1:]))
	}
	if !slices.Equal(names, kindNames[1:]) {
		t.Fatalf("lib/sdmq.c's kinds:\n%v\nmpiq's:\n%v", names, kindNames[1:])
	}
}

// A rank that ends takes its table with it, and a rank's start removes
// those of processes that are gone.
func TestTableRemovedAtExit(t *testing.T) {
	lib, _ := build(t, "mpicc.openmpi", "ompi-c")
	run := testenv.RequireTool(t, "mpirun.openmpi")
	prog := filepath.Join(t.TempDir(), "pingpong")
	if out, err := exec.Command("mpicc.openmpi", "-o", prog, "bench/pingpong.c").CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, strconv.Itoa(gone.Process.Pid))
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, run, "--allow-run-as-root", "--oversubscribe", "-n", "2", "-x", "LD_PRELOAD="+lib,
		"-x", "SDMQ_DIR="+dir, prog, "pingpong", "10").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The directory changed (the tables were made in it) and is empty.
	after, err := os.Stat(dir)
	if err != nil || !after.ModTime().After(before.ModTime()) {
		t.Fatalf("no table was made in %s: %v", dir, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("tables left after the ranks' exit, or of a process gone before: %v", left)
	}
}

// The library's frames leave a stack but for the innermost, where a
// thread stopped in a wrapper is.
func TestUnwrap(t *testing.T) {
	mpi := wire.Frame{Func: "PMPI_Recv", From: "/lib/x86_64-linux-gnu/libmpi.so.40"}
	wrapper := wire.Frame{Func: "MPI_Recv", From: "/usr/lib/sdm/libsdmq-openmpi.so"}
	main := wire.Frame{Func: "main", File: "x.c", Line: 7}
	if got := Unwrap([]wire.Frame{mpi, wrapper, main}); !slices.Equal(got, []wire.Frame{mpi, main}) {
		t.Errorf("a wrapper under the MPI's routine: %v", got)
	}
	if got := Unwrap([]wire.Frame{wrapper, main}); !slices.Equal(got, []wire.Frame{wrapper, main}) {
		t.Errorf("stopped in the wrapper: %v", got)
	}
	if Wrapper("libmpi.so.40") || !Wrapper("libsdmq-mpich.so") {
		t.Error("Wrapper tells the library from another")
	}
}

// A process without a table is told why: no MPI mapped; and
// stackwalk.HasDebugInfo reads a library's debugging information.
func TestWhyNoTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sleep := exec.CommandContext(ctx, "sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Wait()
	defer sleep.Process.Kill()
	_, err := Of(ctx, sleep.Process.Pid, 0)
	if !errors.Is(err, ErrNoTable) || !strings.Contains(err.Error(), "maps no MPI library") {
		t.Errorf("sleep: %v", err)
	}
	dir := t.TempDir()
	src, withTypes := filepath.Join(dir, "t.c"), filepath.Join(dir, "t")
	os.WriteFile(src, []byte("struct s { int a; } v;\nint main(void) { return v.a; }\n"), 0o644)
	if out, err := exec.CommandContext(ctx, "cc", "-g", "-o", withTypes, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	if !stackwalk.HasDebugInfo(withTypes) || stackwalk.HasDebugInfo("/bin/sh") {
		t.Errorf("HasDebugInfo: a program built with -g %v, /bin/sh %v", stackwalk.HasDebugInfo(withTypes), stackwalk.HasDebugInfo("/bin/sh"))
	}
}
