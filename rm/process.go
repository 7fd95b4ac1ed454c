package rm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/internal/text"
	"golang.org/x/sys/unix"
)

// Grace is how long a cancelled job has between SIGTERM and SIGKILL.
const Grace = 3 * time.Second

// Process is a job run by one launcher process (mpirun, mpiexec, srun,
// poe) that starts all the servers.
type Process struct {
	name  string
	cmd   *exec.Cmd
	log   *os.File
	watch sync.Once
	tail  tail
	done  chan struct{}
	err   error
}

// StartProcess runs argv (the launcher and its arguments) with env added
// to ours, in a process group of its own so that Cancel reaches whatever
// it started and a ^C at the terminal does not. Its output is appended to
// the file logPath; the end of its standard error is kept for the error
// message.
func StartProcess(argv, env []string, logPath string) (*Process, error) {
	p, err := StartProcessWith(argv, env, logPath, ProcessOptions{})
	if err == nil {
		p.Watch()
	}
	return p, err
}

// ProcessOptions change how StartProcessWith starts a process.
type ProcessOptions struct {
	// Attr replaces the process attributes (which must keep Setpgid: Cancel
	// signals the group).
	Attr *syscall.SysProcAttr
	// Output also gets what the process writes.
	Output io.Writer
}

// StartProcessWith is StartProcess with options, and without the wait:
// Watch starts that, when nothing else waits for the process any more (a
// tracer that takes the process's stops, say).
func StartProcessWith(argv, env []string, logPath string, o ProcessOptions) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	p := &Process{name: argv[0], done: make(chan struct{}), log: log}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	var out io.Writer = log
	if o.Output != nil {
		out = io.MultiWriter(log, o.Output)
		// The job's processes may keep the output open after the
		// launcher is gone.
		p.cmd.WaitDelay = Grace
	}
	p.cmd.Stdout = out
	p.cmd.Stderr = io.MultiWriter(out, &p.tail)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.Attr != nil {
		p.cmd.SysProcAttr = o.Attr
	}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return p, nil
}

// Watch starts waiting for the process (once, however often it is
// called); Done and Wait tell the outcome.
func (p *Process) Watch() { p.watch.Do(p.wait) }

func (p *Process) wait() {
	log := p.log
	go func() {
		err := p.cmd.Wait()
		log.Close()
		if err != nil {
			err = &EndError{Name: p.name, How: HowEnded(err), Tail: text.Printable(p.tail.String(), false)}
		}
		p.err = err
		close(p.done)
	}()
}

// Pid is the launcher's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done implements Job.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait implements Job.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Cancel implements Job.
func (p *Process) Cancel() {
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	go func() {
		select {
		case <-p.done:
		case <-time.After(Grace):
		}
		// The group may outlive the launcher: finish what it left.
		syscall.Kill(-pgid, syscall.SIGKILL)
	}()
}

// tail keeps the last lines written to it: the launcher's last words.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const tailBytes = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 2*tailBytes {
		keep := t.buf.Bytes()[t.buf.Len()-tailBytes:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := t.buf.String()
	if len(text) > tailBytes {
		text = text[len(text)-tailBytes:]
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return strings.TrimSpace(text)
}

// EndError is how a process of a job failed: "mpirun: exit status 1:"
// and the last lines of its standard error.
type EndError struct {
	Name string // the program
	How  string // HowEnded's words
	Tail string // the end of its standard error, if any
}

func (e *EndError) Error() string {
	if e.Tail != "" {
		return fmt.Sprintf("%s: %s:\n%s", e.Name, e.How, e.Tail)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.How)
}

// HowEnded says how a process ended, from the error of its wait:
// "killed by SIGKILL", "exit status 1".
func HowEnded(err error) string {
	ws, ok := WaitStatus(err)
	switch {
	case !ok:
		return err.Error()
	case ws.Signaled():
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// WaitStatus is the status in the error of a process's wait, if it holds
// one.
func WaitStatus(err error) (syscall.WaitStatus, bool) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ws, ok
}
