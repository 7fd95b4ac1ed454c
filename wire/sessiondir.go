package wire

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sessionPrefix starts the name of every session directory.
const sessionPrefix = "sdm-"

// ownerFile, in a session directory, names the process that made it: its
// pid and its start time, so that a recycled pid is not taken for it.
const ownerFile = "owner"

// keptFile, in a session directory, marks the logs of a session that
// failed, which the user was told are kept there: a later session leaves
// them for keptFor.
const keptFile = "kept"

// keptFor is how long the logs of a failed session are kept.
const keptFor = 7 * 24 * time.Hour

// KeepSession marks a session directory's logs as kept (a failed
// session's, which the user was told of): they outlive the session's
// process for keptFor.
func KeepSession(dir string) error {
	return os.WriteFile(filepath.Join(dir, keptFile), nil, 0o600)
}

// SessionDir creates a fresh 0700 directory for a session's secrets and
// logs under parent ("" for the system temporary directory), recording
// this process as its owner. It first removes the session directories
// under parent that are ours (our uid) and whose owner is gone: a front end
// killed with SIGKILL, or that crashed, had no chance to remove its own,
// key file included.
func SessionDir(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	RemoveStaleSessions(parent)
	dir, err := os.MkdirTemp(parent, sessionPrefix) // MkdirTemp creates with 0700
	if err != nil {
		return "", err
	}
	owner, err := processStamp(os.Getpid())
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner+"\n"), 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("session directory %s: %w", dir, err)
	}
	return dir, nil
}

// RemoveStaleSessions removes the session directories under parent that
// belong to our uid and whose owner process is gone, and returns them.
// Directories without an owner file, of other users, or whose owner still
// runs are left alone.
func RemoveStaleSessions(parent string) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), sessionPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if !staleSession(dir) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

func staleSession(dir string) bool {
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() {
		return false
	}
	if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	if kept, err := os.Stat(filepath.Join(dir, keptFile)); err == nil {
		return time.Since(kept.ModTime()) > keptFor
	}
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false
	}
	pidText, _, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	now, err := processStamp(pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true // no such process
	case err != nil:
		return false
	}
	return now != strings.TrimSpace(string(data)) // the pid was recycled
}

// processStamp is "PID STARTTIME", the start time in clock ticks after
// boot from /proc/PID/stat: together they name one process for ever.
func processStamp(pid int) (string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	i := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data[i+1:]))
	if i < 0 || len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.Itoa(pid) + " " + fields[19], nil
}
