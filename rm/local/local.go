// Package local is the built-in launcher: it starts the master and one
// rank server per rank as processes on this machine. It binds every
// server's listening socket itself and hands it down, so the routing file
// is complete before any server starts, no port can be taken in between,
// and start order does not matter.
package local

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// ListenFDEnv names the variable that tells a server which inherited file
// descriptor is its listening socket.
const ListenFDEnv = "SDM_LISTEN_FD"

// Program environment every rank sees.
const (
	RankEnv = "SDM_RANK"
	SizeEnv = "SDM_SIZE"
)

// Job is a running local job.
type Job struct {
	procs []*proc
	dir   string
}

type proc struct {
	name string // "rank 3" or "master"
	log  string
	cmd  *exec.Cmd
}

// Start writes the routing file and the master file into spec.Dir and
// starts the master and spec.Size servers. Their standard error goes to
// rank-N.log and master.log in spec.Dir.
func Start(spec rm.Spec) (*Job, error) {
	if spec.Size < 1 {
		return nil, fmt.Errorf("local: need at least one rank, got %d", spec.Size)
	}
	listeners := make([]*net.TCPListener, spec.Size+1)
	defer func() {
		for _, ln := range listeners {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	entries := make([]routing.Entry, spec.Size)
	for i := range listeners {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, fmt.Errorf("local: listen for rank %d: %w", i, err)
		}
		listeners[i] = ln
		if i < spec.Size {
			entries[i] = routing.Entry{Index: i, Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port}
		}
	}
	table, err := routing.NewTable(entries)
	if err != nil {
		return nil, err
	}
	master := routing.Entry{Index: spec.Size, Host: "127.0.0.1", Port: listeners[spec.Size].Addr().(*net.TCPAddr).Port}
	if err := routing.WriteMaster(spec.RoutingFile(), master); err != nil {
		return nil, err
	}
	if err := routing.WriteFile(spec.RoutingFile(), table); err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(spec.Client)
	if err != nil {
		return nil, fmt.Errorf("local: session address %q: %w", spec.Client, err)
	}
	common := []string{"--routing_file=" + spec.RoutingFile(), "--fanout=" + strconv.Itoa(spec.Fanout), "--key-file=" + spec.KeyFile}
	job := &Job{dir: spec.Dir}
	start := func(name, logName string, ln *net.TCPListener, env []string, args ...string) error {
		p, err := startProc(spec, name, filepath.Join(spec.Dir, logName), ln, env, args)
		if err != nil {
			job.Cancel()
			return err
		}
		job.procs = append(job.procs, p)
		return nil
	}
	if err := start("master", "master.log", listeners[spec.Size], nil,
		append(common, "--master", "--host="+host, "--port="+port)...); err != nil {
		return nil, err
	}
	size := strconv.Itoa(spec.Size)
	for i := 0; i < spec.Size; i++ {
		r := strconv.Itoa(i)
		env := []string{RankEnv + "=" + r, SizeEnv + "=" + size}
		args := append(append(append([]string{}, common...), "--server="+r), spec.ServerArgs...)
		if err := start("rank "+r, "rank-"+r+".log", listeners[i], env, args...); err != nil {
			return nil, err
		}
	}
	return job, nil
}

func startProc(spec rm.Spec, name, logPath string, ln *net.TCPListener, env, args []string) (*proc, error) {
	f, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", name, err)
	}
	defer f.Close()
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(spec.SDM, args...)
	cmd.Env = append(append(append(os.Environ(), spec.Env...), env...), ListenFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = logFile
	// A process group of its own keeps a ^C at the terminal away from the
	// servers: the front end ends the session in order instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local: start %s: %w", name, err)
	}
	return &proc{name: name, log: logPath, cmd: cmd}, nil
}

// Process returns the process of rank (or, for rank == Size, the master),
// or nil when there is none.
func (j *Job) Process(rank int) *os.Process {
	if rank < 0 || rank >= len(j.procs) {
		return nil
	}
	// procs holds the master first, then the ranks in order.
	if rank == len(j.procs)-1 {
		return j.procs[0].cmd.Process
	}
	return j.procs[rank+1].cmd.Process
}

// Wait implements rm.Job: it waits for every process and reports each that
// failed, with the log that tells why.
func (j *Job) Wait() error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, p := range j.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.cmd.Wait(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %v (see %s)", p.name, err, p.log))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Cancel implements rm.Job: SIGTERM to every process, SIGKILL to those
// still there after a grace period.
func (j *Job) Cancel() {
	for _, p := range j.procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	// Kill after a grace period is safe even for processes that exited:
	// os.Process refers to them by pidfd, never by a recycled pid.
	time.AfterFunc(3*time.Second, func() {
		for _, p := range j.procs {
			p.cmd.Process.Kill()
		}
	})
}
