package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/internal/procfs"
)

// ChildrenCPU is the CPU of every process this one has reaped, with the
// processes they reaped in turn: a benchmark's measure of what the
// processes it started cost.
func ChildrenCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tick is the unit of the times in /proc/PID/stat (USER_HZ, 100 on Linux).
const tick = 10 * time.Millisecond

// TreeCPU is the CPU spent so far by the processes this one started,
// with theirs in turn: those reaped (ChildrenCPU) and those still
// running, each thread's time on a processor (schedstat, in ns: the ticks
// of stat, rounded down per process, would lose a few ms for each of a
// session's hundred processes) with what each process reaped.
// Descendants that a process of another tree adopted are not counted.
func TreeCPU(tb testing.TB) time.Duration {
	total := ChildrenCPU(tb)
	parents := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		if f := statFields(pid); len(f) > 1 {
			parents[pid], _ = strconv.Atoi(f[1])
		}
	}
	self := os.Getpid()
	for pid := range parents {
		if !descends(parents, pid, self) {
			continue
		}
		f := statFields(pid)
		if len(f) < 15 {
			continue
		}
		// utime, stime, cutime and cstime: the 14th to 17th fields.
		var ticks [4]int
		for i := range ticks {
			ticks[i], _ = strconv.Atoi(f[11+i])
		}
		var run time.Duration
		tids, _ := procfs.ThreadIDs(pid)
		for _, tid := range tids {
			data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat")
			if f := strings.Fields(string(data)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				run += time.Duration(ns)
			}
		}
		// The threads still there, or, if more, all of them in ticks.
		total += max(run, time.Duration(ticks[0]+ticks[1])*tick) + time.Duration(ticks[2]+ticks[3])*tick
	}
	return total
}

// statFields are the fields of /proc/PID/stat after the command's name,
// from the state on.
func statFields(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// descends says whether pid is a descendant of ancestor.
func descends(parents map[int]int, pid, ancestor int) bool {
	for seen := 0; pid > 1 && seen < len(parents); seen++ {
		pid = parents[pid]
		if pid == ancestor {
			return true
		}
	}
	return false
}
