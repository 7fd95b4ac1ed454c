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
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/wire"
)

// Hosted is the job side of a session whose front end is elsewhere, as
// in reverse connect: the job and the master run here, and the master
// dials the front end.
type Hosted struct {
	Job, Master rm.Job
	Dir         string // the session directory here: key, logs
	s           *Session
}

// Host checks and submits the job that o describes on this machine,
// pointed at the front end's session port at clientAddr, with the session
// key the front end handed over. It returns once the master is started;
// the front end then sees every rank join.
func Host(ctx context.Context, o Options, clientAddr string, key wire.Key) (*Hosted, error) {
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
	adapter, _, err := Pick(o.RM)
	if err != nil {
		return nil, err
	}
	t := newTarget("", "")
	if err := Check(ctx, o, adapter, t); err != nil {
		return nil, err
	}
	dir, err := wire.PrivateDir("", "sdm-")
	if err != nil {
		return nil, err
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
	progress := o.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	masterStarted, err := s.submit(ctx, cancel, adapter, t, spec, progress)
	if err == nil {
		err = <-masterStarted
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		s.cancel()
		return nil, fmt.Errorf("%w (logs kept in %s)", err, dir)
	}
	return &Hosted{Job: s.Job, Master: s.Master, Dir: dir, s: s}, nil
}

// Wait waits for the job, then the master, to end, and removes the
// session directory unless the job failed. The job's error is returned.
func (h *Hosted) Wait() error {
	err := h.Job.Wait()
	if h.Master != nil {
		select {
		case <-h.Master.Done():
		case <-time.After(10 * time.Second):
			h.Master.Cancel()
			<-h.Master.Done()
		}
	}
	if err != nil {
		return fmt.Errorf("%w (logs kept in %s)", err, h.Dir)
	}
	return os.RemoveAll(h.Dir)
}

// Cancel stops the job and the master.
func (h *Hosted) Cancel() { h.s.cancel() }

// Pending is a session port that waits for the master of a job something
// else starts (reverse connect).
type Pending struct {
	ln *client.Listener
	// Key is the session key to hand to the job side; Address is where
	// its master dials.
	Key     wire.Key
	Address string
}

// Await binds a session port for a job that will run on host. A job on
// this machine is reached on the loopback; one elsewhere dials
// clientHost (this machine's host name when empty) on every interface.
func Await(host, clientHost string, o Options) (*Pending, error) {
	key, err := wire.NewKey()
	if err != nil {
		return nil, err
	}
	listenOn, dialHost := "127.0.0.1:0", "127.0.0.1"
	if !isLocal(host) {
		listenOn, dialHost = ":0", clientHost
		if dialHost == "" {
			dialHost, _ = os.Hostname()
		}
	}
	ln, err := client.Listen(listenOn, wire.LinkConfig{Key: key}, o.Log)
	if err != nil {
		return nil, err
	}
	return &Pending{ln: ln, Key: key, Address: net.JoinHostPort(dialHost, strconv.Itoa(ln.Addr().Port))}, nil
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
	return &Session{Session: cs}, nil
}

// Close gives up waiting.
func (p *Pending) Close() { p.ln.Close() }
