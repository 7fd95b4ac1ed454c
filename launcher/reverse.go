package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// Hosted is the job side of a session whose front end is elsewhere, as
// in reverse connect: the job and the master run here, and the master
// dials the front end.
type Hosted struct {
	Job, Master rm.Job
	// Starter is the starter of a job acquired through MPIR.
	Starter rm.Job
	Dir     string // the session directory here: key, logs
	s       *Session
}

// Host checks and submits the job that o describes on this machine,
// pointed at the front end's session port at clientAddr, with the session
// key the front end handed over. It returns once the master is started;
// the front end then sees every rank join.
func Host(ctx context.Context, o Options, clientAddr string, key wire.Key) (*Hosted, error) {
	o = o.defaulted()
	if o.SDM == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.SDM = exe
	}
	adapter := o.Adapter
	if adapter == nil {
		var err error
		if adapter, _, err = Pick(o.RM); err != nil {
			return nil, err
		}
	}
	t := newTarget("", "")
	if err := Check(ctx, o, adapter, t); err != nil {
		return nil, err
	}
	dir := o.sessionDir
	if dir == "" {
		var err error
		if dir, err = wire.SessionDir(""); err != nil {
			return nil, err
		}
	}
	keyFile := filepath.Join(dir, "key")
	if err := wire.WriteKeyFile(keyFile, key); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Session{Dir: dir, target: t}
	spec := jobSpec(o, adapter, t, dir, dir, keyFile, clientAddr)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, o.ConnectTimeout)
	defer stop()
	progress := o.progress()
	masterStarted, err := s.submit(ctx, cancel, adapter, t, spec, progress)
	if err == nil {
		err = <-masterStarted
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		s.cancel()
		return nil, keptLogs(err, dir)
	}
	return &Hosted{Job: s.Job, Master: s.Master, Dir: dir, s: s}, nil
}

// Wait waits for the job (and the starter), then the master, to end, and
// removes the session directory unless the job failed. The job's error,
// or the starter's, is returned.
func (h *Hosted) Wait() error {
	err := h.Job.Wait()
	if h.Starter != nil {
		err = h.Starter.Wait()
	}
	if h.Master != nil {
		select {
		case <-h.Master.Done():
		case <-time.After(10 * time.Second):
			h.Master.Cancel()
			<-h.Master.Done()
		}
	}
	if err != nil {
		return keptLogs(err, h.Dir)
	}
	return os.RemoveAll(h.Dir)
}

// Cancel stops the job, the starter and the master.
func (h *Hosted) Cancel() {
	h.s.cancel()
	if h.Starter != nil {
		h.Starter.Cancel()
	}
}

// Held is a starter launched under MPIR on the job side of a
// reverse-connected session, held in MPIR_Breakpoint until the front end
// has attached its ranks.
type Held struct {
	Table mpir.Table
	// Attach is the body of the attach command the front end sends to
	// every rank.
	Attach []byte
	a      *acquisition
}

// HostMPIR launches the starter command argv under MPIR here, holds it,
// and starts a server beside every rank, pointed at the front end. The
// front end attaches the ranks; then Release lets the starter go on (or
// Kill ends it, when the front end could not attach them).
func HostMPIR(ctx context.Context, o Options, argv []string, clientAddr string, key wire.Key) (*Hosted, *Held, error) {
	o = o.defaulted()
	progress := o.progress()
	dir, err := wire.SessionDir("")
	if err != nil {
		return nil, nil, err
	}
	o.sessionDir = dir
	a := &acquisition{o: o, m: MPIR{Argv: argv, Starter: true, Output: os.Stdout}, dir: dir}
	fail := func(err error) (*Hosted, *Held, error) {
		a.undo()
		return nil, nil, keptLogs(err, dir)
	}
	ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	if err := a.starter(ctx, progress); err != nil {
		return fail(err)
	}
	so, pids, err := a.servers(ctx, progress)
	if err != nil {
		return fail(err)
	}
	so.sessionDir = dir
	h, err := Host(ctx, so, clientAddr, key)
	if err != nil {
		return fail(err)
	}
	tab := a.result.Table
	if !tab.IAmStarter && tab.Procs[0].Pid == tab.Starter {
		// The starter is rank 0: let go, stopped, for its rank's debugger.
		err := a.held.ReleaseStopped()
		a.held = nil
		if err != nil {
			h.Cancel()
			return fail(err)
		}
	}
	h.Starter = a.job
	body := wire.MustEncode(wire.Attach{Pids: pids, PreMain: tab.AcquiredPreMain, Stop: true, Kill: true})
	return h, &Held{Table: tab, Attach: body, a: a}, nil
}

// Release lets the starter go on, its ranks attached.
func (h *Held) Release() error {
	a := h.a
	if a.held != nil {
		err := a.held.Release()
		a.held = nil
		if err != nil {
			return err
		}
	}
	a.job.Watch()
	return nil
}

// Kill ends the held starter and its job.
func (h *Held) Kill() { h.a.undo() }

// Pending is a session port that waits for the master of a job something
// else starts (reverse connect).
type Pending struct {
	ln   *client.Listener
	host string // where the job runs
	// Key is the session key to hand to the job side; Address is where
	// its master dials.
	Key     wire.Key
	Address string
}

// Await binds a session port for a job that will run on host. A job on
// this machine is reached on the loopback; one elsewhere dials
// clientHost (when empty, this machine's address on its route toward
// host: routing.AddressToward) on every interface.
func Await(host, clientHost string, o Options) (*Pending, error) {
	key, err := wire.NewKey()
	if err != nil {
		return nil, err
	}
	listenOn, dialHost := "127.0.0.1:0", "127.0.0.1"
	if !isLocal(host) {
		listenOn, dialHost = ":0", clientHost
		if dialHost == "" {
			dialHost = routing.AddressToward(host)
		}
	}
	ln, err := client.Listen(listenOn, wire.LinkConfig{Key: key}, o.Log)
	if err != nil {
		return nil, err
	}
	return &Pending{ln: ln, host: host, Key: key, Address: net.JoinHostPort(dialHost, strconv.Itoa(ln.Addr().Port))}, nil
}

// Accept waits until the job's master dials in and every rank has joined,
// or failed reports why the job side gave up, or ctx ends. The session
// port is closed then.
func (p *Pending) Accept(ctx context.Context, failed func(context.Context) error, progress func(Progress)) (*Session, error) {
	defer p.ln.Close()
	if progress == nil {
		progress = func(Progress) {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		if err := failed(ctx); err != nil {
			cancel(fmt.Errorf("the job side gave up: %w", err))
		}
	}()
	started := make(chan error, 1)
	started <- nil
	cs, err := accept(ctx, p.ln, 0, started, progress)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return nil, err
	}
	return &Session{Session: cs, origin: origin{refusal: reverseRefusal(p.host)}}, nil
}

// Close gives up waiting.
func (p *Pending) Close() { p.ln.Close() }
