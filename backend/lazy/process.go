package lazy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/hold"
	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/wire"
)

// process is the rank's process while no gdb holds it: one the backend
// started (cmd), or one of a running job it was given by pid. Either way
// it is held (package hold): a fault stops it where it happened, before
// any handler runs, and is told as gdb would tell it; its end is told
// with its status.
type process struct {
	pid  int
	h    *hold.Process
	cmd  *exec.Cmd // nil: attached by pid
	kill bool      // the session's end ends it
	// foundStopped: it was in a job-control stop when taken, which
	// letting it go leaves it in, unless it was resumed meanwhile.
	foundStopped bool
	// The fields below are guarded by the backend's mu.
	held    bool        // stopped by a halt of this backend
	fault   *hold.Fault // held at this fault
	resumed bool        // resumed by the session since it was taken
	// killed marks the end a kill asked for, which kill tells.
	killed bool
	// ended is closed once the end is known and told, or the process let
	// go (to gdb, or by detach).
	ended chan struct{}
}

// How long the backend waits for a process to do what it was asked: its
// threads to stop, a SIGKILL to end it. A loaded node takes its time;
// one that takes longer is stuck, and is reported so.
const signalWait = 10 * time.Second

// startProcess starts the loaded program on the rank's terminal, held
// from its first instruction, in a process group of its own but in the
// server's session, without a controlling terminal, as a launcher's
// ranks run. (gdb gives its program a session of its own. Linux's
// autogroups share the processors equally between sessions: a session
// per rank leaves the servers of a node, all in their launcher's
// session, one share against each rank's; while the ranks spin, a stack
// sample of 64 then waits seconds for the processor instead of tenths.)
func (b *Backend) startProcess(st wire.Start) (*process, error) {
	path, err := program.Find(st.Program, st.Dir)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.term == nil {
		term, err := program.OpenTerminal()
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.term, b.out = term, program.NewOutput(term, b, &b.wg)
	}
	term := b.term
	b.mu.Unlock()
	cmd := exec.Command(path, st.Args...)
	cmd.Args[0] = st.Program
	cmd.Dir = st.Dir
	env, o := os.Environ(), b.origin
	if o != nil {
		env = o.Env
		if cmd.ExtraFiles, err = inherit.Files(o.Pid); err != nil {
			return nil, b.rankErr("%v", err)
		}
		defer closeFiles(cmd.ExtraFiles)
	}
	cmd.Env = append(slices.Clip(env), "SDM_RANK="+strconv.Itoa(b.cfg.Rank), "SDM_SIZE="+strconv.Itoa(b.cfg.Size))
	cmd.Env = append(cmd.Env, st.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.Slave(), term.Slave(), term.Slave()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h, err := hold.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	if o != nil && o.CPUs != nil {
		// Set as the program starts, before its threads: they take
		// their processors from it.
		unix.SchedSetaffinity(h.PID(), o.CPUs)
	}
	return b.watch(h, cmd, true, false), nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// take makes process pid of a running job the rank's, held where it
// stands.
func (b *Backend) take(pid int, kill bool) (*process, error) {
	h, err := hold.Seize(pid)
	if err != nil {
		return nil, b.rankErr("%v", err)
	}
	stopped, err := h.JobStopped(context.Background())
	if err != nil {
		return nil, b.rankErr("process %d: %v", pid, err)
	}
	return b.watch(h, nil, kill, stopped), nil
}

// watch makes the held process the rank's and follows its news.
func (b *Backend) watch(h *hold.Process, cmd *exec.Cmd, kill, stopped bool) *process {
	p := &process{pid: h.PID(), h: h, cmd: cmd, kill: kill, foundStopped: stopped, ended: make(chan struct{})}
	b.mu.Lock()
	b.proc = p
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		b.follow(p)
	}()
	return p
}

// follow tells p's faults and its end, until the process ends or is let
// go.
func (b *Backend) follow(p *process) {
	defer close(p.ended)
	for ev := range p.h.Events() {
		switch {
		case ev.Fault != nil:
			b.faulted(p, ev.Fault)
		case ev.Ended != nil:
			b.ended(p, exitState(ev.Ended.Status))
		}
	}
}

// faulted tells the stop at a fault, as gdb tells it: the signal and the
// faulting thread's innermost frame.
func (b *Backend) faulted(p *process, f *hold.Fault) {
	st := wire.State{State: wire.StateStopped, Reason: "signal-received", Signal: unix.SignalName(f.Signal)}
	b.mu.Lock()
	p.fault = f
	b.mu.Unlock()
	if stack, err := b.stackOf(context.Background(), p, f.TID); err == nil && len(stack.Frames) > 0 {
		st.Frame = stack.Frames[0]
	}
	b.tell(p, wire.EventStopped, st)
}

// ended tells the end of the process, unless a kill tells it.
func (b *Backend) ended(p *process, st wire.State) {
	b.mu.Lock()
	mine := b.proc == p && !b.handed && !b.closed
	if b.proc == p {
		b.proc = nil
	}
	killed := p.killed
	b.mu.Unlock()
	if mine && !killed {
		b.tell(p, wire.EventExited, st)
	}
}

// tell sends news of p, after the output it wrote before, unless the
// rank has been handed to gdb or the backend closes meanwhile.
func (b *Backend) tell(p *process, op string, st wire.State) {
	b.mu.Lock()
	out := b.out
	still := !b.handed && !b.closed && (b.proc == p || st.State == wire.StateExited)
	b.mu.Unlock()
	if still {
		out.Drain()
		b.emit(op, st)
	}
}

// exitState is the state gdb reports for the end of a process.
func exitState(ws unix.WaitStatus) wire.State {
	if ws.Signaled() {
		return wire.State{State: wire.StateExited, Reason: "killed by a signal", Signal: unix.SignalName(ws.Signal())}
	}
	return wire.State{State: wire.StateExited, Reason: "exited", Code: ws.ExitStatus()}
}

// waitEnded waits for p's end after a kill.
func (b *Backend) waitEnded(ctx context.Context, p *process) error {
	t := time.NewTimer(signalWait)
	defer t.Stop()
	select {
	case <-p.ended:
		return nil
	case <-ctx.Done():
		return b.rankErr("process %d: waiting for its end after SIGKILL: %v", p.pid, ctx.Err())
	case <-t.C:
		return b.rankErr("process %d did not end within %v of a SIGKILL", p.pid, signalWait)
	case <-b.stopped:
		return ErrClosed
	}
}

// release ends the process if the session owns it, else lets it go.
func (b *Backend) release(p *process) {
	if !p.kill {
		b.letGo(p)
		return
	}
	p.h.Kill()
	t := time.NewTimer(signalWait)
	defer t.Stop()
	select {
	case <-p.h.Done():
	case <-t.C:
	}
}

// letGo lets the process go on as it was before the session: untraced,
// running, or in the job-control stop it was found in unless the session
// resumed it.
func (b *Backend) letGo(p *process) {
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	p.h.Release(ctx)
	b.mu.Lock()
	resumed := p.resumed
	b.mu.Unlock()
	if p.foundStopped && resumed {
		unix.Kill(p.pid, unix.SIGCONT)
	}
}

// errNoProcess says the rank has no process to act on, and why.
func (b *Backend) errNoProcess() error {
	if b.state.State == wire.StateExited {
		return errors.New("the program is not being run (it has exited)")
	}
	return errors.New("the program is not being run")
}
