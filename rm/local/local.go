package local

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/internal/handover"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// Adapter is the built-in local launcher.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "local" }

// Launcher implements rm.Adapter: none, sdm starts the processes itself.
func (Adapter) Launcher() string { return "" }

// Routes implements rm.Adapter: the adapter writes the routing file.
func (Adapter) Routes() routing.Source { return routing.SourceFile }

// StartsMaster implements rm.Adapter.
func (Adapter) StartsMaster() bool { return true }

// Start implements rm.Adapter.
func (Adapter) Start(spec rm.Spec) (rm.Job, error) { return Start(spec) }

// Job is a running local job.
type Job struct {
	procs  []*proc
	layout bool   // servers stand for several ranks each
	log    string // where the processes write
	dir    string
	done   chan struct{}
	err    error
}

type proc struct {
	cmd *exec.Cmd
}

// starters is how many processes are started at once: fork and exec wait
// on the kernel, and two in flight keep both cores of a small node busy.
const starters = 2

// Start writes the routing file and the master file into spec.Dir and
// starts the master and spec.Size servers, their standard error in one
// file, spec.Log: creating a thousand files costs more than starting
// the thousand servers.
func Start(spec rm.Spec) (*Job, error) {
	if spec.Size < 1 {
		return nil, fmt.Errorf("local: need at least one rank, got %d", spec.Size)
	}
	listeners, err := listen(spec)
	defer func() {
		for _, ln := range listeners {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	master, err := spec.MasterCommand()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	logFile, err := os.OpenFile(spec.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	defer logFile.Close()

	server := spec.ServerCommand(routing.SourceFile)[1:]
	// procs[i] is rank i; the master is procs[Size].
	job := &Job{procs: make([]*proc, spec.Size+1), layout: spec.Layout != nil, log: spec.Log, dir: spec.Dir, done: make(chan struct{})}
	launch := func(i int) error {
		if i == spec.Size {
			p, err := startProc(spec, "master", logFile, listeners[i], master[1:])
			job.procs[i] = p
			return err
		}
		r := strconv.Itoa(i)
		args := append(append([]string{}, server...), "--server="+r)
		name := "rank " + r
		if spec.Layout != nil {
			name = "server " + r
		}
		p, err := startProc(spec, name, logFile, listeners[i], args)
		job.procs[i] = p
		return err
	}
	err = startAll(spec.Size, launch)
	go job.wait()
	if err != nil {
		job.Cancel()
		job.Wait()
		return nil, err
	}
	return job, nil
}

// listen binds a loopback port for every server and the master (the
// last), and writes their routing file and master file. The listeners
// bound are returned even with an error, to be closed.
func listen(spec rm.Spec) ([]*net.TCPListener, error) {
	listeners := make([]*net.TCPListener, spec.Size+1)
	entries := make([]routing.Entry, spec.Size+1)
	for i := range listeners {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return listeners, fmt.Errorf("local: listen for rank %d: %w", i, err)
		}
		listeners[i] = ln
		entries[i] = routing.Entry{Index: i, Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port}
	}
	table, err := routing.NewTable(entries[:spec.Size])
	if err != nil {
		return listeners, err
	}
	return listeners, routing.Write(spec.RoutingFile(), table, &entries[spec.Size])
}

// startAll starts processes 0..size (size is the master) with launch,
// starters at a time, the master first: it is the one everybody waits
// for. A worker stops at its first failure.
func startAll(size int, launch func(int) error) error {
	errs := make([]error, starters)
	var wg sync.WaitGroup
	for w := range starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := size - w; i >= 0 && errs[w] == nil; i -= starters {
				errs[w] = launch(i)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func startProc(spec rm.Spec, name string, logFile *os.File, ln *net.TCPListener, args []string) (*proc, error) {
	f, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", name, err)
	}
	defer f.Close()
	cmd := exec.Command(spec.ServerExe(), args...)
	cmd.Env = append(append(os.Environ(), spec.Env...), handover.ListenFDEnv+"=3")
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && spec.Layout == nil {
		// A server of one rank mostly waits for its links and its
		// debugger, and a thousand of them share this machine: one
		// processor each keeps the Go scheduler from spinning on idle ones,
		// which cuts the CPU of a bring-up by a third. (A server of a
		// host's ranks samples them all at once: it keeps every processor.)
		// The server takes the setting back out of its environment so that
		// the debugged program never sees it.
		cmd.Env = append(cmd.Env, "GOMAXPROCS=1", handover.GOMAXPROCSEnv+"=1")
	}
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = logFile
	// A process group of its own keeps a ^C at the terminal away from the
	// servers: the front end ends the session in order instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local: start %s: %w", name, err)
	}
	return &proc{cmd: cmd}, nil
}

// Process returns the process of rank (or, for rank == Size, the master),
// or nil when there is none.
func (j *Job) Process(rank int) *os.Process {
	if rank < 0 || rank >= len(j.procs) || j.procs[rank] == nil {
		return nil
	}
	return j.procs[rank].cmd.Process
}

// Done implements rm.Job.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait implements rm.Job: it reports each process that failed, with the
// log that tells why.
func (j *Job) Wait() error {
	<-j.done
	return j.err
}

func (j *Job) wait() {
	ends := make([]ending, len(j.procs))
	var mu sync.Mutex
	order := 0
	var wg sync.WaitGroup
	for i, p := range j.procs {
		if p == nil {
			continue
		}
		wg.Go(func() {
			err := p.cmd.Wait()
			mu.Lock()
			defer mu.Unlock()
			order++
			ends[i] = ending{server: i, err: err, order: order}
		})
	}
	wg.Wait()
	j.err = summary(ends, len(j.procs)-1, j.layout, j.log)
	close(j.done)
}

// Cancel implements rm.Job: SIGTERM to every process, SIGKILL to those
// still there after a grace period.
func (j *Job) Cancel() {
	for _, p := range j.procs {
		if p != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	// Kill after a grace period is safe even for processes that exited:
	// os.Process refers to them by pidfd, never by a recycled pid.
	time.AfterFunc(rm.Grace, func() {
		for _, p := range j.procs {
			if p != nil {
				p.cmd.Process.Kill()
			}
		}
	})
}
