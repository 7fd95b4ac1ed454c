// Package procfs reads what sdm needs of a process from /proc: its
// threads, a thread's state, a field of its status, its environment.
// Stdlib only.
package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ThreadIDs lists /proc/PID/task: the process's threads. The error of a
// process that is gone wraps os.ErrNotExist.
func ThreadIDs(pid int) ([]int, error) {
	return numbered("/proc/" + strconv.Itoa(pid) + "/task")
}

// ThreadState is the state letter of thread tid of process pid, from its
// stat file (of /proc/TID/stat when pid is -1): R, S, D, T (stopped by a
// signal), t (in a ptrace stop), Z, X; "unknown" when it cannot be read
// (the thread is gone).
func ThreadState(pid, tid int) string {
	path := fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)
	if pid < 0 {
		path = fmt.Sprintf("/proc/%d/stat", tid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	s := string(b)
	// The command name, in parentheses, may hold anything: the state
	// follows its last closing one.
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "unknown"
}

// StatusField is one field of /proc/PID/status (of a thread too: its
// tid), or "".
func StatusField(pid int, name string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Environ is the environment process pid started with, from
// /proc/PID/environ.
func Environ(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("no process %d", pid)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, err
	}
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return []string{}, nil
	}
	return strings.Split(s, "\x00"), nil
}

// numbered lists the entries of dir named by numbers.
func numbered(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ns := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			ns = append(ns, n)
		}
	}
	return ns, nil
}
