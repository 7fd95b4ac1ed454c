package dap

import (
	"sync"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// rankState is what the events said of the job's ranks: which run, which
// are gone, and whether the session ended.
type rankState struct {
	mu         sync.Mutex
	all        wire.RankSet
	running    wire.RankSet
	gone       wire.RankSet // exited, killed or lost
	entries    map[int]bool // the temporary breakpoints of stopOnEntry
	ended      bool         // endJob ran
	terminated bool         // the client was told
}

func newRankState(all wire.RankSet) *rankState {
	return &rankState{all: all, entries: make(map[int]bool)}
}

// entry records the numbers of stopOnEntry's breakpoints.
func (s *rankState) entry(groups []wire.Group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range groups {
		if bp, err := op.Break.DecodeAnswer(g.Body); err == nil && g.Status == wire.StatusOK {
			s.entries[bp.Number] = true
		}
	}
}

// isEntry says whether breakpoint n is one of stopOnEntry's.
func (s *rankState) isEntry(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[n]
}

// ran records ranks that run.
func (s *rankState) ran(r wire.RankSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = s.running.Union(r.Minus(s.gone))
}

// failed records ranks that a command meant to set going did not: those
// whose answer was an error (not a timeout: those may run).
func (s *rankState) failed(groups []wire.Group) {
	for _, g := range groups {
		if g.Status == wire.StatusError {
			s.stopped(g.Ranks)
		}
	}
}

// stopped records ranks that stopped, and returns those still running.
func (s *rankState) stopped(r wire.RankSet) wire.RankSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = s.running.Minus(r)
	return s.running
}

// exited records ranks that are gone, and says whether all are.
func (s *rankState) exited(r wire.RankSet) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = s.running.Minus(r)
	s.gone = s.gone.Union(r)
	return s.all.Minus(s.gone).Empty()
}

// live is the ranks not gone.
func (s *rankState) live() wire.RankSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.Minus(s.gone)
}

// still is the live ranks that do not run.
func (s *rankState) still() wire.RankSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.Minus(s.gone).Minus(s.running)
}

// moving is the ranks that run.
func (s *rankState) moving() wire.RankSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// end marks the session ended, true the first time.
func (s *rankState) end() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.ended
	s.ended = true
	return first
}

// terminate marks the client told that the job ended, true the first time.
func (s *rankState) terminate() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.terminated
	s.terminated = true
	return first
}
