package gdbmi

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/wire"
)

// The rank's process is watched directly, not only through gdb: gdb
// notices an end only while it waits for the process, so a program
// killed while stopped at a breakpoint would stay "stopped" for good, a
// continue would leave it "running" for good, and its zombie would hold
// the job (a launcher learns of a rank's end only once gdb reaps it).
//
// Each process gdb starts or attaches to (=thread-group-started) gets a
// pidfd, which the kernel makes readable the moment the process ends,
// whoever its parent is. The end is then read from the zombie's
// /proc/PID/stat (its wait status, the last thing it keeps) and
// reported at once, as gdb would report it; gdb is then made to let go
// of the zombie (tidy), which it would not do on its own while it
// believes the process stopped.
//
// Ends that are not news are left alone: the process of a backend that
// closes, one the backend let go (detach), and one that ends while a
// command that may end it runs (kill, run again, a raw command): that
// command says what happened, and a death during a raw command is
// reported after it only if gdb neither reported an end nor started a
// new process. An end gdb itself reaped before /proc was read is gdb's
// to report: it reaps only what it waits for, and reports what it
// waited for.

// process is a process of the rank, watched through its pidfd.
type process struct {
	pid int
	fd  *os.File // the pidfd, in the runtime's poller: Close stops the watch
}

// death is how a process ended, as read from its zombie.
type death struct {
	p     *process
	state wire.State
	known bool // the state was read (false: gdb reaped the process first)
}

// watchProcess starts watching the process gdb reported started, in
// place of the one before.
func (b *Backend) watchProcess(g conn, pid int) {
	b.mu.Lock()
	b.lastPid, b.gone, b.untold = pid, false, 0
	b.mu.Unlock()
	b.unwatch()
	// A process that ended already is gdb's to report; a kernel without
	// pidfds (before 5.10) leaves every end to gdb, as before.
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	p := &process{pid: pid, fd: os.NewFile(uintptr(fd), "pidfd of process "+strconv.Itoa(pid))}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		p.fd.Close()
		return
	}
	b.proc = p
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		b.await(g, p)
	}()
}

// killWatched sends SIGKILL to the watched process, through its pidfd,
// which never names another process that took its pid.
func (b *Backend) killWatched() {
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil {
		return
	}
	if rc, err := p.fd.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.PidfdSendSignal(int(fd), unix.SIGKILL, nil, 0) })
	}
}

// unwatch stops watching the current process, if any: it was let go, or
// replaced, or the backend closes.
func (b *Backend) unwatch() {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p != nil {
		p.fd.Close()
	}
}

