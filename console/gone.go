package console

import (
	"context"

	"github.com/sdm-hpc/sdm/wire"
)

// Ranks whose process is gone (it exited, was killed, was let go, or
// never started) answer a command that needs it with gdb's words for
// the absence ("No registers.", "The program is not being run."), which
// tell a user nothing about the rank. The console puts what became of
// the process in their place, in one line per outcome:
// "[7] exited with code 0".

// needsProcess are the ops that need a live process: their failures on
// ranks without one are told as what became of it. Ops on the program
// alone (break, ptype, globals) fail for reasons of their own.
var needsProcess = map[string]bool{
	wire.OpCont: true, wire.OpStep: true, wire.OpNext: true, wire.OpFinish: true, wire.OpHalt: true,
	wire.OpKill: true, wire.OpDetach: true, wire.OpWhere: true, wire.OpFrame: true, wire.OpDepth: true,
	wire.OpLocals: true, wire.OpArgs: true, wire.OpPrint: true, wire.OpThreads: true, wire.OpThread: true,
	wire.OpMemRead: true, wire.OpMemSet: true, wire.OpSample: true, wire.OpBacktrace: true, wire.OpUp: true,
	wire.OpEvaluate: true, wire.OpFrameInfo: true, wire.OpRegisters: true,
}

// gone is a set of ranks whose process is gone, and what became of it.
type gone struct {
	ranks wire.RankSet
	text  string
}

// goneOf splits off the failed answers to op of ranks whose process is
// gone: it asks those ranks' status once, and returns the groups left
// and the ranks gone, one entry per outcome. Should the status not come,
// the groups stand as they are.
func (c *Console) goneOf(ctx context.Context, op string, groups []wire.Group) ([]wire.Group, []gone) {
	if !needsProcess[op] {
		return groups, nil
	}
	var failed wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusError {
			failed = failed.Union(g.Ranks)
		}
	}
	if failed.Empty() {
		return groups, nil
	}
	states, err := c.s.Command(ctx, failed, wire.OpStatus, nil, c.opts.Timeout)
	if err != nil {
		return groups, nil
	}
	var out []gone
	var all wire.RankSet
	for _, s := range states {
		var st wire.State
		if s.Status != wire.StatusOK || wire.Decode(s.Body, &st) != nil {
			continue
		}
		switch st.State {
		case wire.StateExited, wire.StateNotStarted, wire.StateDetached, wire.StateNone:
			out = append(out, gone{ranks: s.Ranks, text: stateText(st)})
			all = all.Union(s.Ranks)
		}
	}
	if all.Empty() {
		return groups, nil
	}
	kept := make([]wire.Group, 0, len(groups))
	for _, g := range groups {
		if g.Status == wire.StatusError {
			g.Ranks = g.Ranks.Minus(all)
		}
		if !g.Ranks.Empty() {
			kept = append(kept, g)
		}
	}
	return kept, out
}

// printGone says, for op, what became of the processes of ranks gone.
func (c *Console) printGone(op string, gones []gone) {
	for _, g := range gones {
		c.report(op, g.ranks, wire.StatusError.String(), g.text)
	}
}
