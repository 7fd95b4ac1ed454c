// Package program is the debugged program's side of a rank's backend
// that needs no debugger: finding its executable as a shell would, the
// pseudo-terminal it runs on, and the pump that turns what it writes
// there into output events. gdbmi hands the terminal to gdb; lazy starts
// the program on it itself.
package program

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Find finds the executable the way a shell would: a name with a slash
// is a path (relative to dir), a bare name is looked up in $PATH.
func Find(name, dir string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("no program given")
	}
	path := name
	if !strings.Contains(name, "/") {
		found, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("program %s: not found in $PATH", name)
		}
		path = found
	} else if !filepath.IsAbs(name) && dir != "" {
		path = filepath.Join(dir, name)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("program %s: %w", name, err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("program %s: not an executable file", path)
	}
	return path, nil
}

// StatFields reads a stat file of /proc (a process's or a thread's) and
// returns its fields after the command name, which, in parentheses, may
// hold anything: they are counted after its last closing one. The first
// is the state (field 3), the 50th exit_code (field 52). None when it
// cannot be read.
func StatFields(path string) []string {
	stat, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}
