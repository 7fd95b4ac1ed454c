package launcher

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// SessionEnv names the session directory in the environment of every
// process of a session.
const SessionEnv = "SDM_SESSION"

// Options describe a debug job to launch.
type Options struct {
	RM string // resource manager: auto (default; see Choose), local, openmpi, mpich, slurm or pe
	// Adapter, when set, is used instead of the one RM names.
	Adapter  rm.Adapter
	Size     int              // number of ranks
	Fanout   int              // tree shape (routing.Tree)
	RankTree bool             // one tree node per server, not per host (routing.Hosts)
	Debugger backend.Debugger // the servers' debugger
	GDB      backend.GDBStart // when their gdb starts ("": the servers' default, eager)
	// Members is hand or serve, the servers' --members as the user asked
	// ("": hand); the servers are given the decision (handing).
	Members string
	// RanksPerGDB is the servers' --ranks-per-gdb (0: their default).
	RanksPerGDB int
	SDM         string // the sdm executable for the servers (default: this one)
	// Layout, when set, is the ranks of each server (one server per
	// host, for a job acquired through MPIR); nil is a server per rank.
	Layout wire.Layout
	// Program is the program to debug, checked before anything is
	// submitted; Dir is where a relative Program is found.
	Program, Dir string
	// Launcher replaces the adapter's launcher program; LauncherArgs go
	// to it before the server command (such as --oversubscribe).
	Launcher     string
	LauncherArgs []string
	// Force starts the program under RM even when it links another MPI
	// than the one RM's launcher starts.
	Force bool
	// Queues preloads into the ranks the library that keeps their MPI
	// operations in flight (wire.OpQueues), as sdm debug and the editor's
	// launch do unless told not to.
	Queues bool
	// Target, when set, is the [user@]host where the launcher and the
	// master run, reached with SSH (an ssh command line; "ssh" by
	// default): a cluster's login node, say. SDM and Program are then
	// paths there, and the session's files live in a fresh directory there.
	Target, SSH string
	// Forward has ssh forward a port of the target to the session port,
	// for a master that could not reach the front end directly.
	Forward bool
	// ClientHost is how the target reaches this machine when nothing is
	// forwarded (default: this machine's host name).
	ClientHost string
	// ConnectTimeout bounds the wait for the job to come up (default 60 s).
	ConnectTimeout time.Duration
	// Debug has the servers trace what they do into the session's log.
	Debug bool
	Log   *log.Logger // complaints about peers (discarded when nil)
	// Progress, when set, is told how the job comes up.
	Progress func(Progress)

	sessionDir string // made already (for an acquisition)
}

// Progress is a step of a job coming up.
type Progress struct {
	Stage Stage
	// Text, for StageUsing, is the adapter's name, with Why in
	// parentheses when there is one; for StageStarting the starter's
	// command line; for StageAcquired what was acquired.
	Text string
	// Why, for StageUsing, is why sdm chose the adapter, or what it added
	// to its launcher's arguments: "./ring links libmpi.so.40"; empty when
	// the user named it and it is used as named.
	Why   string
	Done  int // ranks done at this stage
	Total int
}

// Stage is how far a job has come up.
type Stage string

// The stages, in the order a job passes them: a launched job goes through
// using, submitted, published (only where the servers publish their
// entries) and connected; a job acquired through MPIR through using,
// starting (when sdm starts the starter), acquired, and then the stages
// of its servers' launch.
const (
	StageUsing     Stage = "using"     // the adapter is chosen
	StageSubmitted Stage = "submitted" // the launcher has the job
	StagePublished Stage = "published" // every server has published its entry
	StageConnected Stage = "connected" // Done of Total servers are in the tree
	StageStarting  Stage = "starting"  // the starter is being started
	StageAcquired  Stage = "acquired"  // Done of Total ranks are held through MPIR
)

// Session is a launched job and the live session to its tree.
type Session struct {
	*client.Session
	Job    rm.Job
	Master rm.Job // the master, when the front end started it (nil otherwise)
	// Starter is the starter of a job acquired through MPIR, when the
	// front end launched it.
	Starter rm.Job
	Dir     string // the local session directory: key, logs (and routing file, on this machine)

	target  target
	files   string       // the session directory on the target, when it is remote
	forward *exec.Cmd    // the ssh that forwards the session port
	mpir    *acquisition // how the job was acquired, if through MPIR
	origin  origin       // how the job was started (relaunch.go)
	ended   bool         // End was called
	// told is set once the user was told that one of the job's processes
	// (Job, Master, Starter) ended: End does not tell it again.
	told atomic.Bool
}

