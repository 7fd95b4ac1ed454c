package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/rm"
)

// heldAtExec starts PRRTE's mpirun (Open MPI 5) with its ranks held
// stopped at their exec (--stop-on-exec) and reads the table it writes
// (--output-proctable): what MPIR_Breakpoint gives under an MPIR
// starter. Nothing traces the starter, so there is nothing to release:
// each rank goes on when its debugger, attached, runs it to main; a rank
// left alone would stay stopped, so every rank is attached.
func (a *acquisition) heldAtExec(ctx context.Context, argv, env []string, log string, out io.Writer, progress func(Progress)) error {
	file := filepath.Join(a.dir, "proctable")
	argv = slices.Concat(argv[:1], []string{"--stop-on-exec", "--output-proctable=" + file}, argv[1:])
	progress(Progress{Stage: StageStarting, Text: strings.Join(argv, " ")})
	p, err := rm.StartProcessWith(argv, env, log, rm.ProcessOptions{Output: out})
	if err != nil {
		return err
	}
	a.job = p
	p.Watch()
	tab, err := waitProctable(ctx, file, a.o.Size, p)
	if err != nil {
		return a.starterFailed(err)
	}
	tab.Starter = p.Pid()
	a.result.Table = tab
	progress(Progress{Stage: StageAcquired, Done: len(tab.Procs), Total: len(tab.Procs), Text: describeTable(tab)})
	return nil
}

// prrte says whether a starter without MPIR, named as
// mpir.NotStarterError names it, is PRRTE's launcher, which holds and
// lists its ranks itself: Open MPI 5's mpirun (under --rm openmpi, or
// by its Debian name), or prterun, which it executes.
func prrte(name, adapter string) bool {
	comm, _, _ := strings.Cut(name, " ")
	return adapter == "openmpi" || comm == "prterun" || strings.HasSuffix(comm, ".openmpi")
}

// spaced reads PRRTE's labels with unlabel: PRRTE puts a space between
// the label and the line ("[1,0]<stdout>: text"), which the line's text
// does not have.
func spaced(unlabel unlabelFunc) unlabelFunc {
	return func(line string) (int, string, string, bool) {
		rank, stream, text, ok := unlabel(line)
		return rank, stream, strings.TrimPrefix(text, " "), ok
	}
}

// proctableTick is how often the table's file is read while the
// starter writes it.
const proctableTick = 20 * time.Millisecond

// waitProctable waits, under ctx, until file holds the table of all n
// ranks, or the starter p ends first.
func waitProctable(ctx context.Context, file string, n int, p *rm.Process) (mpir.Table, error) {
	tick := time.NewTicker(proctableTick)
	defer tick.Stop()
	for {
		tab, err := readProctable(file, n)
		if err == nil {
			return tab, nil
		}
		select {
		case <-tick.C:
		case <-p.Done():
			if tab, err := readProctable(file, n); err == nil {
				return tab, nil
			}
			return mpir.Table{}, fmt.Errorf("the starter ended before it wrote the table of its %d ranks (%s): %v", n, file, err)
		case <-ctx.Done():
			return mpir.Table{}, fmt.Errorf("the starter did not write the table of its %d ranks (%s) in time: %v", n, file, err)
		}
	}
}

// errPartial says that the table's file holds fewer ranks than the job.
var errPartial = errors.New("not all ranks in it yet")

// readProctable reads PRRTE's --output-proctable file: a line per rank,
// "(rank, host, exe, pid) = (0, node1, /path/prog, 1234)".
func readProctable(file string, n int) (mpir.Table, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return mpir.Table{}, errPartial
	} else if err != nil {
		return mpir.Table{}, err
	}
	defer f.Close()
	tab := mpir.Table{Procs: make([]mpir.Proc, n), IAmStarter: true, AcquiredPreMain: true, Via: "held at exec by --stop-on-exec"}
	seen := 0
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := lines.Text()
		_, tuple, ok := strings.Cut(line, ") = (")
		if !ok || !strings.HasSuffix(tuple, ")") {
			continue // a line being written
		}
		fields := strings.Split(strings.TrimSuffix(tuple, ")"), ", ")
		if len(fields) < 4 {
			return tab, fmt.Errorf("%s: %q is not (rank, host, exe, pid)", file, line)
		}
		rank, rerr := strconv.Atoi(fields[0])
		pid, perr := strconv.Atoi(fields[len(fields)-1])
		switch {
		case rerr != nil || perr != nil || rank < 0 || rank >= n:
			return tab, fmt.Errorf("%s: %q is not (rank, host, exe, pid) of a rank 0-%d", file, line, n-1)
		case tab.Procs[rank].Pid != 0:
			return tab, fmt.Errorf("%s: rank %d is listed twice", file, rank)
		case pid <= 0:
			return tab, fmt.Errorf("%s: rank %d on %s has no pid", file, rank, fields[1])
		}
		tab.Procs[rank] = mpir.Proc{Host: fields[1], Executable: strings.Join(fields[2:len(fields)-1], ", "), Pid: pid}
		seen++
	}
	if seen < n {
		return tab, errPartial
	}
	return tab, nil
}
