package dap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// LaunchArgs are the launch request's arguments (a launch.json
// configuration of type sdm).
type LaunchArgs struct {
	Program      string            `json:"program"`      // the program every rank runs
	Args         []string          `json:"args"`         // its arguments
	Cwd          string            `json:"cwd"`          // where it runs (default: the adapter's directory)
	Env          map[string]string `json:"env"`          // added to its environment
	Ranks        int               `json:"ranks"`        // how many (default 1)
	RM           string            `json:"rm"`           // who starts the job: auto (default), local, openmpi, mpich, slurm, pe
	LauncherArgs []string          `json:"launcherArgs"` // for the launcher, before the program (--oversubscribe)
	DlopenMode   string            `json:"dlopenMode"`   // auto (default), slow, medium, fast
	StopOnEntry  bool              `json:"stopOnEntry"`  // stop every rank at main
	MPIR         bool              `json:"mpir"`         // start the program with the launcher alone and acquire its ranks through MPIR
	Queues       *bool             `json:"queues"`       // keep each rank's MPI operations in flight (sdm/queues, sdm/deadlock); default true, as sdm debug --queues
	// AllRanks (default true) has continue, next, step and pause move
	// every rank; false, the editor's selected rank alone.
	AllRanks *bool `json:"allRanks"`
	// AllThreads shows every thread of a multi-threaded rank ("rank 3 ·
	// thread 2"); by default a rank is one thread, the one its debugger
	// selected, since an MPI library's own threads would otherwise triple
	// the list.
	AllThreads bool `json:"allThreads"`
	// Debugger is gdb (default) or sim, simulated ranks with no program.
	Debugger string `json:"debugger"`
}

// AttachArgs are the attach request's arguments.
type AttachArgs struct {
	Pid        int    `json:"pid"`        // the starter (mpirun, srun) of a running job, acquired through MPIR or PMIx
	Slurm      string `json:"slurm"`      // or a SLURM job's step by its id, JOBID[.STEP], as sdm attach --slurm
	Ranks      string `json:"ranks"`      // the ranks to attach (all when empty): 0-3,7
	AllRanks   *bool  `json:"allRanks"`   // as LaunchArgs.AllRanks
	AllThreads bool   `json:"allThreads"` // as LaunchArgs.AllThreads
	// SSH is the ssh command, with options, that reaches the hosts of a
	// job whose ranks run elsewhere (sdm attach's --ssh; "ssh" by
	// default): "ssh -p 2222 -i ~/.ssh/cluster".
	SSH string `json:"ssh"`
}

// job is the job of the session, launched or attached.
type job struct {
	s        *launcher.Session
	ranks    wire.RankSet // shown as threads
	attached bool
	allRanks bool
	threads  bool   // show every thread of a multi-threaded rank
	dir      string // where the program runs, for relative source paths
	program  string
	argv     []string
	env      []string
	entry    bool // stop at main when configured
	run      bool // the program is loaded and waits for configurationDone to run
	held     bool // the ranks were acquired stopped and wait for configurationDone to go on
	repl     *repl
	state    *rankState
	pumped   chan struct{} // closed when the event pump has ended
}

// launch starts the job, loads the program in every rank, and says the
// adapter is ready for breakpoints (the initialized event); the program
// runs at configurationDone.
func (a *adapter) launch(m *godap.LaunchRequest) error {
	if a.current() != nil {
		return errors.New("a job is running already: one launch or attach per session")
	}
	var args LaunchArgs
	if err := strictJSON(m.Arguments, &args); err != nil {
		return fmt.Errorf("launch: %v", err)
	}
	if args.Program == "" {
		return errors.New("launch: no program given (\"program\": the path of the program every rank runs)")
	}
	if args.Ranks == 0 {
		args.Ranks = 1
	}
	if args.Ranks < 0 {
		return fmt.Errorf("launch: ranks %d: want a number of ranks of 1 or more", args.Ranks)
	}
	dir := args.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	o := launcher.Options{RM: args.RM, Size: args.Ranks, Program: args.Program, Dir: dir, SDM: a.opts.SDM,
		LauncherArgs: args.LauncherArgs, Queues: args.Queues == nil || *args.Queues, GDB: backend.Lazy, Log: a.opts.Log}
	if o.RM == "" {
		o.RM = "auto"
	}
	var err error
	if o.Debugger, err = backend.ParseDebugger(orDefault(args.Debugger, "gdb")); err != nil {
		return fmt.Errorf("launch: debugger %q: want gdb or sim", args.Debugger)
	}
	setting, err := dlopenSetting(args.DlopenMode)
	if err != nil {
		return err
	}
	if setting.ReportsLoads() && o.Debugger == backend.GDB {
		o.GDB = backend.Eager // only gdb sees loads
	}
	j := &job{allRanks: args.AllRanks == nil || *args.AllRanks, threads: args.AllThreads, dir: dir, program: args.Program,
		argv: args.Args, env: envList(args.Env), entry: args.StopOnEntry}
	a.output("console", fmt.Sprintf("sdm: starting %d ranks of %s (rm %s)\n", args.Ranks, args.Program, o.RM))
	if args.MPIR {
		m := launcher.MPIR{Argv: append([]string{args.Program}, args.Args...)}
		s, acquired, err := launcher.Acquire(a.ctx, o, m)
		if err != nil {
			return fmt.Errorf("launch: %v", err)
		}
		j.s, j.ranks, j.held = s, acquired.Ranks, true
		j.state = newRankState(j.ranks)
	} else {
		s, err := launcher.Launch(a.ctx, o)
		if err != nil {
			return fmt.Errorf("launch: %v", err)
		}
		j.s, j.ranks = s, wire.All(s.Size())
		j.state = newRankState(j.ranks)
		if err := s.Load(a.ctx, append([]string{j.program}, j.argv...), j.env, j.dir, o.Queues, a.opts.Timeout); err != nil {
			s.End(a.opts.Timeout)
			return fmt.Errorf("launch: %v", err)
		}
		j.run = true
	}
	if err := a.dlopen(j, setting); err != nil {
		j.s.End(a.opts.Timeout)
		return fmt.Errorf("launch: %v", err)
	}
	a.start(j)
	a.send(&godap.LaunchResponse{Response: ok(m.Request)})
	return a.send(&godap.InitializedEvent{Event: godap.Event{Event: "initialized"}})
}

