package handover

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sdm-hpc/sdm/internal/handover/vars"
	"github.com/sdm-hpc/sdm/wire"
)

// KeyFDEnv names the descriptor on which a server that re-executed itself
// finds its session key (see DropKeyFromEnviron).
const KeyFDEnv = vars.KeyFD

// DropKeyFromEnviron takes the session key out of the environment a
// server was started with. os.Unsetenv changes only the Go runtime's copy:
// /proc/PID/environ keeps showing what the process was started with for
// as long as it runs. So a server given $SDM_SESSION_KEY executes itself
// again, same pid, arguments and descriptors, without it, and hands the
// key over on a pipe that only the new image reads. It returns only when
// there is nothing to do, or on failure.
func DropKeyFromEnviron() error {
	text, ok := os.LookupEnv(wire.KeyEnv)
	if !ok {
		return nil
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, wire.KeyEnv+"=") && !strings.HasPrefix(kv, KeyFDEnv+"=") {
			env = append(env, kv)
		}
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], 0); err != nil {
		return fmt.Errorf("handing the session key over: %w", err)
	}
	syscall.CloseOnExec(p[1])
	// The key is far smaller than a pipe's buffer: the write cannot block.
	if _, err := syscall.Write(p[1], []byte(text)); err != nil {
		return fmt.Errorf("handing the session key over: %w", err)
	}
	syscall.Close(p[1])
	env = append(env, KeyFDEnv+"="+strconv.Itoa(p[0]))
	err := syscall.Exec(self(), os.Args, env)
	syscall.Close(p[0])
	return fmt.Errorf("executing sdm again without $%s: %w", wire.KeyEnv, err)
}

// self is the path to execute this program again by: its own, so that
// the process keeps its name (ps shows "exe" for a program executed as
// /proc/self/exe), unless that path no longer leads to the program that
// runs (replaced or removed since), which /proc/self/exe always does.
func self() string {
	const exe = "/proc/self/exe"
	path, err := os.Readlink(exe)
	if err != nil {
		return exe
	}
	running, err1 := os.Stat(exe)
	there, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(running, there) {
		return exe
	}
	return path
}

// HandedKey returns a lookup for wire.LoadKey that finds the key handed
// over by DropKeyFromEnviron, if there is one, and closes its pipe.
func HandedKey() (func(string) (string, bool), error) {
	text, ok := os.LookupEnv(KeyFDEnv)
	if !ok {
		return os.LookupEnv, nil
	}
	os.Unsetenv(KeyFDEnv)
	fd, err := strconv.Atoi(text)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not a descriptor", KeyFDEnv, text)
	}
	f := os.NewFile(uintptr(fd), "session key")
	defer f.Close()
	key, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyFDEnv, err)
	}
	return func(name string) (string, bool) {
		if name == wire.KeyEnv {
			return string(key), true
		}
		return os.LookupEnv(name)
	}, nil
}
