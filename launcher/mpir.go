package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/rm/slurm"
	"github.com/sdm-hpc/sdm/rm/ssh"
	"github.com/sdm-hpc/sdm/wire"
)

// MPIR says how to acquire a job through MPIR instead of starting it with
// a server wrapped around every rank.
type MPIR struct {
	// Pid is a running starter to attach to; 0 launches one.
	Pid int
	// Procs, or the descendants of Ancestor, are the ranks of a running
	// job on this host whose starter has no MPIR (MPICH's mpiexec): the
	// table is made from /proc, each rank's number from its environment
	// (routing.IndexEnv), or the order of Procs when none has one. There
	// is no starter to hold or release.
	Procs    []int
	Ancestor int
	// Slurm is a SLURM job step, JOBID[.STEP] (its newest running step
	// when none is given), whose tasks are the ranks: found, and their
	// servers started, through SLURM itself (srun --overlap), from any
	// host with its commands.
	Slurm string
	// Argv, for a launch, is the program and its arguments, started by the
	// launcher of Options.RM (mpirun -np N …); with Starter, it is the
	// starter's whole command line instead.
	Argv    []string
	Starter bool
	// Ranks are the ranks to attach (all when empty); fewer than all
	// needs a starter with MPIR_partial_attach_ok.
	Ranks wire.RankSet
	// ServerPerRank starts a server beside every rank instead of one per
	// host serving all of the host's ranks.
	ServerPerRank bool
	// Stop leaves the ranks stopped after attaching to a running job. A
	// launched job always waits for the user's first command.
	Stop bool
	// Output gets what a launched starter writes (its ranks' output,
	// for mpirun and srun), besides the session's log.
	Output io.Writer
	// Lines, when set, gets the same a line at a time, each with the rank
	// that the starter's label names: a launcher that can label its ranks'
	// output (rm.Labeller) is asked to.
	Lines func(StarterLine)
}

// StarterLine is a line that a launched starter wrote.
type StarterLine struct {
	// Rank is the rank that the line's label names, or -1 for a line
	// without one (the starter's own, or any line of a starter that does
	// not label its ranks' output).
	Rank         int
	Stream, Text string // the text without its label and line end
}

// Acquired is what the starter told and the ranks answered.
type Acquired struct {
	Table   mpir.Table
	Ranks   wire.RankSet // the ranks attached
	Answers []wire.Group // of attach: where each rank was, its MPIR_dll_name
	// Again is what names the running job to sdm attach again ("--pid
	// 4242", "--slurm 12.0"), "" where there is no such name.
	Again string
}

// Acquire takes over a job through MPIR: it launches its starter under
// MPIR (or reads the table of a running one), starts a rank server beside
// every rank, on the rank's host, and has each server's gdb attach to its
// rank. The starter goes on once every rank is held. Whatever fails, the
// job is left as it was found (attach), or ended (launch): nothing stays
// stopped or traced.
func Acquire(ctx context.Context, o Options, m MPIR) (*Session, *Acquired, error) {
	if o.Target != "" {
		return nil, nil, errors.New("MPIR acquisition runs the starter on this machine: --target does not apply")
	}
	if o.Debugger != backend.GDB {
		return nil, nil, errors.New("MPIR acquisition needs the gdb backend")
	}
	o = o.defaulted()
	progress := o.progress()
	dir, err := wire.SessionDir("")
	if err != nil {
		return nil, nil, err
	}
	again := origin{o: o, m: &m}
	switch {
	case m.Pid != 0:
		again = origin{refusal: attachRefusal(m.Pid)}
	case m.Slurm != "":
		again = origin{refusal: slurmRefusal(m.Slurm)}
	}
	o.sessionDir = dir
	a := &acquisition{o: o, m: m, dir: dir}
	s, err := a.run(ctx, progress)
	if err != nil {
		if s == nil {
			a.undo()
			if a.job == nil && !logsKept(err, dir) {
				os.RemoveAll(dir)
			}
		}
		return nil, nil, err
	}
	again.launcher, again.held = a.launcher, a.result.Table.Via
	s.origin = again
	return s, &a.result, nil
}

// acquisition is one Acquire on its way.
type acquisition struct {
	o      Options
	m      MPIR
	dir    string
	held   *mpir.Starter // a launched starter in MPIR_Breakpoint
	job    *rm.Process   // the launched starter's process
	result Acquired
	found  wire.RankSet // the ranks of a table made from /proc
	step   *slurm.Step  // the SLURM step whose tasks are the ranks
	rm     string       // the adapter that launched the starter
	// launcher names the launched starter, as Session.Launcher does.
	launcher string
}