// Launch starts the job and returns once every rank's server has joined.
func Launch(ctx context.Context, o Options) (*Session, error) {
	o, adapter, t, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	key, err := wire.NewKey()
	if err != nil {
		return nil, err
	}
	dir := o.sessionDir
	if dir == "" {
		if dir, err = wire.SessionDir(""); err != nil {
			return nil, err
		}
	}
	again := o
	again.Adapter, again.sessionDir = adapter, ""
	s := &Session{Dir: dir, target: t, origin: origin{o: again, launcher: launcherName(adapter, o.Launcher)}}
	fail := func(err error) (*Session, error) {
		s.cleanup()
		return nil, err
	}
	files, keyFile, err := sessionFiles(ctx, t, dir, key)
	if err != nil {
		return fail(err)
	}
	s.files = files
	ln, clientAddr, err := s.sessionPort(ctx, o, wire.LinkConfig{Key: key})
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	spec := jobSpec(o, adapter, t, dir, files, keyFile, clientAddr)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, o.ConnectTimeout)
	defer stop()
	masterStarted, err := s.submit(ctx, cancel, adapter, t, spec, o.progress())
	if err != nil {
		return fail(err)
	}
	cs, err := accept(ctx, ln, o.Size, masterStarted, o.progress())
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		s.stop()
		s.closeTarget()
		return nil, keptLogs(err, dir)
	}
	s.Session = cs
	return s, nil
}

// progress is where o's steps go (nowhere when nobody listens).
func (o Options) progress() func(Progress) {
	if o.Progress == nil {
		return func(Progress) {}
	}
	return o.Progress
}

// defaulted is o with the connect timeout it leaves out.
func (o Options) defaulted() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 60 * time.Second
	}
	if o.SDM == "" {
		o.SDM, _ = os.Executable() // ready says when it is not known
	}
	return o
}

// ready fills in o's defaults, chooses the adapter (and says so) and the
// target, and checks that they can start the job.
func (o Options) ready(ctx context.Context) (Options, rm.Adapter, target, error) {
	o = o.defaulted()
	if o.Size < 1 {
		return o, nil, target{}, &RefusedError{fmt.Sprintf("-n %d: need at least one rank", o.Size)}
	}
	if o.SDM == "" {
		return o, nil, target{}, errors.New("sdm's own executable is not known (os.Executable failed): give it as Options.SDM")
	}
	if _, err := routing.Hands(o.Members, o.RankTree, o.Layout != nil); err != nil {
		return o, nil, target{}, &RefusedError{err.Error()}
	}
	adapter, why, args, err := Choose(o)
	if err != nil {
		return o, nil, target{}, err
	}
	o.LauncherArgs = args
	o.progress()(using(adapter, why))
	t := newTarget(o.Target, o.SSH)
	if o.Forward && !t.remote() {
		return o, nil, t, errors.New("forwarding the session port needs a target host to forward it to")
	}
	if t.remote() && adapter.StartsMaster() {
		return o, nil, t, fmt.Errorf("--rm %s starts its processes on this machine; a target host needs openmpi, mpich, slurm or pe", adapter.Name())
	}
	if err := Check(ctx, o, adapter, t); err != nil {
		return o, nil, t, err
	}
	return o, adapter, t, nil
}

// sessionPort listens for the master and returns the address the job is
// to dial: this machine's loopback, the port forwarded to the target
// (s.forward then holds the ssh), or this machine's name for a target
// that dials in.
func (s *Session) sessionPort(ctx context.Context, o Options, link wire.LinkConfig) (*client.Listener, string, error) {
	listenOn := "127.0.0.1:0"
	if s.target.remote() && !o.Forward {
		listenOn = ":0" // the master on the target dials in
	}
	ln, err := client.Listen(listenOn, link, o.Log)
	if err != nil {
		return nil, "", err
	}
	switch {
	case o.Forward:
		port, cmd, err := s.target.forward(ctx, ln.Addr().Port)
		if err != nil {
			ln.Close()
			return nil, "", err
		}
		s.forward = cmd
		return ln, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
	case s.target.remote():
		host := o.ClientHost
		if host == "" {
			host = routing.AddressToward(s.target.machine())
		}
		return ln, net.JoinHostPort(host, strconv.Itoa(ln.Addr().Port)), nil
	}
	return ln, ln.Addr().String(), nil
}

