// Package inherit gives a rank's program, started by a gdb that several
// ranks share, the file descriptors it would have had from its own
// server: those the rank's launcher handed down, such as MPICH's and
// SLURM's PMI socket ($PMI_FD), which a gdb started by another rank's
// server does not hold.
//
// The shared gdb starts every program through a wrapper (gdb's
// exec-wrapper): this process's executable with Flag first. The wrapper
// reads Env from the program's environment, copies the descriptors
// named there out of the rank's server (pidfd_getfd, Linux 5.6), puts
// them at their numbers, closes at the exec every other descriptor it
// was given (the gdb's starter's), and executes the program.
package inherit

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/handover/vars"
	"github.com/sdm-hpc/sdm/internal/procfs"
)

// Flag, first on a command line, runs the wrapper (Main).
const Flag = "--exec-inherit"

// Env names the variable that tells the wrapper whose descriptors to
// take: PID:FD,FD,… (Value).
const Env = "SDM_INHERIT"

// Of lists the descriptors above standard error that process pid would
// hand down to a program it started: those without close-on-exec, but
// for a server's own, which its variables name (the listening socket its
// launcher bound for it, its key's pipe), and which a server that joins
// another holds until it has joined.
func Of(pid int) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fdinfo"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	own := owned(pid)
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 || own[fd] {
			continue
		}
		flags, err := strconv.ParseUint(field(filepath.Join(dir, e.Name()), "flags"), 8, 64)
		if err != nil || flags&unix.O_CLOEXEC != 0 {
			continue // gone since, or closed at an exec
		}
		fds = append(fds, fd)
	}
	slices.Sort(fds)
	return fds, nil
}

// owned are the descriptors process pid's variables name as a server's
// own.
func owned(pid int) map[int]bool {
	env, _ := procfs.Environ(pid)
	own := map[int]bool{}
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if name == vars.ListenFD || name == vars.KeyFD {
			if fd, err := strconv.Atoi(val); err == nil {
				own[fd] = true
			}
		}
	}
	return own
}

// field is a field of an fdinfo file, or "".
func field(path, name string) string {
	b, _ := os.ReadFile(path)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// init keeps the wrapper on the main thread, which then executes the
// program: gdb, starting a program, counts the executions of its process
// and takes one from another thread of the process for none.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Flag {
		runtime.LockOSThread()
	}
}

// Value is Env's value for descriptors fds of process pid.
func Value(pid int, fds []int) string {
	parts := make([]string, len(fds))
	for i, fd := range fds {
		parts[i] = strconv.Itoa(fd)
	}
	return strconv.Itoa(pid) + ":" + strings.Join(parts, ",")
}

// parse reads Env's value.
func parse(value string) (pid int, fds []int, err error) {
	p, list, ok := strings.Cut(value, ":")
	pid, perr := strconv.Atoi(p)
	if !ok || perr != nil || pid <= 0 {
		return 0, nil, fmt.Errorf("$%s=%q: want PID:FD,FD,…", Env, value)
	}
	for f := range strings.SplitSeq(list, ",") {
		if f == "" {
			continue
		}
		fd, err := strconv.Atoi(f)
		if err != nil || fd < 3 {
			return 0, nil, fmt.Errorf("$%s=%q: %q is not a descriptor above standard error", Env, value, f)
		}
		fds = append(fds, fd)
	}
	return pid, fds, nil
}

// Wrap, in a process started as the wrapper (Flag first), executes the
// program, or says why it cannot under name and exits 127; otherwise it
// returns. Executables that a shared gdb may run as its wrapper call it
// first thing.
func Wrap(name string) {
	if len(os.Args) < 2 || os.Args[1] != Flag {
		return
	}
	err := Main(os.Args[2:])
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(127)
}

// Main is the wrapper: it executes args (the program and its arguments)
// with the descriptors $Env names, and returns only if it cannot.
func Main(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%s: no program to start", Flag)
	}
	path := args[0]
	if !strings.Contains(path, "/") {
		found, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = found
	}
	env := os.Environ()
	if value, ok := os.LookupEnv(Env); ok {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, Env+"=") })
		pid, fds, err := parse(value)
		if err != nil {
			return err
		}
		if err := take(pid, fds); err != nil {
			return err
		}
	}
	return syscall.Exec(path, args, env)
}

// take puts process pid's descriptors fds at their numbers in this
// process, and marks every other one above standard error to close at
// the exec. Only system calls: the Go runtime then opens no descriptor
// of its own (its poller's) that one put at its number would replace.
func take(pid int, fds []int) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("the descriptors of process %d (the rank's server): %w", pid, err)
	}
	// Copied first, above every number wanted, so that putting one at
	// its number closes neither another's copy nor the pidfd in use.
	above := 3
	if len(fds) > 0 {
		above = fds[len(fds)-1] + 1
	}
	copies := map[int]int{}
	for _, fd := range fds {
		c, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err == unix.EBADF {
			continue // closed since: the server hands it down no more
		}
		if err == nil {
			copies[fd], err = unix.FcntlInt(uintptr(c), unix.F_DUPFD_CLOEXEC, above)
			unix.Close(c)
		}
		if err != nil {
			unix.Close(pidfd)
			return fmt.Errorf("descriptor %d of process %d (the rank's server): %w", fd, pid, err)
		}
	}
	unix.Close(pidfd)
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return err
	}
	for fd, c := range copies {
		if err := unix.Dup3(c, fd, 0); err != nil {
			return err
		}
	}
	return nil
}

// Files are the descriptors process pid would hand down to a program it
// started (Of), copied into this process and laid out as exec.Cmd's
// ExtraFiles lay them: each at its number less 3, nil between them. A
// program started with them has the descriptors it would have had from
// pid. The caller closes them once the program has started.
func Files(pid int) ([]*os.File, error) {
	fds, err := Of(pid)
	if err != nil || len(fds) == 0 {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("the descriptors of process %d (the rank's server): %w", pid, err)
	}
	defer unix.Close(pidfd)
	files := make([]*os.File, fds[len(fds)-1]-2)
	for _, fd := range fds {
		c, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err == unix.EBADF {
			continue // closed since: the server hands it down no more
		}
		if err != nil {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
			return nil, fmt.Errorf("descriptor %d of process %d (the rank's server): %w", fd, pid, err)
		}
		files[fd-3] = os.NewFile(uintptr(c), "descriptor "+strconv.Itoa(fd)+" of process "+strconv.Itoa(pid))
	}
	return files, nil
}
