package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/launcher"
)

// relaunchable is the job of a session of sdm debug or sdm attach. The
// console drives it through a client.Relay; restart ends it and starts it
// again the same way, as a new session that the relay switches to.
type relaunchable struct {
	relay *client.Relay
	// load has every rank of a new job load the program (nil when the
	// job is acquired through MPIR, whose ranks run it already).
	load    func(context.Context, *launcher.Session) error
	settle  func()        // clears what a relaunch showed of its progress
	timeout time.Duration // for the old job to end

	mu      sync.Mutex
	s       *launcher.Session
	live    bool          // s runs: not ended by a restart that then failed
	retired chan struct{} // closed when s is ended by a restart, or the session ends
}

// launched is the session of a job sdm started or took over; load, when
// set, loads the program in a job started again.
func launched(s *launcher.Session, load func(context.Context, *launcher.Session) error, settle func()) session {
	r := &relaunchable{relay: client.NewRelay(s.Session), load: load, settle: settle, timeout: 10 * time.Second,
		s: s, live: true, retired: make(chan struct{})}
	go watchJob(s, r.retired)
	return session{tree: r.relay, end: r.end, watch: r.watch, restart: r}
}

// Launcher implements console.Restarter.
func (r *relaunchable) Launcher() string { return r.current().Launcher() }

// Restartable implements console.Restarter.
func (r *relaunchable) Restartable() error { return r.current().Relaunchable() }

func (r *relaunchable) current() *launcher.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

// Restart implements console.Restarter: the job ends (whatever goes wrong
// there, its processes are gone once End returns), then starts again and
// loads the program. A job that does not come up leaves the session
// without one until the next restart.
func (r *relaunchable) Restart(ctx context.Context) (string, error) {
	r.mu.Lock()
	old, live := r.s, r.live
	r.retire() // its launcher's end is news no more
	r.live = false
	r.mu.Unlock()
	if live {
		if err := old.End(r.timeout); err != nil {
			fmt.Fprintf(os.Stderr, "sdm: restart: the job did not end cleanly: %v\n", err)
		}
		r.relay.Vacate(errors.New("no job: restart ended it and is starting it again"))
	}
	s, err := old.Relaunch(ctx)
	if r.settle != nil {
		r.settle()
	}
	if err == nil && r.load != nil {
		if err = r.load(ctx, s); err != nil {
			s.End(r.timeout)
		}
	}
	if err != nil {
		err = fmt.Errorf("the job did not start again: %w", err)
		r.relay.Vacate(fmt.Errorf("no job: %w (restart tries again)", err))
		return "", err
	}
	r.relay.Switch(s.Session)
	r.mu.Lock()
	r.s, r.live, r.retired = s, true, make(chan struct{})
	retired := r.retired
	r.mu.Unlock()
	go watchJob(s, retired)
	return s.Summary(), nil
}

// retire stops watching the current job's launcher; r.mu is held.
func (r *relaunchable) retire() {
	select {
	case <-r.retired:
	default:
		close(r.retired)
	}
}

// watch stops watching the job's launcher once ending is closed: its end
// is news only while the session runs.
func (r *relaunchable) watch(ending <-chan struct{}) {
	<-ending
	r.mu.Lock()
	r.retire()
	r.mu.Unlock()
}

// end ends the current job, if there is one (after a restart that failed
// there is none, and the restart said why), and the relay.
func (r *relaunchable) end(timeout time.Duration) error {
	r.mu.Lock()
	s, live := r.s, r.live
	r.live = false
	r.mu.Unlock()
	var err error
	if live {
		err = s.End(timeout)
	}
	r.relay.Close()
	return err
}
