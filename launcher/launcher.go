// Package launcher is the front end's side of starting a debug job: it
// picks the resource-manager adapter, checks that everything the job needs
// is there before submitting it, makes the session key and the private
// session directory, binds the session port, submits the job, helps the
// launch where the adapter needs it (routing file and master), and waits
// until every rank has joined the tree. What comes out is a
// client.Session ready for commands.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// SessionEnv names the session directory in the environment of every
// process of a session.
const SessionEnv = "SDM_SESSION"

// Options describe a debug job to launch.
type Options struct {
	RM       string // resource manager: local (default), openmpi, mpich, slurm, pe or auto
	Size     int    // number of ranks
	Fanout   int    // tree shape (routing.Tree)
	Debugger string // backend of the servers: gdb-mi or sim
	SDM      string // the sdm executable for the servers (default: this one)
	// Program is the program to debug, checked before anything is
	// submitted; Dir is where a relative Program is found.
	Program, Dir string
	// Launcher replaces the adapter's launcher program; LauncherArgs go
	// to it before the server command (such as --oversubscribe).
	Launcher     string
	LauncherArgs []string
	// ConnectTimeout bounds the wait for the job to come up (default 60 s).
	ConnectTimeout time.Duration
	// Debug has the servers trace what they do into the session's log.
	Debug bool
	Log   *log.Logger // complaints about peers (discarded when nil)
	// Progress, when set, is told how the job comes up.
	Progress func(Progress)
}

// Progress is a step of a job coming up.
type Progress struct {
	Stage string // "using", "submitted", "published", "connected"
	Text  string // for "using": which adapter and why
	Done  int    // ranks done at this stage
	Total int
}

// Session is a launched job and the live session to its tree.
type Session struct {
	*client.Session
	Job    rm.Job
	Master rm.Job // the master, when the front end started it (nil otherwise)
	Dir    string // the session directory: routing file, key, server logs
}

// Launch starts the job and returns once every rank's server has joined.
func Launch(ctx context.Context, o Options) (*Session, error) {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 60 * time.Second
	}
	if o.SDM == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.SDM = exe
	}
	progress := o.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	adapter, why, err := Pick(o.RM)
	if err != nil {
		return nil, err
	}
	progress(Progress{Stage: "using", Text: adapter.Name() + " (" + why + ")"})
	if err := Check(o, adapter); err != nil {
		return nil, err
	}

	key, err := wire.NewKey()
	if err != nil {
		return nil, err
	}
	dir, err := wire.PrivateDir("", "sdm-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Session, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	keyFile := filepath.Join(dir, "key")
	if err := wire.WriteKeyFile(keyFile, key); err != nil {
		return fail(err)
	}
	link := wire.LinkConfig{Key: key}
	ln, err := client.Listen("127.0.0.1:0", link, o.Log)
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	serverArgs := []string{"--debugger=" + o.Debugger}
	if o.Debug {
		serverArgs = append(serverArgs, "--debug")
	}
	spec := rm.Spec{
		Size: o.Size, Fanout: o.Fanout, SDM: o.SDM, Dir: dir, KeyFile: keyFile,
		Client: ln.Addr().String(), ServerArgs: serverArgs,
		Launcher: o.Launcher, LauncherArgs: o.LauncherArgs,
		// Every process of the session, down to gdb and the program,
		// carries the session in its environment: that finds strays.
		Env: []string{SessionEnv + "=" + dir},
	}
	if r := adapter.Routes(); r != "file" && r != "publish" {
		// Servers that compute their routes take ports from here up.
		lo, hi := routing.PortRange()
		spec.PortBase = lo + rand.IntN(hi-lo-256)
	}
	job, err := adapter.Start(spec)
	if err != nil {
		return fail(err)
	}
	progress(Progress{Stage: "submitted", Total: o.Size})

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, o.ConnectTimeout)
	defer stop()
	s := &Session{Job: job, Dir: dir}
	// A job that ends while we wait ends the wait at once, with its own
	// explanation, instead of at the deadline.
	go func() {
		select {
		case <-job.Done():
			cancel(fmt.Errorf("the job ended before every rank joined: %w", jobError(job)))
		case <-ctx.Done():
		}
	}()
	masterStarted := make(chan error, 1)
	switch {
	case adapter.StartsMaster():
		masterStarted <- nil
	case adapter.Routes() == "publish":
		// Launch help: once every server has published where it listens,
		// write the routing file and start the master.
		go func() {
			table, err := routing.WaitPublished(ctx, spec.RoutingFile(), o.Size)
			if err == nil {
				progress(Progress{Stage: "published", Done: o.Size, Total: o.Size})
				err = routing.WriteFile(spec.RoutingFile(), table)
			}
			if err == nil {
				s.Master, err = startMaster(spec)
			}
			masterStarted <- err
		}()
	default:
		// The servers compute the routing table; the master waits for it.
		s.Master, err = startMaster(spec)
		masterStarted <- err
	}

	cs, err := accept(ctx, ln, o.Size, masterStarted, progress)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		s.cancel()
		return nil, fmt.Errorf("%w (logs kept in %s)", err, dir)
	}
	s.Session = cs
	return s, nil
}

