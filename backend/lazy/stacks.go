package lazy

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/mpiq"
	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/wire"
)

// Where implements backend.Ops: the stack of the thread gdb would show,
// sampled: the thread that faulted, else the main thread; the process
// keeps running, or stays stopped.
func (n native) Where(ctx context.Context) (wire.Stack, error) {
	b := n.b
	p, err := b.process()
	if err != nil {
		return wire.Stack{}, err
	}
	tid := p.pid
	b.mu.Lock()
	if p.fault != nil {
		tid = p.fault.TID
	}
	b.mu.Unlock()
	return b.stackOf(ctx, p, tid)
}

// Backtrace implements backend.Ops for a backtrace without locals (one
// with them goes to gdb): the sampled main thread's frames, without the
// arguments, which only gdb reads.
func (n native) Backtrace(ctx context.Context, bt wire.Backtrace) (wire.Trace, error) {
	st, err := n.Where(ctx)
	if err != nil {
		return wire.Trace{}, err
	}
	var tr wire.Trace
	for i, f := range st.Frames {
		tr.Levels = append(tr.Levels, wire.Level{Level: i, Frame: f})
	}
	switch {
	case bt.Limit > 0 && len(tr.Levels) > bt.Limit:
		tr.Levels, tr.More = tr.Levels[:bt.Limit], true
	case bt.Limit < 0 && len(tr.Levels) > -bt.Limit:
		tr.Levels = tr.Levels[len(tr.Levels)+bt.Limit:]
	}
	return tr, nil
}

// stackOf samples thread tid of p (the main thread's id is the
// process's).
func (b *Backend) stackOf(ctx context.Context, p *process, tid int) (wire.Stack, error) {
	snap, err := b.sample(ctx, p)
	if err != nil {
		return wire.Stack{}, err
	}
	for _, t := range snap.Threads {
		if t.TID == tid {
			return wire.Stack{Frames: frames(t.Frames)}, nil
		}
	}
	if tid == p.pid {
		return wire.Stack{}, b.rankErr("process %d: its main thread has exited", p.pid)
	}
	return wire.Stack{}, b.rankErr("process %d: its thread %d has exited", p.pid, tid)
}

// Sample implements backend.Ops: s.Count samples of every thread,
// s.Interval apart; the rank moved when its threads left their places
// from one sample to the next (wire.SamePlace: a pc that moves within
// the innermost function, as in a polling wait, is no progress).
func (n native) Sample(ctx context.Context, s wire.Sample) (wire.CallTree, error) {
	b := n.b
	p, err := b.process()
	if err != nil {
		return wire.CallTree{}, err
	}
	count := max(s.Count, 1)
	var tree wire.CallTree
	var last [][]wire.Frame
	for i := range count {
		if i > 0 {
			if err := b.pause(ctx, s.Interval); err != nil {
				return wire.CallTree{}, err
			}
		}
		snap, err := b.sample(ctx, p)
		if err != nil {
			return wire.CallTree{}, err
		}
		var stacks [][]wire.Frame
		for _, t := range snap.Threads {
			f := frames(t.Frames)
			tree.AddStack(b.cfg.Rank, f)
			stacks = append(stacks, f)
		}
		if i > 0 && !slices.EqualFunc(last, stacks, wire.SamePlace) {
			tree.Moved = wire.Single(b.cfg.Rank)
		}
		last = stacks
		tree.Samples = i + 1
	}
	tree.Sort()
	return tree, nil
}

// pause waits d between two samples.
func (b *Backend) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stopped:
		return ErrClosed
	}
}

// process is the rank's process, or why there is none.
func (b *Backend) process() (*process, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return nil, b.errNoProcess()
	}
	return b.proc, nil
}

// sample takes one snapshot of p; the sampler's errors already name the
// process and say why.
func (b *Backend) sample(ctx context.Context, p *process) (stackwalk.Snapshot, error) {
	b.sampling.Lock()
	defer b.sampling.Unlock()
	snap, err := p.h.Sample(ctx, b.sampler)
	if err != nil {
		return snap, b.rankErr("stack sample: %v", err)
	}
	return snap, nil
}

// frames converts a sampled stack to the wire's frames, cut after main
// as gdb cuts a backtrace (the C library's start-up code is the same in
// every rank), without the queue library's wrappers (mpiq.Unwrap), so
// that sampled stacks merge with gdb's.
func frames(fs []stackwalk.Frame) []wire.Frame {
	out := make([]wire.Frame, 0, len(fs))
	for _, f := range fs {
		w := wire.Frame{Func: f.Function, File: f.File, Line: f.Line}
		if w.Func == "" {
			w.Func = "??"
		}
		if w.File == "" && f.Module != "" {
			w.From = filepath.Base(f.Module)
		}
		out = append(out, w)
		if f.Function == "main" && !f.Inlined {
			break
		}
	}
	return mpiq.Unwrap(out)
}