// await waits for p's end and reports it, unless p is no longer the
// rank's process by then.
func (b *Backend) await(g conn, p *process) {
	rc, err := p.fd.SyscallConn()
	if err != nil {
		return
	}
	if err := rc.Read(func(fd uintptr) bool { return ended(int(fd)) }); err != nil {
		return // closed: no longer watched
	}
	d := &death{p: p}
	rc.Control(func(fd uintptr) { d.state, d.known = endOf(int(fd), p.pid) })
	p.fd.Close()
	b.mu.Lock()
	switch {
	case b.proc != p || b.closed:
		b.mu.Unlock()
		return
	case b.ending:
		b.deferred = d
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	if g.Ended() {
		return // gdb's end took its program with it: the watcher says so
	}
	b.died(d)
}

// died reports a process's end, found out without gdb's help, unless
// the rank has started another since: the end of that one was the news
// of the command that replaced it.
func (b *Backend) died(d *death) {
	b.mu.Lock()
	stale := b.lastPid != d.p.pid
	b.mu.Unlock()
	if stale {
		return
	}
	if !d.known {
		// gdb reaped it, so gdb reports it; a shared gdb once it lets
		// go of the process (view.reap).
		b.mu.Lock()
		v, shared := b.gdb.(*view)
		b.mu.Unlock()
		if shared {
			v.reapNow(d.p.pid)
		}
		return
	}
	b.mu.Lock()
	if b.proc == d.p {
		b.proc = nil
	}
	b.untold = d.p.pid
	b.mu.Unlock()
	b.exited(d.state)
	// gdb lets go of the zombie before its next command, or now, when
	// none is waiting: a job without a call only tidies.
	b.queue.Push(job{ctx: context.Background(), done: func([]byte, error) {}})
}

// tidy has gdb kill (so reap and forget) a process that died without its
// noticing: gdb still believes it stopped, and would answer the next
// command about a zombie, or run a new process only after a kill of its
// own. It runs before every command, in the command queue, so it never
// meets a process started after the death.
func (b *Backend) tidy() {
	b.mu.Lock()
	g, pid, current := b.gdb, b.untold, b.untold == b.lastPid
	b.untold = 0
	b.mu.Unlock()
	if pid == 0 || !current || g == nil {
		return
	}
	if v, shared := g.(*view); shared {
		// A shared gdb waits for every process and tells an end itself,
		// or holds one that came while the process was stopped until it
		// lets go of the process; a kill of a process that is ending can
		// crash gdb 13 (set_current_inferior: Assertion `inf != NULL').
		v.reapNow(pid)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	// An error says gdb noticed the end by itself meanwhile.
	g.Run(ctx, `-interpreter-exec console "kill"`)
}

// ending marks a command that may end the process itself: a death while
// it runs is its to tell. The returned function ends the mark and says
// whether the process died meanwhile.
func (b *Backend) endingBy() func() *death {
	b.mu.Lock()
	b.ending = true
	b.mu.Unlock()
	return func() *death {
		b.mu.Lock()
		defer b.mu.Unlock()
		d := b.deferred
		b.ending, b.deferred = false, nil
		return d
	}
}

// rawEnds follows the process across a raw command, which may end it
// (kill), replace it (run) or let it go (detach), or meet its death. The
// returned function, called after the command's answer, reports the end
// once gdb's records up to that answer have been handled, unless gdb
// reported the end itself or started a new process: a process gdb let go
// of and that is dead was killed by gdb, as the kill command reports it;
// one still watched died without gdb's noticing. When gdb itself ends
// (gdbEnds), its end took the process with it, which gdb's watcher
// reports.
func (b *Backend) rawEnds() func(ctx context.Context, g conn, gdbEnds bool) {
	met := b.endingBy()
	b.mu.Lock()
	before := b.proc
	b.mu.Unlock()
	// A pidfd of our own, which the watch's letting go does not close.
	pidfd := -1
	if before != nil {
		if fd, err := unix.PidfdOpen(before.pid, 0); err == nil {
			pidfd = fd
		}
	}
	return func(ctx context.Context, g conn, gdbEnds bool) {
		if pidfd >= 0 && dying(before.pid) {
			// Killed during the command (gdb's python os.kill, say): the
			// death is the command's news, so wait for it to happen.
			waitEnded(pidfd, killWait)
		}
		if pidfd >= 0 {
			defer unix.Close(pidfd)
		}
		if before == nil || gdbEnds {
			met()
			return
		}
		// The mark stays until gdb's records up to the answer are
		// handled: a death the watch finds before gdb's letting go of
		// the process is handled is the command's too (gdb's kill).
		g.WaitHandled(ctx, g.Mark())
		d := met()
		b.mu.Lock()
		same := !b.gone && b.lastPid == before.pid
		letGo, watched := b.proc == nil, b.proc == before
		b.mu.Unlock()
		switch {
		case !same:
		case letGo && pidfd >= 0 && ended(pidfd):
			b.exited(wire.State{State: wire.StateExited, Reason: "killed"})
		case watched && d != nil:
			b.died(d)
		case watched && pidfd >= 0 && ended(pidfd):
			// It died during the command, and its watch has not told yet.
			if st, ok := endOf(pidfd, before.pid); ok {
				b.died(&death{p: before, state: st, known: true})
			}
		}
	}
}

// killWait bounds how long the end of a raw command waits for a process
// that a SIGKILL is ending to be gone.
const killWait = 2 * time.Second

// dying says whether process pid has a SIGKILL pending or is exiting
// already: it is as good as gone, but the kernel may not have finished
// with it yet on a busy node.
func dying(pid int) bool {
	// flags is field 9.
	const pfExiting = 0x4
	if fields := program.StatFields("/proc/" + strconv.Itoa(pid) + "/stat"); len(fields) > 6 {
		if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfExiting != 0 {
			return true
		}
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, mask, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&(1<<(unix.SIGKILL-1)) != 0 {
			return true
		}
	}
	return false
}

// waitEnded waits until the pidfd fd says its process ended, for at most d.
func waitEnded(fd int, d time.Duration) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for left := time.Until(deadline); left > 0; left = time.Until(deadline) {
		if _, err := unix.Poll(pfd, int(left.Milliseconds())+1); err != unix.EINTR {
			return
		}
	}
}

// ended says whether the pidfd fd says its process ended.
func ended(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n > 0 && pfd[0].Revents&unix.POLLIN != 0
}

// endOf reads how the process of pidfd fd (pid) ended from its zombie's
// /proc/PID/stat: its exit_code field is the wait status its parent will
// get. The pidfd tells whether the zombie is still there after the read,
// so a pid reaped and used again meanwhile is never read as ours.
func endOf(fd, pid int) (wire.State, bool) {
	// exit_code is field 52, the state field 3.
	fields := program.StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	if unix.PidfdSendSignal(fd, 0, nil, 0) != nil || len(fields) < 50 || (fields[0] != "Z" && fields[0] != "X") {
		// Reaped already (by a gdb in non-stop mode, which waits for
		// every process at once): the pidfd keeps the wait status, on
		// Linux 6.15 and later.
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
		if unix.IoctlPidfdInfo(fd, &info) == nil && info.Mask&unix.PIDFD_INFO_EXIT != 0 {
			return exitState(unix.WaitStatus(info.Exit_code)), true
		}
		return wire.State{}, false
	}
	code, err := strconv.Atoi(fields[49])
	if err != nil {
		return wire.State{}, false
	}
	return exitState(unix.WaitStatus(code)), true
}

// waitError says how a process ended as os/exec does: nil for a clean
// exit, else "exit status N" or "signal: killed".
func waitError(ws unix.WaitStatus) error {
	switch {
	case ws.Signaled():
		return fmt.Errorf("signal: %v", ws.Signal())
	case ws.ExitStatus() != 0:
		return fmt.Errorf("exit status %d", ws.ExitStatus())
	}
	return nil
}

// exitState is the state gdb reports for an end with wait status ws.
func exitState(ws unix.WaitStatus) wire.State {
	if ws.Signaled() {
		return wire.State{State: wire.StateExited, Reason: "killed by a signal", Signal: unix.SignalName(ws.Signal())}
	}
	return wire.State{State: wire.StateExited, Reason: "exited", Code: ws.ExitStatus()}
}

// deathError is the answer to a command that needs a process which was
// killed by a signal, in place of gdb's words about a process it may not
// know is gone; nil when the process did not die so.
func (b *Backend) deathError() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.State != wire.StateExited || b.state.Signal == "" || b.lastPid == 0 {
		return nil
	}
	return fmt.Errorf("rank %d's process (pid %d) was killed by %s", b.cfg.Rank, b.lastPid, b.state.Signal)
}

// lastEnded says whether the rank's last process has ended, or ends
// within endingWait: one that gdb found gone as it killed it (ESRCH) may
// still be on its way out.
func (b *Backend) lastEnded() bool {
	b.mu.Lock()
	pid := b.lastPid
	b.mu.Unlock()
	if pid <= 0 {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err == unix.ESRCH // reaped
	}
	defer unix.Close(fd)
	waitEnded(fd, endingWait)
	return ended(fd)
}

// endingWait bounds the wait for a process that is being killed to end.
const endingWait = time.Second