// launch says whether the acquisition starts the job, rather than taking
// one that runs.
func (a *acquisition) launch() bool {
	return a.m.Pid == 0 && len(a.m.Procs) == 0 && a.m.Ancestor == 0 && a.m.Slurm == ""
}

func (a *acquisition) run(ctx context.Context, progress func(Progress)) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, a.o.ConnectTimeout)
	defer cancel()
	if err := a.starter(ctx, progress); err != nil {
		return nil, err
	}
	o, pids, err := a.servers(ctx, progress)
	if err != nil {
		return nil, err
	}
	tab, n, ranks := a.result.Table, len(a.result.Table.Procs), a.result.Ranks
	s, err := Launch(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start the rank servers: %w", err)
	}
	s.mpir = a
	// A starter that is one of the ranks is let go first, stopped, for
	// its rank's debugger.
	starterRank := a.held != nil && !tab.IAmStarter && ranks.Contains(0) && tab.Procs[0].Pid == tab.Starter
	if starterRank {
		err := a.held.ReleaseStopped()
		a.held = nil
		if err != nil {
			return s, a.fail(s, err)
		}
	}
	// Only a job acquired as it starts is held before main: a running
	// one is long past it.
	launched := a.launch()
	body := wire.MustEncode(wire.Attach{Pids: pids, PreMain: tab.AcquiredPreMain && launched, Stop: launched || a.m.Stop, Kill: launched})
	groups, err := s.Command(ctx, wire.All(n), wire.OpAttach, body, time.Until(deadline(ctx)))
	if err != nil {
		return s, a.fail(s, fmt.Errorf("attach the ranks: %w", err))
	}
	if err := wire.Failures(groups, "attach", a.where); err != nil {
		return s, a.fail(s, err)
	}
	a.result.Answers = groups
	if a.held != nil {
		err := a.held.Release()
		a.held = nil
		if err != nil {
			return s, a.fail(s, err)
		}
	}
	if a.job != nil {
		a.job.Watch()
		s.Starter = a.job
	}
	return s, nil
}

// servers checks the ranks asked for against the starter's table and
// says how to start a server beside each: the options, and the pid each
// server's debugger attaches to (0 for a rank left alone).
func (a *acquisition) servers(ctx context.Context, progress func(Progress)) (Options, []int, error) {
	tab := a.result.Table
	n := len(tab.Procs)
	ranks, have := a.m.Ranks, wire.All(n)
	if !a.found.Empty() {
		have = a.found
	}
	if ranks.Count() == 0 {
		ranks = have
	}
	if extra := ranks.Minus(wire.All(n)); !extra.Empty() {
		return Options{}, nil, fmt.Errorf("ranks %v: the job has ranks 0-%d only", extra, n-1)
	}
	if missing := ranks.Minus(have); !missing.Empty() {
		return Options{}, nil, fmt.Errorf("ranks %v: not found on this host", missing)
	}
	if ranks.Count() < n && !tab.PartialAttachOK {
		return Options{}, nil, fmt.Errorf("%s (pid %d) has no MPIR_partial_attach_ok: attach all %d ranks, not %v", a.starterName(), tab.Starter, n, ranks)
	}
	a.result.Ranks = ranks
	pids := make([]int, n)
	ranks.Each(func(r int) bool {
		pids[r] = tab.Procs[r].Pid
		return true
	})
	o := a.o
	o.Size, o.Program, o.Adapter = n, "", local.Adapter{}
	hosts, serverHosts, layout := a.placement()
	if !a.m.ServerPerRank {
		o.Layout, hosts = layout, serverHosts
	}
	switch {
	case a.step != nil:
		o.Adapter = ssh.Adapter{Hosts: hosts, Remote: a.overlap}
	case slices.ContainsFunc(hosts, func(h string) bool { return h != "" }):
		o.Adapter = ssh.Adapter{Hosts: hosts, SSH: strings.Fields(o.SSH)}
	}
	o.ConnectTimeout = time.Until(deadline(ctx))
	o.Progress = func(p Progress) {
		if p.Stage != StageUsing { // the servers' adapter is no news
			progress(p)
		}
	}
	return o, pids, nil
}

