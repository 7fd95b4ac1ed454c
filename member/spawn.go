package member

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/debugregs"
)

// GDB is how a rank's gdb is started: path (found in $PATH when it is
// not one, "gdb" when empty) with the MI interpreter and no init files,
// in a process group of its own, so that a ^C meant for the front end
// does not reach it (it would stop the program). A rank's server starts
// it so, and so does a member for the leader that drives it.
func GDB(path string) (*exec.Cmd, error) {
	if path == "" {
		path = "gdb"
	}
	resolved, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("gdb not found (%s): install gdb or pass --debugger_path: %w", path, err)
	}
	env, kept := gdbEnv(os.Environ())
	// A gdb that meets an internal error ends at once, told as the loss
	// of its ranks with that error: by default it would answer its own
	// questions and write a core file of itself, tens of megabytes, into
	// the working directory of the rank's program.
	args := []string{"--interpreter=mi3", "--nx", "-q",
		"-iex", "maint set internal-error quit yes", "-iex", "maint set internal-error corefile no"}
	if !debugregs.Work() {
		// A hardware watchpoint would never fire: gdb watches in
		// software, stepping the program (backend/gdbmi warns).
		args = append(args, "-iex", "set can-use-hw-watchpoints 0")
	}
	for _, kv := range kept {
		args = append(args, "-iex", "set environment "+kv)
	}
	cmd := exec.Command(resolved, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// GDBWithout are the environment variables gdb is started without:
// PYTHONUNBUFFERED makes gdb's Python unbuffer gdb's own standard output,
// and gdb then writes its MI output a byte per write(2), which cost a
// shared gdb a third of its CPU (docs/PERFORMANCE.md, "Sharing a gdb
// between ranks").
func GDBWithout() []string { return []string{"PYTHONUNBUFFERED"} }

// gdbEnv is environ without the variables GDBWithout names, and those
// of them it held, which gdb gives back to its first inferior (-iex set
// environment) so that the program still starts with them; a shared
// gdb's other inferiors get them from their rank's environment
// (backend/gdbmi, environ). A value with a line break, which a command
// line cannot carry, stays.
func gdbEnv(environ []string) (env, kept []string) {
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if slices.Contains(GDBWithout(), name) && !strings.ContainsAny(val, "\r\n") {
			kept = append(kept, kv)
			continue
		}
		env = append(env, kv)
	}
	return env, kept
}

// Spawner starts the gdbs a member's leader asks for as this process's
// children, so that they and the programs they start have what the
// rank's launcher gave the member, and ends those still running when the
// member ends (Stop).
type Spawner struct {
	Path string // --debugger_path

	mu   sync.Mutex
	live map[*exec.Cmd]chan struct{} // closed when reaped
}

// Spawn starts a gdb and returns the leader's ends of its pipes and its
// pidfd.
func (s *Spawner) Spawn() (Spawned, error) {
	cmd, err := GDB(s.Path)
	if err != nil {
		return Spawned{}, err
	}
	var ends [6]*os.File // stdin's, stdout's, stderr's read and write ends
	for i := 0; i < len(ends); i += 2 {
		if ends[i], ends[i+1], err = os.Pipe(); err != nil {
			closeAll(ends[:i])
			return Spawned{}, err
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[3], ends[5]
	err = cmd.Start()
	closeAll([]*os.File{ends[0], ends[3], ends[5]}) // gdb's own
	leader := Spawned{Stdin: ends[1], Stdout: ends[2], Stderr: ends[4], Pid: -1}
	if err != nil {
		leader.Close()
		return Spawned{}, err
	}
	reaped := make(chan struct{})
	var status unix.WaitStatus
	s.mu.Lock()
	if s.live == nil {
		s.live = make(map[*exec.Cmd]chan struct{})
	}
	s.live[cmd] = reaped
	s.mu.Unlock()
	go func() {
		cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			status = unix.WaitStatus(ws)
		}
		s.mu.Lock()
		delete(s.live, cmd)
		s.mu.Unlock()
		close(reaped)
	}()
	leader.Wait = func() unix.WaitStatus {
		<-reaped
		return status
	}
	// Opened before it can be reaped: the pid is still gdb's.
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		cmd.Process.Kill()
		leader.Close()
		return Spawned{}, os.NewSyscallError("pidfd_open", err)
	}
	leader.Pidfd, leader.Pid = os.NewFile(uintptr(fd), "pidfd of gdb"), cmd.Process.Pid
	return leader, nil
}

// Stop ends the gdbs still running: SIGTERM, on which gdb kills the
// programs it started and lets go of those it attached to, then SIGKILL
// for one that has not ended within a second.
func (s *Spawner) Stop() {
	s.mu.Lock()
	live := make(map[*exec.Cmd]chan struct{}, len(s.live))
	for cmd, reaped := range s.live {
		live[cmd] = reaped
		cmd.Process.Signal(syscall.SIGTERM)
	}
	s.mu.Unlock()
	deadline := time.After(time.Second)
	for cmd, reaped := range live {
		select {
		case <-reaped:
		case <-deadline:
			cmd.Process.Kill()
		}
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