// attach takes over a running job through its starter's MPIR table,
// leaving its ranks running.
func (a *adapter) attach(m *godap.AttachRequest) error {
	if a.current() != nil {
		return errors.New("a job is running already: one launch or attach per session")
	}
	var args AttachArgs
	if err := strictJSON(m.Arguments, &args); err != nil {
		return fmt.Errorf("attach: %v", err)
	}
	mp := launcher.MPIR{Pid: args.Pid, Slurm: args.Slurm}
	if err := mp.CheckRunning(launcher.Given{Pid: args.Pid != 0, Slurm: args.Slurm != ""}); err != nil {
		return fmt.Errorf("attach: %v (\"pid\": the process id of the job's starter, mpirun or srun; or \"slurm\": a SLURM job's id)", err)
	}
	if args.Ranks != "" {
		var err error
		if mp.Ranks, err = wire.ParseRankSet(args.Ranks); err != nil {
			return fmt.Errorf("attach: ranks %q: %v", args.Ranks, err)
		}
	}
	o := launcher.Options{RM: "auto", Debugger: backend.GDB, GDB: backend.Lazy, SDM: a.opts.SDM, Log: a.opts.Log, SSH: orDefault(args.SSH, "ssh")}
	if args.Slurm != "" {
		a.output("console", fmt.Sprintf("sdm: attaching to SLURM job %s\n", args.Slurm))
	} else {
		a.output("console", fmt.Sprintf("sdm: attaching to the job of process %d\n", args.Pid))
	}
	s, acquired, err := launcher.Acquire(a.ctx, o, mp)
	if err != nil {
		return fmt.Errorf("attach: %v", err)
	}
	dir, _ := os.Getwd()
	j := &job{s: s, ranks: acquired.Ranks, attached: true, allRanks: args.AllRanks == nil || *args.AllRanks, threads: args.AllThreads, dir: dir}
	j.state = newRankState(j.ranks)
	for _, g := range acquired.Answers {
		// The ranks of a running job run on once attached.
		if at, err := op.Attach.DecodeAnswer(g.Body); err == nil && g.Status == wire.StatusOK && at.State.State == wire.StateRunning {
			j.state.ran(g.Ranks)
		}
	}
	if err := a.dlopen(j, dlopen.Default()); err != nil {
		s.End(a.opts.Timeout)
		return fmt.Errorf("attach: %v", err)
	}
	a.start(j)
	a.send(&godap.AttachResponse{Response: ok(m.Request)})
	return a.send(&godap.InitializedEvent{Event: godap.Event{Event: "initialized"}})
}

// dlopen gives every rank the session's dlopen setting.
func (a *adapter) dlopen(j *job, setting dlopen.Setting) error {
	warnings, err := j.s.SetDlopen(a.ctx, setting, a.opts.Timeout)
	for _, w := range warnings {
		a.output("console", w+"\n")
	}
	return err
}

// start makes j the session's job and starts reading its events.
func (a *adapter) start(j *job) {
	j.pumped = make(chan struct{})
	j.repl = newRepl(a, j)
	a.mu.Lock()
	a.job = j
	a.mu.Unlock()
	go a.pump(j)
	go j.repl.con.PrintEvents(a.ctx)
}

// current is the session's job, nil before launch or attach.
func (a *adapter) current() *job {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.job
}

// running is the session's job, or the error of a request that needs one.
func (a *adapter) running() (*job, error) {
	if j := a.current(); j != nil {
		return j, nil
	}
	return nil, errors.New("no job yet: launch or attach first")
}

