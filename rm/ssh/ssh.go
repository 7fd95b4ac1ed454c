// Package ssh starts debug servers on named hosts: with ssh on other hosts,
// directly on this one. It serves jobs whose processes already run where
// their starter put them (acquired through MPIR): each rank's server must
// run on its rank's host (a server per host serves all of the host's
// ranks, as rm.Spec.Layout says). The servers publish their own addresses, so the
// session directory must be on a file system that every host shares (a
// home directory, as clusters have), and the front end helps the launch.
//
// What enters: an rm.Spec, and the host of every server (Adapter.Hosts).
// What leaves: each server started on its host, and the started
// job; the routing file is the front end's to write from what the servers
// publish.
package ssh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// Adapter starts server i on Hosts[i] ("" for this machine).
type Adapter struct {
	Hosts []string
	SSH   []string // the ssh command and its options ("ssh" when empty)
	// Remote, when set, is the command line that runs a shell's script
	// on host instead of ssh (srun --overlap, for a SLURM job's nodes).
	Remote func(host, script string) []string
}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "ssh" }

// Launcher implements rm.Adapter: ssh (or Remote's command), when some
// rank is elsewhere.
func (a Adapter) Launcher() string {
	if a.Remote != nil {
		return a.Remote("", "")[0]
	}
	for _, h := range a.Hosts {
		if h != "" {
			return a.ssh()[0]
		}
	}
	return ""
}

// Routes implements rm.Adapter.
func (Adapter) Routes() routing.Source { return routing.SourcePublish }

// StartsMaster implements rm.Adapter.
func (Adapter) StartsMaster() bool { return false }

func (a Adapter) ssh() []string {
	if len(a.SSH) == 0 {
		return []string{"ssh"}
	}
	return a.SSH
}

// Start implements rm.Adapter: one shell per host starts that host's
// servers and waits for them.
func (a Adapter) Start(spec rm.Spec) (rm.Job, error) {
	if len(a.Hosts) != spec.Size {
		return nil, fmt.Errorf("ssh: %d hosts for %d servers", len(a.Hosts), spec.Size)
	}
	var order []string
	servers := map[string][]int{}
	ranks := map[string]*wire.Builder{}
	for i, h := range a.Hosts {
		if servers[h] == nil {
			order = append(order, h)
			ranks[h] = &wire.Builder{}
		}
		servers[h] = append(servers[h], i)
		ranks[h].AddSet(spec.Layout.Ranks(i))
	}
	server := spec.ServerCommand(a.Routes())
	job := &job{done: make(chan struct{})}
	for _, host := range order {
		var script strings.Builder
		if host != "" {
			script.WriteString("export")
			for _, kv := range spec.Env {
				script.WriteString(" " + text.ShellQuote(kv))
			}
			script.WriteString("; ")
		}
		for _, i := range servers[host] {
			for _, w := range server {
				script.WriteString(text.ShellQuote(w) + " ")
			}
			script.WriteString("--server=" + strconv.Itoa(i) + " & ")
		}
		script.WriteString("wait")
		argv := []string{"sh", "-c", script.String()}
		switch {
		case host != "" && a.Remote != nil:
			argv = a.Remote(host, script.String())
		case host != "":
			// -tt: the servers end with the connection (they get SIGHUP).
			argv = append(append(append([]string{}, a.ssh()...), "-tt", host), script.String())
		}
		p, err := rm.StartProcess(argv, spec.Env, spec.Log)
		if err != nil {
			job.Cancel()
			return nil, err
		}
		name := "this machine"
		if host != "" {
			name = host
		}
		job.parts = append(job.parts, part{name: fmt.Sprintf("ranks %v on %s", ranks[host].Set(), name), p: p})
	}
	go job.wait()
	return job, nil
}

type part struct {
	name string
	p    *rm.Process
}

// job is the shells of every host.
type job struct {
	parts []part
	done  chan struct{}
	err   error
}

// wait collects the hosts' ends. One host failing fails the job: the
// tree cannot come up without its ranks, so the others are cancelled.
func (j *job) wait() {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		failed bool
	)
	for _, p := range j.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.p.Wait()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !failed { // the others' ends are ours
				failed = true
				errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
				j.Cancel()
			}
		}()
	}
	wg.Wait()
	j.err = errors.Join(errs...)
	close(j.done)
}

// Done implements rm.Job.
func (j *job) Done() <-chan struct{} { return j.done }

// Wait implements rm.Job.
func (j *job) Wait() error {
	<-j.done
	return j.err
}

// Cancel implements rm.Job.
func (j *job) Cancel() {
	for _, p := range j.parts {
		p.p.Cancel()
	}
}