// placement says where the servers run: each rank's host ("" for this
// one), and with a server per host, each server's host and its ranks
// (hosts in the order of their first rank).
func (a *acquisition) placement() (rankHosts, serverHosts []string, layout wire.Layout) {
	procs := a.result.Table.Procs
	rankHosts = make([]string, len(procs))
	server := map[string]int{}
	var sets []wire.Builder
	for r, p := range procs {
		i, known := server[p.Host]
		if !known {
			i = len(sets)
			server[p.Host] = i
			sets = append(sets, wire.Builder{})
			h := p.Host
			if isLocal(h) && a.step == nil { // a SLURM job's servers run through srun, on every node
				h = ""
			}
			serverHosts = append(serverHosts, h)
		}
		rankHosts[r] = serverHosts[i]
		sets[i].Add(r)
	}
	layout = make(wire.Layout, len(sets))
	for i := range sets {
		layout[i] = sets[i].Set()
	}
	return rankHosts, serverHosts, layout
}

// starter launches the starter, or reads the running one's table, or
// makes one from /proc.
func (a *acquisition) starter(ctx context.Context, progress func(Progress)) error {
	switch {
	case a.m.Slurm != "":
		return a.slurmTable(ctx, progress)
	case a.m.Pid != 0:
		tab, err := mpir.Attach(ctx, a.m.Pid)
		if errors.Is(err, mpir.ErrNotStarter) {
			tab, err = a.pmixTable(ctx, err)
		}
		if err != nil {
			return err
		}
		a.result.Table, a.result.Again = tab, fmt.Sprintf("--pid %d", a.m.Pid)
		progress(Progress{Stage: StageAcquired, Done: len(tab.Procs), Total: len(tab.Procs), Text: describeTable(tab)})
		return nil
	case !a.launch():
		tab, found, note, err := procTable(a.m.Procs, a.m.Ancestor)
		if err != nil {
			return err
		}
		a.result.Table, a.found = tab, found
		progress(Progress{Stage: StageAcquired, Done: found.Count(), Total: len(tab.Procs), Text: note})
		return nil
	}
	argv, env, unlabel, err := a.command(progress)
	if err != nil {
		return err
	}
	progress(Progress{Stage: StageStarting, Text: strings.Join(argv, " ")})
	env = append(env, SessionEnv+"="+a.dir)
	log := filepath.Join(a.dir, "starter.log")
	out := a.m.Output
	var lines *lineWriter
	if a.m.Lines != nil {
		lines = &lineWriter{unlabel: unlabel, to: a.m.Lines}
		if out == nil {
			out = lines
		} else {
			out = io.MultiWriter(out, lines)
		}
	}
	held, err := mpir.Launch(ctx, func(attr *syscall.SysProcAttr) (int, error) {
		p, err := rm.StartProcessWith(argv, env, log, rm.ProcessOptions{Attr: attr, Output: out})
		if err != nil {
			return 0, err
		}
		a.job = p
		return p.Pid(), nil
	})
	if ns := (*mpir.NotStarterError)(nil); errors.As(err, &ns) && prrte(ns.Name, a.rm) {
		// Open MPI 5's mpirun (PRRTE) has no MPIR: it holds the ranks
		// itself, stopped at their exec, and writes their table.
		a.job.Watch()
		<-a.job.Done()
		if lines != nil && lines.unlabel != nil {
			lines.unlabel = spaced(lines.unlabel)
		}
		progress(Progress{Stage: StageStarting, Text: filepath.Base(argv[0]) + " has no MPIR (Open MPI 5): its ranks are held at exec (--stop-on-exec) instead"})
		return a.heldAtExec(ctx, argv, env, log, out, progress)
	}
	if err != nil {
		return a.starterFailed(err)
	}
	a.held = held
	a.result.Table = held.Table
	progress(Progress{Stage: StageAcquired, Done: len(held.Table.Procs), Total: len(held.Table.Procs), Text: describeTable(held.Table)})
	return nil
}

// command is the starter's command line, and how to read the rank
// labels of its output when the launcher was asked for them (nil: no
// labels). A starter's own command line is run as given.
func (a *acquisition) command(progress func(Progress)) (argv, env []string, unlabel unlabelFunc, err error) {
	if len(a.m.Argv) == 0 {
		return nil, nil, nil, errors.New("no program given")
	}
	if a.m.Starter {
		a.launcher = filepath.Base(a.m.Argv[0])
		return a.m.Argv, nil, nil, nil
	}
	o := a.o
	o.Program = a.m.Argv[0]
	adapter, why, args, err := Choose(o)
	if err != nil {
		return nil, nil, nil, err
	}
	a.rm = adapter.Name()
	progress(using(adapter, why))
	c, ok := adapter.(rm.Commander)
	if !ok {
		return nil, nil, nil, fmt.Errorf("--rm %s has no launcher to start the job under MPIR: use openmpi or slurm, or give the starter's own command line", adapter.Name())
	}
	if l, ok := adapter.(rm.Labeller); ok {
		args = append(args, l.LabelArgs(args)...)
		unlabel = l.Unlabel
	}
	argv, env = c.Command(rm.Spec{Size: a.o.Size, Launcher: a.o.Launcher, LauncherArgs: args}, a.m.Argv)
	a.launcher = launcherName(adapter, a.o.Launcher)
	return argv, env, unlabel, nil
}

