package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/internal/procfs"
)

// Proc is a running process a test looks for by name.
type Proc struct {
	Pid int
	// RSS is its resident memory in KiB.
	RSS int
}

// Procs lists the running processes named name (by their comm): of them,
// with env (NAME=VALUE) not empty, those whose environment holds it, and
// with children, only this process's children.
func Procs(name, env string, children bool) []Proc {
	var pids []int
	if children {
		tasks, _ := filepath.Glob("/proc/self/task/*/children")
		for _, task := range tasks {
			data, _ := os.ReadFile(task)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	} else {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, dir := range dirs {
			if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	var procs []Proc
	for _, pid := range pids {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) != name {
			continue
		}
		if env != "" {
			if vars, _ := procfs.Environ(pid); !slices.Contains(vars, env) {
				continue
			}
		}
		rss, _ := strconv.Atoi(strings.TrimSuffix(procfs.StatusField(pid, "VmRSS"), " kB"))
		procs = append(procs, Proc{Pid: pid, RSS: rss})
	}
	return procs
}

// RSS is the resident memory of procs in KiB.
func RSS(procs []Proc) int {
	total := 0
	for _, p := range procs {
		total += p.RSS
	}
	return total
}
