package launcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/wire"
)

// Jobs is a session of sdm listen: its first job, and those a Listener
// takes on while it runs (Listen), joined into one tree where each job has
// the next ranks. It is what the console's Jobs and Restarter ask of a
// session, without the console: the console learns of a job that joined
// through OnJoin.
type Jobs struct {
	l      *Listener
	joined *client.Joined
	ctx    context.Context // the session's
	seen   map[string]bool // requests taken or tried, and bad files reported
	// OnJoin, when set, is told of every job after the first as it joins,
	// before Wait counts it: the rank sets of the jobs to name (job1, the
	// first job's, comes with the second) and, for a job acquired through
	// MPIR, its attach answers, their ranks those of the session.
	OnJoin func(sets []JobSet, attached []wire.Group)

	mu       sync.Mutex
	sessions []*Session
	added    chan struct{}      // closed and replaced when a job joins
	stop     context.CancelFunc // ends the listening, when on
	stopped  chan struct{}      // closed when it has ended
}

// A JobSet names the ranks of one job of a Jobs session.
type JobSet struct {
	Name  string // job1, job2, ...
	Ranks wire.RankSet
}

// NewJobs starts a session with the job of r, which Take brought up as
// first; ctx bounds the listening for more.
func (l *Listener) NewJobs(ctx context.Context, first *Session, r *connect.Request) *Jobs {
	j := &Jobs{l: l, joined: client.NewJoined(), ctx: ctx, sessions: []*Session{first},
		added: make(chan struct{}), seen: map[string]bool{r.ID: true}}
	j.joined.Add(first.Session)
	return j
}

// Tree is the jobs' tree, for the console.
func (j *Jobs) Tree() *client.Joined { return j.joined }

// Wait returns once the session holds n jobs, or ctx ends.
func (j *Jobs) Wait(ctx context.Context, n int) error {
	for {
		j.mu.Lock()
		have, added := len(j.sessions), j.added
		j.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-added:
		case <-ctx.Done():
			return fmt.Errorf("the session holds %d jobs: %w", have, ctx.Err())
		}
	}
}

// Listen turns the taking on of new jobs on or off. Requests passed over
// before (not the one the session was started for) are offered again.
func (j *Jobs) Listen(on bool) error {
	ctx := j.ctx
	j.mu.Lock()
	stop, stopped := j.stop, j.stopped
	if on && stop == nil {
		ctx, j.stop = context.WithCancel(ctx)
		j.stopped = make(chan struct{})
		go j.loop(ctx, j.stopped)
	}
	if !on {
		j.stop, j.stopped = nil, nil
	}
	j.mu.Unlock()
	if !on && stop != nil {
		stop()
		<-stopped
	}
	return nil
}

// loop accepts every new request until ctx ends, and joins each job.
func (j *Jobs) loop(ctx context.Context, stopped chan struct{}) {
	defer close(stopped)
	log := j.l.logger()
	for {
		reqs, err := connect.WaitRequests(ctx, j.l.Dir, j.seen, func(err error) { log.Print("skipped: ", err) })
		if err != nil {
			if ctx.Err() == nil {
				log.Print("listen: ", err)
			}
			return
		}
		for _, r := range reqs {
			if ctx.Err() != nil {
				return
			}
			j.seen[r.ID] = true
			if err := j.add(ctx, r); err != nil {
				log.Printf("request %s: %v", r.ID, err)
			}
		}
	}
}

// add takes on the job of r and joins it to the session.
func (j *Jobs) add(ctx context.Context, r *connect.Request) error {
	s, attached, err := j.l.Take(ctx, r)
	if err != nil {
		return err
	}
	first, err := j.joined.Add(s.Session)
	if err != nil {
		s.End(10 * time.Second)
		return err
	}
	j.mu.Lock()
	n := len(j.sessions) + 1
	firstSize := j.sessions[0].Size()
	j.mu.Unlock()
	var sets []JobSet
	if n == 2 {
		sets = append(sets, JobSet{"job1", wire.All(firstSize)})
	}
	sets = append(sets, JobSet{fmt.Sprintf("job%d", n), wire.Range(first, first+s.Size()-1)})
	for i := range attached {
		attached[i].Ranks = attached[i].Ranks.Shift(first)
	}
	if j.OnJoin != nil {
		j.OnJoin(sets, attached)
	}
	// Counted once announced, so that Wait returns with the job's set
	// named.
	j.mu.Lock()
	j.sessions = append(j.sessions, s)
	close(j.added)
	j.added = make(chan struct{})
	j.mu.Unlock()
	return nil
}

// Launcher is "": run works as gdb's, since the jobs of the session
// cannot be restarted anyway.
func (j *Jobs) Launcher() string { return "" }

// Restartable refuses: a job that connected back cannot be started again
// from here, and its Session says why.
func (j *Jobs) Restartable() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sessions[0].Relaunchable()
}

// Restart refuses, as Restartable.
func (j *Jobs) Restart(context.Context) (string, error) { return "", j.Restartable() }

// End stops listening and ends every job of the session.
func (j *Jobs) End(timeout time.Duration) error {
	j.Listen(false)
	j.mu.Lock()
	sessions := j.sessions
	j.mu.Unlock()
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.End(timeout) })
	}
	wg.Wait()
	j.joined.Close()
	return errors.Join(errs...)
}
