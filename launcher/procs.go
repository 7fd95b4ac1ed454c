package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// sizeEnv are the variables that tell a rank the size of its job, from
// the same launchers as routing.IndexEnv: ranks of a job that sdm did not
// find are reported as left alone.
var sizeEnv = []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MP_PROCS", "SLURM_NTASKS"}

// procTable is a table of a job's ranks made from /proc, for starters
// without MPIR (MPICH's mpiexec): the processes pids, or the descendants
// of ancestor that carry a rank variable. A rank's number comes from its
// environment (routing.IndexEnv); processes without one are ranks in the
// order given. It returns the table, the ranks found, and a line that
// says how they were found and which ranks were not.
func procTable(pids []int, ancestor int) (mpir.Table, wire.RankSet, string, error) {
	host, _ := os.Hostname()
	tab := mpir.Table{Starter: ancestor, IAmStarter: true, PartialAttachOK: true}
	var procs []rankProc
	var how string
	if ancestor != 0 {
		var err error
		if procs, err = descendants(ancestor); err != nil {
			return tab, wire.RankSet{}, "", err
		}
		how = fmt.Sprintf("processes under pid %d (%s)", ancestor, procName(ancestor))
	} else {
		seen := map[int]bool{}
		for _, pid := range pids {
			if seen[pid] {
				return tab, wire.RankSet{}, "", &RefusedError{fmt.Sprintf("pid %d is given twice", pid)}
			}
			seen[pid] = true
			p, err := readRankProc(pid, nil)
			if err != nil {
				return tab, wire.RankSet{}, "", err
			}
			procs = append(procs, p)
		}
		how = "processes given"
	}
	size, err := number(procs)
	if err != nil {
		return tab, wire.RankSet{}, "", err
	}
	tab.Procs = make([]mpir.Proc, size)
	var found wire.RankSet
	for _, p := range procs {
		tab.Procs[p.rank] = mpir.Proc{Host: host, Executable: p.exe, Pid: p.pid}
		found = found.Union(wire.Single(p.rank))
	}
	from := procs[0].from
	if from == "" {
		from = "no rank variables: ranks in the order given"
	}
	note := fmt.Sprintf("%d ranks from /proc: %s, %s", found.Count(), how, from)
	if missing := wire.All(size).Minus(found); !missing.Empty() {
		note += fmt.Sprintf("; ranks %v of %d not found on this host: left alone", missing, size)
	}
	return tab, found, note, nil
}

// rankProc is a process of the job, with its rank and the variable that
// told it ("" when it had none).
type rankProc struct {
	pid, rank, size int
	from, exe       string
}

// number checks that the processes are one job's ranks, numbered by their
// variables or all without, and returns the job's size.
func number(procs []rankProc) (int, error) {
	size := len(procs)
	with := map[int]rankProc{}
	var first, without *rankProc // the first with a rank variable, and without
	for i := range procs {
		p := &procs[i]
		if p.from == "" {
			if without == nil {
				without = p
			}
			p.rank = i
			continue
		}
		if first == nil {
			first = p
		}
		if q, ok := with[p.rank]; ok {
			return 0, fmt.Errorf("pids %d and %d are both rank %d (%s)", q.pid, p.pid, p.rank, p.from)
		}
		with[p.rank] = *p
		size = max(size, p.rank+1, p.size)
	}
	if first != nil && without != nil {
		return 0, fmt.Errorf("pid %d has no rank variable (%s), while pid %d is rank %d (%s): give the ranks of one job",
			without.pid, strings.Join(routing.IndexEnv, ", "), first.pid, first.rank, first.from)
	}
	return size, nil
}

// readRankProc reads a process's rank from its environment. Variables that
// hold what they hold in inherited (the starter's own) were inherited and
// say nothing of the rank.
func readRankProc(pid int, inherited map[string]string) (rankProc, error) {
	p := rankProc{pid: pid}
	if err := alive(pid); err != nil {
		return p, err
	}
	env, err := environ(pid)
	if err != nil {
		return p, err
	}
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		if ok && inherited != nil && inherited[name] == v {
			return "", false
		}
		return v, ok
	}
	rank, from, err := routing.Index(-1, lookup)
	switch {
	case err != nil && from != "":
		return p, fmt.Errorf("pid %d: %w", pid, err)
	case err == nil:
		p.rank, p.from = rank, from
		for _, name := range sizeEnv {
			if v, ok := lookup(name); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > rank {
					p.size = n
					break
				}
			}
		}
	}
	p.exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return p, nil
}

// descendants are the processes under ancestor that carry a rank
// variable; the processes below such a rank (its own children, which
// inherit its variables) are not looked at.
func descendants(ancestor int) ([]rankProc, error) {
	if err := alive(ancestor); err != nil {
		return nil, err
	}
	inherited, err := environ(ancestor)
	if err != nil {
		return nil, err
	}
	kids := children()
	var ranks []rankProc
	queue := append([]int(nil), kids[ancestor]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, err := readRankProc(pid, inherited)
		switch {
		case err != nil:
			continue // gone meanwhile, or not ours to read: not a rank we can attach
		case p.from != "":
			ranks = append(ranks, p)
		default:
			queue = append(queue, kids[pid]...)
		}
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("no process under pid %d (%s) carries a rank variable (%s): srun's tasks, for one, are started by slurmstepd, not by srun; a starter with MPIR (mpirun, srun) is attached with --pid %d",
			ancestor, procName(ancestor), strings.Join(routing.IndexEnv, ", "), ancestor)
	}
	sort.Slice(ranks, func(i, j int) bool { return ranks[i].pid < ranks[j].pid })
	return ranks, nil
}

// children maps each process on this host to its children.
func children() map[int][]int {
	kids := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, err := stat(pid); err == nil {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	return kids
}

// stat reads a process's parent and state from /proc/PID/stat.
func stat(pid int) (ppid int, state string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	// pid (comm) state ppid …: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return 0, "", fmt.Errorf("/proc/%d/stat: unreadable", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err
}

// alive says what is wrong with pid as a process to attach to.
func alive(pid int) error {
	_, state, err := stat(pid)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("pid %d: no such process on this host", pid)
	case err != nil:
		return fmt.Errorf("pid %d: %w", pid, err)
	case state == "Z" || state == "X":
		return fmt.Errorf("pid %d has ended (its parent has not reaped it yet)", pid)
	}
	return nil
}

// environ reads a process's environment as it started.
func environ(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("pid %d: no such process on this host (it may have ended)", pid)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("pid %d: cannot read its environment: permission denied (another user's process?)", pid)
	case err != nil:
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

// procName is a process's command name, for messages.
func procName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "gone"
	}
	return strings.TrimSpace(string(b))
}
