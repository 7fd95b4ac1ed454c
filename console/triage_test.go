package console

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// hungJob is the tree of samples of a 9-rank job: ranks 0-5 wait in
// MPI_Recv, 6 in MPI_Send, 7 computes and moved (into norm) between
// samples, and 8 could not be sampled.
func hungJob(samples int) func(context.Context, wire.RankSet, string) ([]wire.Group, error) {
	mainF := wire.Frame{Func: "main", File: "hang.c", Line: 30}
	exchange := wire.Frame{Func: "exchange", File: "hang.c", Line: 12}
	var t wire.CallTree
	for r := range 6 {
		t.AddStack(r, []wire.Frame{{Func: "MPI_Recv", From: "libmpi.so.40"}, exchange, mainF})
	}
	t.AddStack(6, []wire.Frame{{Func: "MPI_Send", From: "libmpi.so.40"}, exchange, mainF})
	t.AddStack(7, []wire.Frame{{Func: "compute", File: "hang.c", Line: 9}, mainF})
	t.Samples = samples
	if samples > 1 {
		t.AddStack(7, []wire.Frame{{Func: "norm", File: "hang.c", Line: 4}, {Func: "compute", File: "hang.c", Line: 10}, mainF})
		t.Moved = wire.Single(7)
	}
	t.Sort()
	return func(_ context.Context, ranks wire.RankSet, op string) ([]wire.Group, error) {
		if op != wire.OpSample {
			return nil, errors.New("stacks sent " + op)
		}
		return []wire.Group{
			{Ranks: wire.Range(0, 7), Status: wire.StatusOK, Body: wire.MustEncode(t)},
			{Ranks: wire.Single(8), Status: wire.StatusError, Body: []byte("ptrace: Operation not permitted")},
		}, nil
	}
}

// stacks samples through the tree and prints the tree, the classes
// biggest first with the outliers marked, who moved, and one rank per
// class as a rank set for the session's commands.
func TestStacksPrintsClassesAndProgress(t *testing.T) {
	f := newFakeTree(9, halted)
	f.answer = hungJob(3)
	out, err := execLines(t, f, Options{Timeout: 30 * time.Second}, "stacks --samples 3 --interval 50ms")
	if err != nil {
		t.Fatal(err)
	}
	want := `[0-7] main at hang.c:30 (8 ranks)
  [0-6] exchange at hang.c:12 (7 ranks)
    [0-5] MPI_Recv from libmpi.so.40 (6 ranks)
    [6] MPI_Send from libmpi.so.40 (1 rank)
  [7] compute at hang.c:9 (1 rank)
  [7] compute at hang.c:10 (1 rank)
    [7] norm at hang.c:4 (1 rank)
3 classes, biggest first:
  [0-5] 6 ranks: MPI_Recv from libmpi.so.40
  [6] 1 rank: MPI_Send from libmpi.so.40  <- outlier
  [7] 1 rank: compute at hang.c:9; compute at hang.c:10 > norm at hang.c:4  <- outlier
progress over 3 samples: [7] moved; [0-6] did not
one rank per class: [0,6,7] where
[8] error: ptrace: Operation not permitted
`
	if out != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", out, want)
	}
	// The rank that failed is asked its status (to tell a gone process),
	// and nothing else is sent.
	sent := f.sent()
	if len(sent) == 0 || sent[0].op != wire.OpSample {
		t.Fatalf("sent %+v", sent)
	}
	for _, s := range sent[1:] {
		if s.op != wire.OpStatus || !s.ranks.Equal(wire.Single(8)) {
			t.Fatalf("sent %+v", sent)
		}
	}
	var s wire.Sample
	if err := wire.Decode(sent[0].body, &s); err != nil || s.Count != 3 || s.Interval != 50*time.Millisecond {
		t.Fatalf("sample %+v, %v", s, err)
	}
	// The ranks take two intervals before they answer: the wait allows them.
	if sent[0].timeout != 30*time.Second+100*time.Millisecond {
		t.Fatalf("timeout %v", sent[0].timeout)
	}
}

// A session attached to a running job through its starter suggests the
// sdm attach that takes gdb to one rank per class.
func TestStacksSuggestsAttachThroughTheStarter(t *testing.T) {
	f := newFakeTree(9, runningState)
	f.answer = hungJob(1)
	out, err := execLines(t, f, Options{Attach: "--pid 4242"}, "stacks")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"progress: one sample (--samples 2 or more tells which ranks move)\n",
		"one rank per class: sdm attach --pid 4242 --ranks 0,6,7\n",
		"  [7] 1 rank: compute at hang.c:9  <- outlier\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	var s wire.Sample
	if err := wire.Decode(f.sent()[0].body, &s); err != nil || s.Count != 1 {
		t.Fatalf("default sample %+v, %v", s, err)
	}
}

