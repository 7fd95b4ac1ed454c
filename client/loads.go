package client

import (
	"context"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// plantTimeout bounds the answer to a load: reading a large library's
// symbols takes seconds.
const plantTimeout = 5 * time.Minute

// answerLoad is the front end's side of a reported load (wire.EventLoaded):
// the ranks of g wait, stopped at the load, until their debuggers have
// read the new libraries' symbols, which plants pending breakpoints there,
// and let them go on; that is OpPlant. Ranks that loaded the same
// libraries together arrive as one group, and cost one round trip.
// Ranks that did not answer are told as an error event, since they may be
// left stopped at the load.
func (s *Session) answerLoad(g wire.Group) {
	s.loadTrips.Add(1)
	groups, err := s.Command(context.Background(), g.Ranks, wire.OpPlant, nil, plantTimeout)
	if err != nil {
		return // the session ended
	}
	for _, a := range groups {
		if a.Status != wire.StatusOK {
			a.Body = append([]byte("planting breakpoints after a library load: "), a.Body...)
			s.news(Event{Op: wire.EventError, Group: a})
		}
	}
}

// LoadRoundTrips is how many reported loads the session has answered so
// far: one round trip to the ranks each.
func (s *Session) LoadRoundTrips() int64 { return s.loadTrips.Load() }
