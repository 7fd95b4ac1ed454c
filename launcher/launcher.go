// Package launcher is the front end's side of starting a debug job: it makes
// the session key and the private session directory, binds the session
// port, has a resource-manager adapter start the servers and the master,
// and waits until every rank has joined the tree. What comes out is a
// client.Session ready for commands.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/wire"
)

// Options describe a debug job to launch.
type Options struct {
	RM       string // resource manager; "local" (the default) is built in
	Size     int    // number of ranks
	Fanout   int    // tree shape (routing.Tree)
	Debugger string // backend of the servers: gdb-mi or sim
	SDM      string // the sdm executable for the servers (default: this one)
	// Debug has the servers trace what they do into the session's log.
	Debug bool
	// ConnectTimeout bounds the wait for the master and for every rank to
	// join (default 60 s).
	ConnectTimeout time.Duration
	Log            *log.Logger // complaints about peers (discarded when nil)
}

// Session is a launched job and the live session to its tree.
type Session struct {
	*client.Session
	Job rm.Job
	Dir string // the session directory: routing file, key, server logs

	jobDone chan error // receives the job's result once it has exited
}

// Launch starts the job and returns once every rank's server has joined.
func Launch(ctx context.Context, o Options) (*Session, error) {
	if o.RM == "" {
		o.RM = "local"
	}
	if o.RM != "local" {
		return nil, fmt.Errorf("--rm %s: not supported (have: local)", o.RM)
	}
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
	key, err := wire.NewKey()
	if err != nil {
		return nil, err
	}
	dir, err := wire.PrivateDir("", "sdm-")
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "key")
	fail := func(err error) (*Session, error) {
		os.RemoveAll(dir)
		return nil, err
	}
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
	job, err := local.Start(rm.Spec{
		Size: o.Size, Fanout: o.Fanout, SDM: o.SDM, Dir: dir, KeyFile: keyFile,
		Client: ln.Addr().String(), ServerArgs: serverArgs,
	})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, o.ConnectTimeout)
	defer stop()
	// A process of the job that fails while we wait ends the wait at once,
	// with its own explanation, instead of at the deadline.
	jobDone := make(chan error, 1)
	go func() {
		err := job.Wait()
		if err != nil {
			cancel(fmt.Errorf("the job failed while starting: %w", err))
		}
		jobDone <- err
	}()
	s, err := ln.Accept(ctx, o.Size)
	if err == nil {
		if err = s.WaitConnected(ctx); err != nil {
			s.Close()
		}
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) {
			err = cause
		}
		job.Cancel()
		return nil, fmt.Errorf("%w (logs kept in %s)", err, dir)
	}
	return &Session{Session: s, Job: job, Dir: dir, jobDone: jobDone}, nil
}

// End quits the session: every server answers quit and exits, the job is
// waited for (and cancelled if it lingers), and the session directory is
// removed unless something failed.
func (s *Session) End(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, qerr := s.Quit(ctx, timeout)
	var err error
	select {
	case err = <-s.jobDone:
	case <-ctx.Done():
		s.Job.Cancel()
		err = fmt.Errorf("servers still running %v after quit; cancelled: %w", timeout, <-s.jobDone)
	}
	if err = errors.Join(qerr, err); err != nil {
		return fmt.Errorf("%w (logs kept in %s)", err, s.Dir)
	}
	return os.RemoveAll(s.Dir)
}
