package stackwalk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end, offset uint64
	perms              string
	dev                string
	inode              uint64
	path               string
}

func (m mapping) executable() bool { return strings.Contains(m.perms, "x") }

// readMaps parses /proc/PID/maps. It needs no ptrace stop.
func readMaps(pid int) ([]mapping, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, gone(pid)
		}
		if errors.Is(err, os.ErrPermission) {
			return nil, &PermissionError{PID: pid, Reason: Refusal(pid)}
		}
		return nil, fmt.Errorf("process %d: read its memory map: %w", pid, err)
	}
	var maps []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if m, ok := parseMapping(sc.Text()); ok {
			maps = append(maps, m)
		}
	}
	if len(maps) == 0 {
		// A kernel thread has no memory; a process that has none and is
		// not one is exiting or exited (a zombie).
		if kernelThread(pid) {
			return nil, fmt.Errorf("process %d is a kernel thread: it has no user stack to sample", pid)
		}
		return nil, gone(pid)
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].start < maps[j].start })
	return maps, nil
}

// parseMapping parses "start-end perms offset dev inode   path".
func parseMapping(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	var m mapping
	var err1, err2, err3, err4 error
	m.start, err1 = strconv.ParseUint(lo, 16, 64)
	m.end, err2 = strconv.ParseUint(hi, 16, 64)
	m.offset, err3 = strconv.ParseUint(f[2], 16, 64)
	m.inode, err4 = strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || m.end <= m.start {
		return mapping{}, false
	}
	m.perms, m.dev = f[1], f[3]
	// The path is the rest of the line after the fifth field: it may hold
	// spaces.
	rest := line
	for range 5 {
		rest = strings.TrimLeft(rest, " \t")
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			rest = rest[i:]
		} else {
			rest = ""
		}
	}
	m.path = strings.TrimSpace(rest)
	return m, true
}

// kernelThread reports PF_KTHREAD in the flags of /proc/PID/stat.
func kernelThread(pid int) bool {
	const pfKthread = 0x00200000
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfKthread != 0
}
