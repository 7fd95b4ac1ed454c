package lazy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/wire"
)

// process is the rank's process while no gdb holds it: one the backend
// started (cmd), or one of a running job it was given by pid.
//
// Its end is watched through a pidfd, never by waiting for it: a wait
// from any thread of this process would take the ptrace stops of a
// sample in progress for its own (a tracee's stops are reported to the
// tracer's whole thread group), so a child is reaped only once its pidfd
// says it has ended.
type process struct {
	pid  int
	cmd  *exec.Cmd // nil: attached by pid
	kill bool      // the session's end ends it
	held bool      // stopped by a halt of this backend (guarded by the backend's mu)
	// killed marks the end a kill asked for, which kill tells (guarded
	// by the backend's mu).
	killed bool
	fd     *os.File // the pidfd, in the runtime's poller: Close ends the watch
	// ended is closed once the end is known and told.
	ended chan struct{}
}

// How long the backend waits for a signal to take effect: a SIGSTOP to
// stop every thread, a SIGKILL to end the process. A loaded node takes
// its time; one that takes longer is stuck, and is reported so.
const signalWait = 10 * time.Second

// startProcess starts the loaded program on the rank's terminal, in a
// process group of its own but in the server's session, without a
// controlling terminal, as a launcher's ranks run. (gdb gives its
// program a session of its own. Linux's autogroups share the processors
// equally between sessions: a session per rank leaves the servers of a
// node, all in their launcher's session, one share against each rank's;
// while the ranks spin, a stack sample of 64 then waits seconds for the
// processor instead of tenths.)
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
	cmd.Env = append(os.Environ(), "SDM_RANK="+strconv.Itoa(b.cfg.Rank), "SDM_SIZE="+strconv.Itoa(b.cfg.Size))
	cmd.Env = append(cmd.Env, st.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.Slave(), term.Slave(), term.Slave()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p, err := b.watch(cmd.Process.Pid, cmd, true)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	return p, nil
}

// watch makes process pid the rank's and watches for its end.
func (b *Backend) watch(pid int, cmd *exec.Cmd, kill bool) (*process, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, b.rankErr("process %d: %v", pid, gone(err))
	}
	p := &process{pid: pid, cmd: cmd, kill: kill, ended: make(chan struct{}),
		fd: os.NewFile(uintptr(fd), "pidfd of process "+strconv.Itoa(pid))}
	b.mu.Lock()
	b.proc = p
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		b.await(p)
	}()
	return p, nil
}

func gone(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return errors.New("no such process (it has exited)")
	}
	return err
}

// await waits for p's end, reaps it when it is a child, and tells it,
// unless gdb holds the process by then (gdb tells it) or the backend
// closes.
func (b *Backend) await(p *process) {
	defer close(p.ended)
	rc, err := p.fd.SyscallConn()
	if err == nil {
		err = rc.Read(func(fd uintptr) bool {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(pfd, 0)
			return err == nil && n > 0
		})
	}
	st := wire.State{State: wire.StateExited, Reason: "exited"}
	if err == nil && p.cmd == nil {
		st = endOf(p.pid)
	}
	p.fd.Close()
	if p.cmd != nil {
		// Ended (or the backend closes and has killed it): reap it.
		p.cmd.Wait()
		st = exitState(p.cmd.ProcessState)
	}
	b.mu.Lock()
	mine := b.proc == p && !b.handed && !b.closed
	if b.proc == p {
		b.proc = nil
	}
	killed, out := p.killed, b.out
	b.mu.Unlock()
	if !mine || killed {
		return
	}
	out.Drain()
	b.emit(wire.EventExited, st)
}

// unwatch ends the watch of a process that is no longer the rank's.
func (p *process) unwatch() { p.fd.Close() }

// exitState is the state gdb reports for the end of a child.
func exitState(ps *os.ProcessState) wire.State {
	if ps == nil {
		return wire.State{State: wire.StateExited, Reason: "exited"}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return wire.State{State: wire.StateExited, Reason: "killed by a signal", Signal: unix.SignalName(ws.Signal())}
	}
	return wire.State{State: wire.StateExited, Reason: "exited", Code: ps.ExitCode()}
}

// endOf reads how a process that is not a child ended from its zombie's
// exit_code (field 52 of /proc/PID/stat), while its parent has not yet
// reaped it; gone, it just exited.
func endOf(pid int) wire.State {
	f := program.StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	if len(f) >= 50 && f[0] == "Z" {
		if code, err := strconv.Atoi(f[49]); err == nil {
			ws := unix.WaitStatus(code)
			if ws.Signaled() {
				return wire.State{State: wire.StateExited, Reason: "killed by a signal", Signal: unix.SignalName(ws.Signal())}
			}
			return wire.State{State: wire.StateExited, Reason: "exited", Code: ws.ExitStatus()}
		}
	}
	return wire.State{State: wire.StateExited, Reason: "exited"}
}

// signal sends sig to the process through its pidfd, so that a pid used
// again after the process ended is never signalled.
func (p *process) signal(sig unix.Signal) error {
	rc, err := p.fd.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), sig, nil, 0) }); err != nil {
		return fmt.Errorf("process %d: no such process (it has exited)", p.pid)
	}
	if serr != nil {
		return fmt.Errorf("send %s to process %d: %w", unix.SignalName(sig), p.pid, gone(serr))
	}
	return nil
}

// stoppedBySignal says whether every thread of the process is in a
// signal stop (state T), as after a SIGSTOP: what status reports as
// stopped, whoever sent the signal.
func stoppedBySignal(pid int) bool {
	f := program.StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	return len(f) > 0 && f[0] == "T"
}

// waitStopped waits until the SIGSTOP sent to p has stopped it, p ended,
// or the backend closes.
func (b *Backend) waitStopped(ctx context.Context, p *process) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(signalWait)
	defer deadline.Stop()
	for !stoppedBySignal(p.pid) {
		select {
		case <-tick.C:
		case <-p.ended:
			return fmt.Errorf("process %d exited", p.pid)
		case <-b.stopped:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("process %d: waiting for it to stop: %w", p.pid, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("process %d did not stop within %v of a SIGSTOP", p.pid, signalWait)
		}
	}
	return nil
}

// release ends the process if the session owns it, else lets it go on
// as it was before the session: a SIGCONT undoes a halt (held).
func (p *process) release(held bool) {
	switch {
	case p.kill:
		p.signal(unix.SIGKILL)
	case held:
		p.signal(unix.SIGCONT)
	}
}