// jobSpec is what the adapter needs to start the job's servers, pointed
// at the front end's session port at clientAddr; dir is the local session
// directory, files the one where the job runs.
func jobSpec(o Options, adapter rm.Adapter, t target, dir, files, keyFile, clientAddr string) rm.Spec {
	serverArgs := []string{"--debugger=" + string(o.Debugger)}
	if o.GDB != "" && o.Debugger == backend.GDB {
		serverArgs = append(serverArgs, "--gdb="+string(o.GDB))
	}
	if o.GDB == backend.Lazy && o.Debugger == backend.GDB && o.Program != "" && !t.remote() {
		// The program as the servers will find it; they start on this
		// host or on hosts that see its files at the same path.
		if path, err := program.Find(o.Program, o.Dir); err == nil {
			if abs, err := filepath.Abs(path); err == nil {
				serverArgs = append(serverArgs, "--prepare="+abs)
			}
		}
	}
	if o.Debug {
		serverArgs = append(serverArgs, "--debug")
	}
	// The plan decides whether the servers hand their ranks over, once
	// (handing), and every server, sdm-rank's start first, takes it as it
	// is.
	members := routing.MembersServe
	if o.handing() {
		members = routing.MembersHand
	}
	serverArgs = append(serverArgs, "--members="+members)
	if o.RanksPerGDB > 0 {
		serverArgs = append(serverArgs, "--ranks-per-gdb="+strconv.Itoa(o.RanksPerGDB))
	}
	spec := rm.Spec{
		Size: o.Size, Fanout: o.Fanout, RankTree: o.RankTree, SDM: o.SDM, Server: serverBinary(o, t), Dir: files, KeyFile: keyFile, Layout: o.Layout,
		Client: clientAddr, ServerArgs: serverArgs,
		Launcher: o.Launcher, LauncherArgs: o.LauncherArgs, Log: filepath.Join(dir, "servers.log"),
		// Every process of the session, down to gdb and the program,
		// carries the session in its environment: that finds strays.
		Env: []string{SessionEnv + "=" + dir},
	}
	if o.Layout != nil {
		spec.Size = len(o.Layout)
	}
	if t.remote() {
		spec.Remote = t.command
	}
	if adapter.Routes().Computed() {
		// Servers that compute their routes take ports from here up.
		lo, hi := routing.PortRange()
		spec.PortBase = lo + rand.IntN(hi-lo-256)
	}
	return spec
}

// submit starts the job and, where the front end starts it, the master:
// at once, or once every server has published its address. The outcome of
// starting the master comes on the channel. A job that ends before ctx
// does cancels ctx, with its own explanation as the cause.
func (s *Session) submit(ctx context.Context, cancel context.CancelCauseFunc, adapter rm.Adapter, t target, spec rm.Spec, progress func(Progress)) (<-chan error, error) {
	job, err := adapter.Start(spec)
	if err != nil {
		return nil, err
	}
	s.Job = job
	progress(Progress{Stage: StageSubmitted, Total: spec.Size})
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
	case adapter.Routes() == routing.SourcePublish:
		// Launch help: once every server has published where it listens,
		// write the routing file and start the master.
		go func() {
			err := collect(ctx, t, spec, spec.Size)
			if err == nil {
				progress(Progress{Stage: StagePublished, Done: spec.Size, Total: spec.Size})
				s.Master, err = startMaster(spec)
			}
			masterStarted <- err
		}()
	default:
		// The servers compute the routing table; the master waits for it.
		s.Master, err = startMaster(spec)
		masterStarted <- err
	}
	return masterStarted, nil
}

// sessionFiles makes the session directory where the job runs and puts the
// key there, mode 0600 in a 0700 directory: on this machine, the local
// one; on a target, a fresh one made there, the key sent on ssh's input
// and never on a command line.
func sessionFiles(ctx context.Context, t target, local string, key wire.Key) (dir, keyFile string, err error) {
	if !t.remote() {
		keyFile = filepath.Join(local, "key")
		return local, keyFile, wire.WriteKeyFile(keyFile, key)
	}
	if dir, err = t.run(ctx, "umask 077 && mktemp -d \"${TMPDIR:-/tmp}/sdm-XXXXXXXX\"", nil); err != nil {
		return "", "", fmt.Errorf("session directory: %w", err)
	}
	keyFile = dir + "/key"
	if _, err := t.run(ctx, "umask 077 && cat > "+text.ShellQuote(keyFile), []byte(key.String()+"\n")); err != nil {
		return "", "", fmt.Errorf("session key: %w", err)
	}
	return dir, keyFile, nil
}

