package sdm

import (
	"context"

	"github.com/sdm-hpc/sdm/member"
)

// member runs a server that hands its rank to its host's leader
// (ServerOptions.Handover): it joins the leader, then starts a debugger
// whenever the leader asks, until the leader ends the session (nil),
// goes (an error) or ctx ends.
func (o ServerOptions) member(ctx context.Context, leader, servers int) error {
	timeout := o.Link.HandshakeTimeout
	if timeout <= 0 {
		timeout = member.JoinTimeout
	}
	joinCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	l, err := member.Join(joinCtx, o.Link.Key, leader, o.Index, servers, timeout)
	cancel()
	if err != nil {
		return err
	}
	if o.Trace != nil {
		o.Trace.Printf("handed rank %d to server %d", o.Index, leader)
	}
	// Its one piece of work, which ends its start: a member answers
	// nothing else. Joined is not called: it would only tell what
	// AfterAnswer's trim finds out again (resident.Trimmer).
	if o.AfterAnswer != nil {
		o.AfterAnswer()
	}
	return l.Serve(ctx, o.Handover.Spawn)
}