// accept waits for the master to connect and for every rank to join.
func accept(ctx context.Context, ln *client.Listener, size int, masterStarted <-chan error, progress func(Progress)) (*client.Session, error) {
	// Whatever starts the master gives up when ctx ends, with a more
	// precise reason (which servers did not publish) than ctx's own.
	if err := <-masterStarted; err != nil {
		return nil, err
	}
	cs, err := ln.Accept(ctx, size)
	if err != nil {
		return nil, err
	}
	err = cs.WaitConnected(ctx, func(connected, total int) {
		progress(Progress{Stage: "connected", Done: connected, Total: total})
	})
	if err != nil {
		cs.Close()
		return nil, err
	}
	return cs, nil
}

// startMaster runs the master on this machine, where the session port is.
func startMaster(spec rm.Spec) (rm.Job, error) {
	_, port, _ := splitHostPort(spec.Client)
	argv := []string{spec.SDM, "--master", "--host=127.0.0.1", "--port=" + port,
		"--routing_file=" + spec.RoutingFile(), "--key-file=" + spec.KeyFile, "--fanout=" + strconv.Itoa(spec.Fanout)}
	return rm.StartProcess(argv, spec.Env, spec.LogFile())
}

// jobError is why a job ended, or a plain statement when it ended well.
func jobError(job rm.Job) error {
	if err := job.Wait(); err != nil {
		return err
	}
	return errors.New("every process exited")
}

// cancel stops whatever of the session's processes still runs.
func (s *Session) cancel() {
	s.Job.Cancel()
	if s.Master != nil {
		s.Master.Cancel()
	}
}

// End quits the session: every server answers quit and exits, the job (and
// the master) are waited for, and cancelled if they linger; the session
// directory is removed unless something failed.
//
// When every rank answered quit, how the launcher itself exits does not
// count: mpirun, for one, calls a job whose program was killed before
// MPI_Finalize a failure, while the session ended as the user asked.
func (s *Session) End(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	groups, err := s.Quit(ctx, timeout)
	if err == nil && !answered(groups, s.Size()) {
		err = fmt.Errorf("not every rank answered quit: %v", describeFailures(groups))
	}
	errs := []error{err}
	for _, job := range []rm.Job{s.Job, s.Master} {
		if job == nil {
			continue
		}
		select {
		case <-job.Done():
		case <-ctx.Done():
			s.cancel()
			<-job.Done()
			errs = append(errs, fmt.Errorf("still running %v after quit, so cancelled", timeout))
		}
		if err != nil {
			errs = append(errs, job.Wait())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w (logs kept in %s)", err, s.Dir)
	}
	return os.RemoveAll(s.Dir)
}

// answered reports whether every one of size ranks answered ok.
func answered(groups []wire.Group, size int) bool {
	var ok wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			ok = ok.Union(g.Ranks)
		}
	}
	return ok.Equal(wire.All(size))
}

func describeFailures(groups []wire.Group) string {
	var parts []string
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			parts = append(parts, fmt.Sprintf("[%v] %s: %s", g.Ranks, g.Status, g.Body))
		}
	}
	return strings.Join(parts, "; ")
}