// collect waits until every server has published its address and writes
// the routing file from them: here, or on the target with sdm routes
// collect.
func collect(ctx context.Context, t target, spec rm.Spec, size int) error {
	if !t.remote() {
		return routing.Collect(ctx, spec.RoutingFile(), size)
	}
	deadline, _ := ctx.Deadline()
	_, err := t.run(ctx, strings.Join([]string{text.ShellQuote(spec.SDM), "routes", "collect",
		"--timeout=" + time.Until(deadline).Round(time.Second).String(), text.ShellQuote(spec.RoutingFile()), strconv.Itoa(size)}, " "), nil)
	return err
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
		progress(Progress{Stage: StageConnected, Done: connected, Total: total})
	})
	if err != nil {
		cs.Close()
		return nil, err
	}
	return cs, nil
}

// startMaster runs the master where the job runs (this machine, or the
// target), pointed at the session port.
func startMaster(spec rm.Spec) (rm.Job, error) {
	argv, err := spec.MasterCommand()
	if err != nil {
		return nil, err
	}
	return spec.Start(argv)
}

// jobError is why a job ended, or a plain statement when it ended well.
func jobError(job rm.Job) error {
	if err := job.Wait(); err != nil {
		return err
	}
	return errors.New("every process exited")
}

// namedJob is one of the session's processes with what a message calls
// it.
type namedJob struct {
	job  rm.Job
	what string // "" for the local job, whose own errors name the cause
}

// jobs returns the session's processes that it started and waits for.
func (s *Session) jobs() []namedJob {
	var jobs []namedJob
	switch launcher := s.Launcher(); {
	case s.Job == nil: // the job runs elsewhere (reverse connect)
	case launcher == "":
		jobs = append(jobs, namedJob{s.Job, ""})
	case s.mpir != nil: // the servers beside the ranks a starter started
		jobs = append(jobs, namedJob{s.Job, "the rank servers"})
	default:
		jobs = append(jobs, namedJob{s.Job, "the job's launcher (" + launcher + ")"})
	}
	if s.Master != nil {
		jobs = append(jobs, namedJob{s.Master, "the master"})
	}
	if s.Starter != nil {
		jobs = append(jobs, namedJob{s.Starter, "the job's starter"})
	}
	return jobs
}

// cancel stops whatever of the session's processes still runs.
func (s *Session) cancel() {
	for _, j := range s.jobs() {
		j.job.Cancel()
	}
}

// stop cancels whatever of the session's processes still runs and waits
// until they are gone: a launcher that outlives the grace period is
// killed by a timer of this process, which must not exit first (an
// mpirun whose daemons did not start would stay behind).
func (s *Session) stop() {
	s.cancel()
	deadline := time.After(rm.Grace + 2*time.Second)
	for _, j := range s.jobs() {
		select {
		case <-j.job.Done():
		case <-deadline:
			return
		}
	}
}

// closeTarget ends the port forward and removes the session's directory on
// the target.
func (s *Session) closeTarget() {
	if s.forward != nil {
		s.forward.Process.Kill()
		s.forward.Wait()
	}
	if s.target.remote() && s.files != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.target.run(ctx, "rm -rf "+text.ShellQuote(s.files), nil)
	}
}

// cleanup undoes a launch that failed before anything was submitted.
func (s *Session) cleanup() {
	s.closeTarget()
	os.RemoveAll(s.Dir)
}