// In JSON, stacks answers one group whose value holds the tree, the
// classes, the progress and the suggestion; the failures stay groups.
func TestStacksJSON(t *testing.T) {
	f := newFakeTree(9, halted)
	f.answer = hungJob(2)
	out, err := execLines(t, f, Options{JSON: true}, "stacks --samples 2")
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Groups []struct {
			Ranks, Op, Status string
			Value             struct {
				Roots   []map[string]any `json:"roots"`
				Classes []struct {
					Ranks   string           `json:"ranks"`
					Count   int              `json:"count"`
					Outlier bool             `json:"outlier"`
					Ends    []map[string]any `json:"ends"`
				} `json:"classes"`
				Samples    int    `json:"samples"`
				Moved      string `json:"moved"`
				Still      string `json:"still"`
				Suggestion string `json:"suggestion"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(reply.Groups) != 2 || reply.Groups[0].Op != "stacks" || reply.Groups[0].Ranks != "0-7" || reply.Groups[1].Status != "error" {
		t.Fatalf("groups: %s", out)
	}
	v := reply.Groups[0].Value
	if len(v.Roots) != 1 || len(v.Classes) != 3 || v.Classes[0].Ranks != "0-5" || v.Classes[0].Outlier ||
		!v.Classes[2].Outlier || len(v.Classes[2].Ends) != 2 || v.Classes[0].Ends[0]["func"] != "MPI_Recv" {
		t.Fatalf("value: %s", out)
	}
	if v.Samples != 2 || v.Moved != "7" || v.Still != "0-6" || v.Suggestion != "[0,6,7] where" {
		t.Fatalf("progress: %s", out)
	}
}

func TestStacksUsage(t *testing.T) {
	for _, args := range []string{"--samples 0", "--samples x", "--samples 1001", "--interval soon",
		"--interval -1s", "--interval 2m", "--dot", "--frames 3"} {
		f := newFakeTree(2, halted)
		_, err := execLines(t, f, Options{}, "stacks "+args)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("stacks %s: %v", args, err)
		}
		if len(f.sent()) != 0 {
			t.Errorf("stacks %s sent %v", args, f.sent())
		}
	}
}

// 1024 ranks in 16 classes by rank modulo 16 (the line of a call site):
// sixteen classes of 64,
// none an outlier, and one rank per class.
func TestStackClassesAtScale(t *testing.T) {
	var tr wire.CallTree
	mainF := wire.Frame{Func: "main", File: "groups.c", Line: 9}
	for r := range 1024 {
		tr.AddStack(r, []wire.Frame{{Func: "work", File: "groups.c", Line: 3}, {Func: "step", File: "groups.c", Line: 100 + r%16}, mainF})
	}
	classes := StackClasses(callTreeNodes(tr.Roots))
	if len(classes) != 16 {
		t.Fatalf("%d classes", len(classes))
	}
	for i, c := range classes {
		if c.Ranks.Count() != 64 || c.Ranks.Min() != i || c.Outlier {
			t.Fatalf("class %d: %+v", i, c)
		}
	}
	if got := Representatives(classes); !got.Equal(wire.Range(0, 15)) {
		t.Fatalf("representatives %v", got)
	}
}

// Ranks are classed by the places of their threads: the innermost
// frame by its function, whatever line its pc was at in each sample (a
// polling wait), and the callers by their lines; an end reached at
// several lines is named without one.
func TestStackClassesByPlace(t *testing.T) {
	yield := func(line int) wire.Frame {
		return wire.Frame{Func: "__sched_yield", File: "../sysdeps/unix/syscall-template.S", Line: line}
	}
	recv := func(line int) []wire.Frame {
		return []wire.Frame{{Func: "MPI_Recv", From: "libmpi.so.40"}, {Func: "main", File: "hang.c", Line: line}}
	}
	var tr wire.CallTree
	for r := range 4 {
		tr.AddStack(r, append([]wire.Frame{yield(120)}, recv(27)...))
	}
	tr.AddStack(0, append([]wire.Frame{yield(122)}, recv(27)...))
	tr.AddStack(2, append([]wire.Frame{yield(122)}, recv(27)...))
	tr.AddStack(4, append([]wire.Frame{yield(120)}, recv(40)...))
	tr.Sort()
	classes := StackClasses(callTreeNodes(tr.Roots))
	if len(classes) != 2 || !classes[0].Ranks.Equal(wire.Range(0, 3)) || !classes[1].Ranks.Equal(wire.Single(4)) {
		t.Fatalf("classes %+v", classes)
	}
	if got := classes[0].Label; got != "__sched_yield at ../sysdeps/unix/syscall-template.S" {
		t.Errorf("label %q", got)
	}
	if got := classes[1].Label; got != "main at hang.c:40 > … > __sched_yield at ../sysdeps/unix/syscall-template.S:120" {
		t.Errorf("label %q", got)
	}
	if !wire.SamePlace([]wire.Frame{yield(120)}, []wire.Frame{yield(122)}) || wire.SamePlace(recv(27), recv(40)) {
		t.Error("SamePlace: a polling pc moved, or a call site did not")
	}
}

// A rank with a thread where the others have none is a class of its own,
// though each of its paths is shared.
func TestStackClassesSeeEveryThread(t *testing.T) {
	mainF := wire.Frame{Func: "main", File: "t.c", Line: 5}
	wait := []wire.Frame{{Func: "wait", File: "t.c", Line: 1}, mainF}
	progress := []wire.Frame{{Func: "progress", File: "t.c", Line: 2}, {Func: "start_thread", From: "libc.so.6"}}
	var tr wire.CallTree
	for r := range 4 {
		tr.AddStack(r, wait)
	}
	tr.AddStack(2, progress)
	classes := StackClasses(callTreeNodes(tr.Roots))
	if len(classes) != 2 || !classes[0].Ranks.Equal(wire.Single(0).Union(wire.Single(1)).Union(wire.Single(3))) ||
		!classes[1].Ranks.Equal(wire.Single(2)) || len(classes[1].Ends) != 2 || !classes[1].Outlier {
		t.Fatalf("classes %+v", classes)
	}
	if StackClasses(nil) != nil || Suggestion(nil, "--pid 1") != "" {
		t.Fatal("no ranks, yet classes or a suggestion")
	}
}

// Classes are labelled by where they part from the biggest: on ranks of
// an MPI library with progress threads, whose innermost frames are the
// same everywhere, the labels differ and the main thread comes first, in
// the labels and in the tree; a class that lacks a thread says so; two
// classes that part at the same frame are told by their whole paths.
func TestStackClassLabels(t *testing.T) {
	lib := func(fn string) wire.Frame { return wire.Frame{Func: fn, From: "libmpi.so.40"} }
	libc := func(fn string) wire.Frame { return wire.Frame{Func: fn, From: "libc.so.6"} }
	app := func(fn string, line int) wire.Frame { return wire.Frame{Func: fn, File: "app.c", Line: line} }
	progress := []wire.Frame{libc("__sched_yield"), {Func: "??", From: "libc.so.6"}, lib("progress_engine"), libc("start_thread")}
	pmix := []wire.Frame{libc("epoll_wait"), {Func: "event_base_loop", From: "libevent.so"}, libc("start_thread")}
	yield := func(frames ...wire.Frame) []wire.Frame {
		return append([]wire.Frame{libc("__sched_yield"), {Func: "??", From: "libc.so.6"}}, append(frames, app("main", 30))...)
	}
	var tr wire.CallTree
	for r := range 8 {
		switch {
		case r < 5:
			tr.AddStack(r, yield(lib("opal_progress"), lib("mca_pml_ob1_recv"), lib("MPI_Recv"), app("exchange", 12)))
		case r == 5:
			tr.AddStack(r, yield(lib("opal_progress"), lib("ompi_request_wait"), lib("MPI_Wait"), app("exchange", 14)))
		case r == 6:
			tr.AddStack(r, yield(lib("opal_progress"), lib("ompi_coll_barrier"), lib("MPI_Barrier"), app("finish", 20)))
		default:
			tr.AddStack(r, yield(lib("opal_progress"), lib("ompi_coll_allreduce"), lib("MPI_Allreduce"), app("finish", 20)))
		}
		tr.AddStack(r, progress)
		if r != 4 {
			tr.AddStack(r, pmix)
		}
	}
	roots := callTreeNodes(tr.Roots)
	if roots[0].Frame.Func != "main" {
		t.Errorf("the tree's first root is %s, want the main thread's", roots[0].Frame.Func)
	}
	classes := StackClasses(roots)
	want := map[string]string{
		"0-3": "__sched_yield from libc.so.6",
		"4":   "without start_thread from libc.so.6 > event_base_loop from libevent.so > epoll_wait from libc.so.6",
		"5":   "exchange at app.c:14 > … > __sched_yield from libc.so.6",
		"6":   "main at app.c:30 > finish at app.c:20 > MPI_Barrier from libmpi.so.40 > ompi_coll_barrier from libmpi.so.40 > opal_progress from libmpi.so.40 > ?? from libc.so.6 > __sched_yield from libc.so.6",
		"7":   "main at app.c:30 > finish at app.c:20 > MPI_Allreduce from libmpi.so.40 > ompi_coll_allreduce from libmpi.so.40 > opal_progress from libmpi.so.40 > ?? from libc.so.6 > __sched_yield from libc.so.6",
	}
	labels := map[string]bool{}
	for _, c := range classes {
		if w, ok := want[c.Ranks.String()]; !ok || !strings.HasPrefix(c.Label, w) {
			t.Errorf("class [%v]: label %q, want %q", c.Ranks, c.Label, w)
		}
		if labels[c.Label] {
			t.Errorf("two classes labelled %q", c.Label)
		}
		labels[c.Label] = true
		if c.Ends[0].Func != "__sched_yield" || len(c.Ends) < 2 {
			t.Errorf("class [%v]: ends %v, want the main thread's first", c.Ranks, c.Ends)
		}
	}
	if len(classes) != 5 {
		t.Errorf("%d classes, want 5: %+v", len(classes), classes)
	}
}