// starterFailed explains a launch that did not reach the table, in the
// starter's own words where it has some.
func (a *acquisition) starterFailed(err error) error {
	if errors.Is(err, mpir.ErrNotStarter) && a.rm == "mpich" {
		err = fmt.Errorf("%w; MPICH's mpiexec has no MPIR: start the job without --mpir, or run it yourself and attach with sdm attach --starter PID", err)
	}
	if a.job == nil {
		return err
	}
	a.job.Watch()
	select {
	case <-a.job.Done():
	case <-time.After(rm.Grace):
		a.job.Cancel()
		<-a.job.Done()
	}
	var abort *mpir.AbortError
	if jerr := a.job.Wait(); jerr != nil && !errors.As(err, &abort) && !errors.Is(err, mpir.ErrNotStarter) {
		return fmt.Errorf("%w: %v", err, jerr)
	}
	return err
}

// fail undoes a session that came up but could not take the job: its
// servers let go of what they attached (killing nothing), the starter is
// let go as it was (attach) or killed with its job (launch).
func (a *acquisition) fail(s *Session, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Quit(ctx, 10*time.Second)
	for _, job := range []rm.Job{s.Job, s.Master} {
		if job != nil {
			select {
			case <-job.Done():
			case <-ctx.Done():
				job.Cancel()
			}
		}
	}
	a.undo()
	return keptLogs(err, a.dir)
}

// undo lets go of the starter: a held one is killed with its job, an
// attached one is told the debugger is gone.
func (a *acquisition) undo() {
	if a.held != nil {
		a.held.Kill()
		a.held = nil
	}
	if a.job != nil {
		a.job.Watch()
		a.job.Cancel()
		<-a.job.Done()
	}
	if a.m.Pid != 0 && a.result.Table.Via == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		mpir.Forget(ctx, a.m.Pid)
	}
}

func (a *acquisition) starterName() string {
	if !a.launch() || len(a.m.Argv) == 0 {
		return "the starter"
	}
	return filepath.Base(a.m.Argv[0])
}

// where says which processes ranks are: pids and hosts, briefly.
func (a *acquisition) where(ranks wire.RankSet) string {
	var parts []string
	ranks.Each(func(r int) bool {
		if len(parts) == 3 {
			parts = append(parts, "…")
			return false
		}
		p := a.result.Table.Procs[r]
		parts = append(parts, fmt.Sprintf("pid %d on %s", p.Pid, p.Host))
		return true
	})
	return strings.Join(parts, ", ")
}

// describeTable says in a line what a starter told.
func describeTable(t mpir.Table) string {
	var notes []string
	if !t.IAmStarter {
		notes = append(notes, "no MPIR_i_am_starter")
	}
	if t.PartialAttachOK {
		notes = append(notes, "partial attach ok")
	}
	if t.AcquiredPreMain {
		notes = append(notes, "acquired before main")
	}
	if t.DLLName != "" {
		notes = append(notes, "MPIR_dll_name "+t.DLLName)
	}
	how := "MPIR in " + t.Object
	if t.Via != "" {
		how = t.Via
	}
	text := fmt.Sprintf("%d ranks from pid %d (%s)", len(t.Procs), t.Starter, how)
	if t.Starter == 0 {
		text = fmt.Sprintf("%d ranks (%s)", len(t.Procs), how)
	}
	if len(notes) > 0 {
		text += "; " + strings.Join(notes, ", ")
	}
	return text
}

// isLocal says whether a proctable host is this machine.
func isLocal(host string) bool {
	if host == "" || host == "localhost" {
		return true
	}
	me, _ := os.Hostname()
	short := func(h string) string { h, _, _ = strings.Cut(h, "."); return h }
	if host == me || short(host) == short(me) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return false
	}
	addrs, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IP.IsLoopback() {
			return true
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip.IP) {
				return true
			}
		}
	}
	return false
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