// configurationDone runs the launched program, to main first when the
// launch asked to stop on entry.
func (a *adapter) configurationDone(m *godap.ConfigurationDoneRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	if a.configured {
		return errors.New("configurationDone came twice")
	}
	a.configured = true
	if j.held && j.entry {
		a.send(&godap.ConfigurationDoneResponse{Response: ok(m.Request)})
		return a.send(&godap.StoppedEvent{Event: godap.Event{Event: "stopped"}, Body: godap.StoppedEventBody{
			Reason: "entry", ThreadId: j.ranks.Min() + 1, AllThreadsStopped: true, Text: "acquired through MPIR, every rank stopped"}})
	}
	if j.held {
		groups, err := a.setGoing(j, j.ranks, wire.OpCont, nil)
		if err != nil {
			return err
		}
		if err := wire.Failures(groups, "continue", nil); err != nil {
			return err
		}
	}
	if j.run {
		if j.entry {
			groups, err := j.s.Command(a.ctx, j.ranks, wire.OpBreak, wire.MustEncode(wire.Break{Location: "main", Temporary: true}), a.opts.Timeout)
			if err != nil {
				return err
			}
			if err := wire.Failures(groups, "break main", nil); err != nil {
				return err
			}
			j.state.entry(groups)
		}
		groups, err := a.setGoing(j, j.ranks, wire.OpRun, nil)
		if err != nil {
			return err
		}
		if err := wire.Failures(groups, "run", nil); err != nil {
			return err
		}
	}
	return a.send(&godap.ConfigurationDoneResponse{Response: ok(m.Request)})
}

// terminate ends a launched job and lets an attached one go.
func (a *adapter) terminate(m *godap.TerminateRequest) error {
	if _, err := a.running(); err != nil {
		return err
	}
	err := a.endJob(true)
	a.send(&godap.TerminateResponse{Response: ok(m.Request)})
	return err
}

// disconnect ends the session: a launched job ends, an attached one goes
// on (terminateDebuggee: true ends it too).
func (a *adapter) disconnect(m *godap.DisconnectRequest) error {
	var err error
	if a.current() != nil {
		kill := m.Arguments != nil && m.Arguments.TerminateDebuggee
		err = a.endJob(kill)
	}
	a.send(&godap.DisconnectResponse{Response: ok(m.Request)})
	return err
}

// endJob ends the session's job, once: a launched job's ranks end with
// their debuggers, an attached job's are let go unless kill. It waits
// for the event pump, which says terminated.
func (a *adapter) endJob(kill bool) error {
	a.mu.Lock()
	j := a.job
	a.mu.Unlock()
	if j == nil || !j.state.end() {
		return nil
	}
	if kill && j.attached {
		ctx, cancel := context.WithTimeout(context.Background(), a.opts.Timeout)
		j.s.Command(ctx, j.ranks, wire.OpKill, nil, a.opts.Timeout)
		cancel()
	}
	err := j.s.End(a.opts.Timeout)
	select {
	case <-j.pumped:
	case <-time.After(a.opts.Timeout):
	}
	if err != nil {
		return fmt.Errorf("ending the job: %v", err)
	}
	return nil
}

// strictJSON decodes a request's arguments, refusing fields that sdm
// does not know, so that a misspelt setting is an error, not ignored.
func strictJSON(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	// Editors add fields of their own (type, request, name, __...):
	// those are theirs, not sdm's mistakes.
	for _, k := range []string{"type", "request", "name", "presentation", "preLaunchTask", "postDebugTask", "internalConsoleOptions", "debugServer", "noDebug"} {
		delete(fields, k)
	}
	for k := range fields {
		if strings.HasPrefix(k, "__") {
			delete(fields, k)
		}
	}
	clean, _ := json.Marshal(fields)
	d := json.NewDecoder(strings.NewReader(string(clean)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}

// dlopenSetting is the setting a launch's dlopenMode names.
func dlopenSetting(mode string) (dlopen.Setting, error) {
	s := dlopen.Default()
	if mode == "" {
		return s, nil
	}
	m, err := dlopen.ParseMode(mode)
	if err != nil {
		return s, fmt.Errorf("launch: dlopenMode: %v", err)
	}
	s.Mode = m
	return s, nil
}

// envList is env as NAME=VALUE pairs, in name order.
func envList(env map[string]string) []string {
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// sourcePath is where an editor finds a frame's file: as gdb gave it
// when absolute, else under the job's directory or the program's.
func (j *job) sourcePath(file string) string {
	if file == "" || filepath.IsAbs(file) {
		return file
	}
	program := j.program
	if !filepath.IsAbs(program) {
		program = filepath.Join(j.dir, program)
	}
	for _, dir := range []string{j.dir, filepath.Dir(program)} {
		if p := filepath.Join(dir, file); fileExists(p) {
			return p
		}
	}
	return file
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