// End quits the session: every server answers quit and exits, the job (and
// the master) are waited for, and cancelled if they linger; the session
// directory is removed unless something failed.
//
// When every rank answered quit, how the launcher itself exits does not
// count: mpirun, for one, calls a job whose program was killed before
// MPI_Finalize a failure, while the session ended as the user asked.
func (s *Session) End(timeout time.Duration) error {
	s.ended = true
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, lost := s.Connected() // told as they were lost
	groups, err := s.Quit(ctx, timeout)
	told := s.told.Load()
	switch {
	case err == nil:
		if groups = unanswered(groups, s.Size(), lost); len(groups) > 0 {
			err = fmt.Errorf("not every rank answered quit: %v", wire.Failures(groups, "quit", nil))
		}
	case told && errors.Is(err, client.ErrClosed):
		err = nil // closed because the job ended, which was told
	}
	errs := []error{err}
	if told {
		errs = append(errs, errors.New("the job ended, as told above"))
	}
	for _, j := range s.jobs() {
		select {
		case <-j.job.Done():
		case <-ctx.Done():
			s.cancel()
			<-j.job.Done()
			what := j.what
			if what == "" {
				what = "the rank servers"
			}
			errs = append(errs, fmt.Errorf("%s still running %v after quit, so cancelled", what, timeout))
		}
		if (err != nil || !lost.Empty()) && !told {
			errs = append(errs, j.job.Wait())
		}
	}
	s.closeTarget()
	if s.mpir != nil && s.mpir.m.Pid != 0 && s.mpir.result.Table.Via == "" {
		// The job goes on, no longer debugged.
		if err := mpir.Forget(ctx, s.mpir.m.Pid); err != nil && !errors.Is(err, mpir.ErrNoProcess) {
			errs = append(errs, err)
		}
	}
	err = errors.Join(errs...)
	switch {
	case err != nil && s.Dir != "":
		return keptLogs(err, s.Dir)
	case err != nil:
		return err
	}
	return os.RemoveAll(s.Dir)
}

// unanswered returns the groups of quit's answer that failed, but for
// the ranks lost before it, whose loss was told when it happened, and a
// group for any of size ranks that the answer left out.
func unanswered(groups []wire.Group, size int, lost wire.RankSet) []wire.Group {
	var out []wire.Group
	seen := lost
	for _, g := range groups {
		seen = seen.Union(g.Ranks)
		if g.Status == wire.StatusOK {
			continue
		}
		if g.Status == wire.StatusLost {
			g.Ranks = g.Ranks.Minus(lost)
		}
		if !g.Ranks.Empty() {
			out = append(out, g)
		}
	}
	if left := wire.All(size).Minus(seen); !left.Empty() {
		out = append(out, wire.Group{Ranks: left, Status: wire.StatusTimeout, Body: []byte("no answer")})
	}
	return out
}

// keptLogs says where the logs of a session that failed are kept, and
// removes its key file, which nothing needs any more: the directory stays
// for the user to read (a later session leaves it, wire.KeepSession), the
// key must not. Whoever would remove the session's directory after such
// an error keeps it (logsKept).
func keptLogs(err error, dir string) error {
	os.Remove(filepath.Join(dir, "key"))
	if wire.KeepSession(dir) != nil {
		return err // no directory to name
	}
	return &logsError{err: err, dir: dir}
}

// logsError is a failed session's error that names the directory its
// logs are kept in.
type logsError struct {
	err error
	dir string
}

func (e *logsError) Error() string { return fmt.Sprintf("%v (logs kept in %s)", e.err, e.dir) }
func (e *logsError) Unwrap() error { return e.err }

// logsKept says whether err names dir as where logs are kept: dir must
// stay.
func logsKept(err error, dir string) bool {
	var le *logsError
	return errors.As(err, &le) && le.dir == dir
}

// ServerBinary is the name of the server role's own executable, which
// launchers start beside sdm when it is there; RankBinary the lean start
// of a server that hands its rank over, which executes ServerBinary in
// its place for any other start.
const (
	ServerBinary = "sdm-server"
	RankBinary   = "sdm-rank"
)

// serverBinary is the executable of a job's servers: sdm-server beside
// sdm when it is there, a build of the server role alone that starts
// sooner and maps less on each of a node's ranks, or sdm-rank beside it
// when the servers hand their ranks over (o.handing), which starts
// sooner still; else sdm itself ("": rm.Spec.ServerExe). A job on
// another host (--target) is given sdm's path there, and no more is
// known of that host.
func serverBinary(o Options, t target) string {
	if t.host != "" {
		return ""
	}
	exe := filepath.Join(filepath.Dir(o.SDM), ServerBinary)
	if executable(exe) != nil {
		return ""
	}
	if rank := filepath.Join(filepath.Dir(o.SDM), RankBinary); o.handing() && executable(rank) == nil {
		return rank
	}
	return exe
}

// handing says whether the job's servers hand their ranks to their
// hosts' first servers (the servers' --members=hand): the job's one
// decision of it (ready refuses a Members that is neither).
func (o Options) handing() bool {
	hands, _ := routing.Hands(o.Members, o.RankTree, o.Layout != nil)
	return hands
}
