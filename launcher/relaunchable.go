package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/wire"
)

// Relaunchable is the job of a session that sdm debug started or sdm
// attach took over, as the console's Restarter: the console drives it
// through Tree, a client.Relay; Restart ends it and starts it again the
// same way, as a new session that the relay switches to.
type Relaunchable struct {
	relay *client.Relay
	log   *log.Logger // the ends of its launcher, and a restart's troubles
	// load has every rank of a new job load the program (nil when the
	// job is acquired through MPIR, whose ranks run it already).
	load    func(context.Context, *Session) error
	settle  func()        // clears what a relaunch showed of its progress
	timeout time.Duration // for the old job to end

	mu      sync.Mutex
	s       *Session
	live    bool          // s runs: not ended by a restart that then failed
	retired chan struct{} // closed when s is ended by a restart, or the session ends
}

// NewRelaunchable watches s, which Launch or Acquire brought up; load,
// when set, loads the program in a job started again, and settle clears
// what its start showed of its progress. logTo hears of the job's
// launcher ending while the session runs.
func NewRelaunchable(s *Session, load func(context.Context, *Session) error, settle func(), logTo *log.Logger) *Relaunchable {
	if logTo == nil {
		logTo = log.New(io.Discard, "", 0)
	}
	r := &Relaunchable{relay: client.NewRelay(s.Session), log: logTo, load: load, settle: settle, timeout: 10 * time.Second,
		s: s, live: true, retired: make(chan struct{})}
	go r.watchJob(s, r.retired)
	return r
}

// Tree is the relay the console drives.
func (r *Relaunchable) Tree() *client.Relay { return r.relay }

// Launcher implements console.Restarter.
func (r *Relaunchable) Launcher() string { return r.current().Launcher() }

// Restartable implements console.Restarter.
func (r *Relaunchable) Restartable() error { return r.current().Relaunchable() }

func (r *Relaunchable) current() *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

// Restart implements console.Restarter: the job ends (whatever goes wrong
// there, its processes are gone once End returns), then starts again and
// loads the program. A job that does not come up leaves the session
// without one until the next restart.
func (r *Relaunchable) Restart(ctx context.Context) (string, error) {
	r.mu.Lock()
	old, live := r.s, r.live
	r.retire() // its launcher's end is news no more
	r.live = false
	r.mu.Unlock()
	if live {
		if err := old.End(r.timeout); err != nil {
			r.log.Printf("restart: the job did not end cleanly: %v", err)
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
	go r.watchJob(s, retired)
	return s.Summary(), nil
}

// retire stops watching the current job's launcher; r.mu is held.
func (r *Relaunchable) retire() {
	select {
	case <-r.retired:
	default:
		close(r.retired)
	}
}

// Watch stops watching the job's launcher once ending is closed: its end
// is news only while the session runs.
func (r *Relaunchable) Watch(ending <-chan struct{}) {
	<-ending
	r.mu.Lock()
	r.retire()
	r.mu.Unlock()
}

// End ends the current job, if there is one (after a restart that failed
// there is none, and the restart said why), and the relay.
func (r *Relaunchable) End(timeout time.Duration) error {
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

// watchJob tells, once, the first end among the job's launcher, the
// master the front end started and the job's starter, when it comes
// before the session's: the cause, and not what follows from it (the
// servers ending when the master dies), here or when the session ends.
// The servers may go on (the tree does not depend on a launcher), or be
// gone.
func (r *Relaunchable) watchJob(s *Session, ending <-chan struct{}) {
	jobs := s.jobs()
	first := make(chan namedJob, len(jobs))
	for _, w := range jobs {
		go func() {
			select {
			case <-w.job.Done():
				first <- w
			case <-ending:
			}
		}()
	}
	select {
	case w := <-first:
		err := w.job.Wait()
		s.told.Store(err != nil)
		var ended *rm.EndError
		switch {
		case err != nil && w.what == "":
			r.log.Print(err)
		case errors.As(err, &ended) && w.job == s.Master:
			r.log.Printf("master %s: ranks %v lost", ended.How, wire.All(s.Size()))
		case err != nil:
			r.log.Printf("%s ended: %v", w.what, err)
		default:
			r.log.Printf("%s ended", w.what)
		}
	case <-ending:
	}
}
