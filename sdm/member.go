package sdm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// member runs a server that hands its rank to its host's leader
// (ServerOptions.Handover): it joins the leader, then starts a debugger
// whenever the leader asks, until the leader ends the session (nil),
// goes (an error) or ctx ends.
func (o ServerOptions) member(ctx context.Context, leader, servers int) error {
	l, err := o.joinLeader(ctx, leader, servers)
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
	err = l.Serve(ctx, o.Handover.Spawn)
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, wire.ErrLeaderGone):
		return fmt.Errorf("server %d, which this host's ranks were handed to, is gone", leader)
	}
	return err
}

// joinLeader dials the leader's Unix socket until it listens and takes
// the rank, or o.Timeout passes; a leader that refuses it is final.
func (o ServerOptions) joinLeader(ctx context.Context, leader, servers int) (*wire.Leader, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	addr := wire.LocalAddress(o.Link.Key, leader)
	timeout := o.Link.HandshakeTimeout
	if timeout <= 0 {
		timeout = wire.DefaultHandshakeTimeout
	}
	wait := firstRetry
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unixpacket", addr.Name)
		if err == nil {
			l, err := wire.JoinLeader(conn, o.Index, servers, timeout)
			if err != nil {
				return nil, fmt.Errorf("server %d, this host's first, refused us: %w", leader, err)
			}
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("could not reach server %d, this host's first, within %v: %w", leader, o.Timeout, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}
