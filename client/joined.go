package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Joined drives the sessions of several jobs as one, for a front end
// that takes on new jobs while it debugs (sdm listen): the ranks of the
// jobs follow one another, the first job's from 0, the next one's from
// where the first's end, and so on. Commands are split by job and their
// answers merged back; events of every job come out of one queue.
type Joined struct {
	events *queue
	done   chan struct{}

	mu     sync.Mutex
	jobs   []joinedJob
	size   int
	closed bool
}

type joinedJob struct {
	s         *Session
	first     int
	forwarded chan struct{} // closed when the job's events have all moved
	moved     *progress     // how many of the job's events have moved
	before    int           // how many its session had given out before it joined
}

// progress is a count that can be waited for.
type progress struct {
	mu   sync.Mutex
	n    int
	wake chan struct{} // closed and replaced at each step
}

func newProgress() *progress { return &progress{wake: make(chan struct{})} }

func (p *progress) step() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	close(p.wake)
	p.wake = make(chan struct{})
}

// reach waits until the count is at least n, done is closed or ctx ends.
func (p *progress) reach(ctx context.Context, n int, done <-chan struct{}) {
	for {
		p.mu.Lock()
		at, wake := p.n, p.wake
		p.mu.Unlock()
		if at >= n {
			return
		}
		select {
		case <-wake:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// NewJoined returns a Joined with no job yet.
func NewJoined() *Joined {
	return &Joined{events: newQueue(), done: make(chan struct{})}
}

// Add joins the job of s and returns its first rank: its ranks are
// first..first+s.Size()-1 from now on.
func (j *Joined) Add(s *Session) (first int, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return 0, ErrClosed
	}
	if j.size+s.Size() > wire.MaxRank {
		return 0, fmt.Errorf("%d ranks more would pass the largest rank, %d", s.Size(), wire.MaxRank)
	}
	first = j.size
	job := joinedJob{s: s, first: first, forwarded: make(chan struct{}), moved: newProgress(), before: s.events.taken()}
	j.jobs = append(j.jobs, job)
	j.size += s.Size()
	go j.forward(job)
	return first, nil
}

// forward moves the events of one job into the common queue, its ranks
// shifted to where the job stands, until the job's session has ended and
// its last event moved.
func (j *Joined) forward(job joinedJob) {
	defer close(job.forwarded)
	for {
		// Output keeps the budget of its session until it is read here,
		// so that a slow reader slows the job down, as for a session.
		e, err := job.s.events.take(context.Background())
		if err != nil {
			return
		}
		e.ev.Group.Ranks = e.ev.Group.Ranks.Shift(job.first)
		j.events.put(e)
		job.moved.step()
	}
}

// Size is the number of ranks of all the jobs.
func (j *Joined) Size() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// NextEvent returns the next event of any job, as Session.NextEvent does.
func (j *Joined) NextEvent(ctx context.Context) (Event, error) { return j.events.next(ctx) }

// Done is closed by Close.
func (j *Joined) Done() <-chan struct{} { return j.done }

// Close ends the joined view; the sessions themselves are their owners'
// to end. Every event of a session that has ended is queued first, so
// that the last words of the jobs ended before are still read; events
// still queued can be read.
func (j *Joined) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	j.closed = true
	for _, job := range j.jobs {
		select {
		case <-job.s.Done():
			<-job.forwarded
		default:
		}
	}
	j.events.close()
	close(j.done)
}

// Command sends the command to the ranks of each job that ranks names,
// all at once, and merges the answers. Ranks beyond every job are
// answered StatusNoRank; a job whose session fails answers for its ranks
// with StatusError and the reason.
func (j *Joined) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	if ranks.Empty() {
		return nil, errors.New("no ranks to send to")
	}
	j.mu.Lock()
	jobs := append([]joinedJob(nil), j.jobs...)
	size := j.size
	j.mu.Unlock()
	answers := make([][]wire.Group, len(jobs))
	var wg sync.WaitGroup
	for i, job := range jobs {
		mine := ranks.Intersect(wire.Range(job.first, job.first+job.s.Size()-1))
		if mine.Empty() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups, err := job.s.Command(ctx, mine.Shift(-job.first), op, body, timeout)
			// The job's events that came before its answer are moved
			// before the answer is given, as a session gives them.
			job.moved.reach(ctx, job.s.events.count()-job.before, job.forwarded)
			if err != nil {
				answers[i] = []wire.Group{{Ranks: mine, Status: wire.StatusError, Body: []byte(err.Error())}}
				return
			}
			for _, g := range groups {
				g.Ranks = g.Ranks.Shift(job.first)
				answers[i] = append(answers[i], g)
			}
		}()
	}
	wg.Wait()
	var merged []wire.Group
	for _, groups := range answers {
		for _, g := range groups {
			merged = wire.AppendMerged(merged, g, groupRanks, sameGroup, nil)
		}
	}
	if beyond := ranks.Minus(wire.All(size)); !beyond.Empty() {
		merged = append(merged, wire.Group{Ranks: beyond, Status: wire.StatusNoRank})
	}
	return merged, ctx.Err()
}

func groupRanks(g *wire.Group) *wire.RankSet { return &g.Ranks }

func sameGroup(a, b *wire.Group) bool {
	return a.Status == b.Status && string(a.Body) == string(b.Body)
}