// viaGDB runs an op on gdbmi's backend and waits for its answer.
func (b *Backend) viaGDB(ctx context.Context, op string, body []byte) ([]byte, error) {
	type result struct {
		answer []byte
		err    error
	}
	got := make(chan result, 1)
	b.gdb.Do(ctx, op, body, func(answer []byte, err error) { got <- result{answer, err} })
	select {
	case r := <-got:
		return r.answer, r.err
	case <-b.stopped:
		return nil, ErrClosed
	}
}

// handOver gives the rank to gdb for j, the first command that needs it:
// a loaded program is loaded into gdb; a process is handed to gdb
// stopped (takeOver), and let go on after j when it ran before (unless j
// resumes or ends it itself).
func (b *Backend) handOver(j job) {
	b.mu.Lock()
	p, loaded, st := b.proc, b.loaded, b.state
	b.mu.Unlock()
	var err error
	switch {
	case p != nil:
		err = b.takeOver(j.ctx, p)
	case loaded != nil:
		_, err = b.viaGDB(j.ctx, wire.OpStart, wire.MustEncode(*loaded))
	}
	if err != nil {
		j.done(nil, fmt.Errorf("start gdb for %s: %w", j.op, err))
		return
	}
	b.mu.Lock()
	b.handed = true
	b.mu.Unlock()
	if p == nil || st.State != wire.StateRunning || resumes[j.op] {
		b.inGDB(j.ctx, j.op, j.body, j.done)
		return
	}
	answer, err := b.viaGDB(j.ctx, j.op, j.body)
	if _, cerr := b.viaGDB(context.WithoutCancel(j.ctx), wire.OpCont, nil); cerr != nil && err == nil {
		err = fmt.Errorf("%s done, but the process did not go on: %w", j.op, cerr)
	}
	b.answer(j.done, answer, err)
}

// takeOver hands the held process to gdb: let go in a job-control stop
// (hold.HandOff), attached to by gdb, the stop then lifted unless the
// process was found in it (gdb holds it meanwhile, and would leave it
// stopped when it detaches); a fault the process was held at becomes
// gdb's own stop, with its signal still to be delivered.
func (b *Backend) takeOver(ctx context.Context, p *process) error {
	fault, err := p.h.HandOff(ctx)
	if err != nil {
		return b.rankErr("%v", err)
	}
	if p.cmd != nil {
		// The process stays this server's child: it is reaped once it
		// ends, which gdb tells.
		go p.cmd.Wait()
	}
	pids := make([]int, b.cfg.Rank+1)
	pids[b.cfg.Rank] = p.pid
	if _, err := b.viaGDB(ctx, wire.OpAttach, wire.MustEncode(wire.Attach{Pids: pids, Stop: true, Kill: p.kill})); err != nil {
		return err
	}
	if !p.foundStopped {
		if err := unix.Kill(p.pid, unix.SIGCONT); err != nil {
			return b.rankErr("process %d: lift its stop: %v", p.pid, err)
		}
	}
	if fault == nil {
		return nil
	}
	return b.gdb.TakeFault(ctx, gdbmi.Fault{TID: fault.TID, Signal: unix.SignalName(fault.Signal),
		Code: fault.Code, Errno: fault.Errno, Addr: fault.Addr})
}

// resumes are the ops that set the process going, or end it, themselves.
var resumes = map[string]bool{
	wire.OpCont: true, wire.OpStep: true, wire.OpNext: true, wire.OpFinish: true,
	wire.OpKill: true, wire.OpDetach: true, wire.OpRun: true,
}

// Queues implements backend.Ops: the program's MPI operations in flight,
// read without stopping it (package mpiq), each with where the program
// called it.
func (n native) Queues(ctx context.Context) (wire.Queues, error) {
	pid := n.b.PID()
	q, err := mpiq.Of(ctx, pid, n.b.cfg.Rank)
	if err != nil || n.b.sampler == nil || len(q.Ops) == 0 {
		return q, err
	}
	pcs := make([]uint64, len(q.Ops))
	for i, o := range q.Ops {
		pcs[i] = o.Caller
	}
	places, err := n.b.sampler.Places(pid, pcs)
	if err != nil {
		return q, nil // the operations without their places
	}
	for i, f := range places {
		if f.Function != "??" {
			q.Ops[i].At = frames([]stackwalk.Frame{f})[0]
		}
	}
	return q, nil
}
