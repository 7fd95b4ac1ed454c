// Package pmix reads the process table of a job whose launcher is a PMIx
// server (Open MPI 5's mpirun, PRRTE's prterun), for starters that no
// longer offer MPIR. The PMIx tool library is C; the reading is done by
// sdm-pmix, a program of its own beside sdm, so that sdm runs where no
// PMIx library is installed and only this path needs one.
//
// What enters: the server's pid, and the helper's path (launcher finds it
// beside sdm, as the servers' binaries). What leaves: an mpir.Table, as
// an MPIR attach gives, marked with the job's namespace (Via).
//
// PRRTE, which Open MPI 5's mpirun runs as (prterun), removed MPIR and
// offers its PMIx server to tools instead. An attach (sdm attach --pid)
// whose starter lacks MPIR's symbols (mpir.NotStarterError) asks that
// server through sdm-pmix: the tool connects by the server's pid, finds
// the job's namespace and reads PMIX_QUERY_PROC_TABLE, about 15 ms, and
// the job never stops. Its answer is checked (every rank once, each with a
// pid) before it becomes a table.
//
// A launch under PRRTE uses prterun's own flags (--stop-on-exec
// --output-proctable; package launcher). PMIx's own launch-and-hold of a
// starter, the indirect launch (a tool PMIx_Spawns prterun with
// PMIX_LAUNCHER_PAUSE_FOR_TOOL, waits for PMIX_LAUNCHER_READY, hands it
// PMIX_DEBUG_STOP_ON_EXEC as a launch directive and releases the ranks
// with PMIX_DEBUGGER_RELEASE), is not used: on Debian 13's PRRTE 3.0.8
// and PMIx 5.0.7 the spawned prterun ignores the pause, runs the job
// through and sends no PMIX_LAUNCHER_READY (tried with a tool of
// OpenPMIx's own sequence: 30 s without the event, the ranks ended), and
// OpenPMIx's current source no longer has the pause at all. A direct
// PMIx_Spawn of the ranks needs a running DVM (prte) and would take the
// user's mpirun options apart; the flags give the same hold through the
// user's own command line.
package pmix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/mpir"
)

// Helper is the name of the program that speaks PMIx for sdm.
const Helper = "sdm-pmix"

// Wait bounds the helper's whole run: a PMIx server answers a tool in
// milliseconds, and one that does not answer within this is stuck.
const Wait = 20 * time.Second

// Answer is what the helper prints for sdm-pmix table: the server, the
// job's namespace, the debugging attributes the server offers
// (PMIX_QUERY_DEBUG_SUPPORT, comma-separated), and its ranks.
type Answer struct {
	Server int    `json:"server"`
	Nspace string `json:"nspace"`
	Debug  string `json:"debug,omitempty"`
	Procs  []Proc `json:"procs"`
}

// Proc is a rank in an Answer.
type Proc struct {
	Rank       int    `json:"rank"`
	Host       string `json:"host"`
	Executable string `json:"executable"`
	Pid        int    `json:"pid"`
}

// Attach reads, through helper, the table of the job that the PMIx
// server pid runs. Nothing of the job stops: a PMIx tool only asks.
func Attach(ctx context.Context, helper string, pid int) (mpir.Table, error) {
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, "table", "--pid", strconv.Itoa(pid))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return mpir.Table{}, fmt.Errorf("pid %d: its PMIx server did not answer a tool within %v", pid, Wait)
	}
	if err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		return mpir.Table{}, errors.New(strings.TrimPrefix(why, Helper+": "))
	}
	return parse(pid, out)
}

// parse checks the helper's answer and makes it a table: every rank from
// 0 on once, each with a pid.
func parse(pid int, out []byte) (mpir.Table, error) {
	var t Answer
	if err := json.Unmarshal(out, &t); err != nil {
		return mpir.Table{}, fmt.Errorf("pid %d: %s's answer: %v", pid, Helper, err)
	}
	if len(t.Procs) == 0 {
		return mpir.Table{}, fmt.Errorf("pid %d: the PMIx job %s has no processes", pid, t.Nspace)
	}
	tab := mpir.Table{Starter: pid, Procs: make([]mpir.Proc, len(t.Procs)), Via: "PMIx, job " + t.Nspace, IAmStarter: true, PartialAttachOK: true}
	seen := make([]bool, len(t.Procs))
	for _, p := range t.Procs {
		switch {
		case p.Rank < 0 || p.Rank >= len(t.Procs):
			return mpir.Table{}, fmt.Errorf("pid %d: the PMIx job %s has %d processes and a rank %d", pid, t.Nspace, len(t.Procs), p.Rank)
		case seen[p.Rank]:
			return mpir.Table{}, fmt.Errorf("pid %d: the PMIx job %s lists rank %d twice", pid, t.Nspace, p.Rank)
		case p.Pid <= 0:
			return mpir.Table{}, fmt.Errorf("pid %d: the PMIx job %s gives rank %d on %s no pid (PRRTE leaves ranks off its own node without one)", pid, t.Nspace, p.Rank, p.Host)
		}
		seen[p.Rank] = true
		tab.Procs[p.Rank] = mpir.Proc{Host: p.Host, Executable: p.Executable, Pid: p.Pid}
	}
	return tab, nil
}
