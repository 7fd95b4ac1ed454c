package local

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/wire"
)

// ending is how one process of the job ended, and when among the others.
type ending struct {
	server int // its index; the master's is the job's size
	err    error
	order  int // 1 for the first to end, and so on
}

// summary is the error of a job some of whose processes failed, cause
// first: the first of them a signal killed (or, with none, the first to
// fail), then the others by how they ended ("master killed by SIGKILL:
// ranks 0-63 lost (exit status 1)"). When the master is killed, the
// servers follow it; a line each would bury what happened under what
// followed.
func summary(ends []ending, size int, layout bool, log string) error {
	var failed []ending
	for _, e := range ends {
		if e.err != nil {
			failed = append(failed, e)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// The cause is the first to fail, and one killed by a signal before
	// one that exited: the order in which waits return is not always the
	// order of the deaths, and servers that follow a death exit.
	slices.SortFunc(failed, func(a, b ending) int {
		return cmp.Or(cmp.Compare(exited(a.err), exited(b.err)), a.order-b.order)
	})
	noun := "rank"
	if layout {
		noun = "server"
	}
	name := func(set wire.RankSet, master bool) string {
		some := fmt.Sprintf("%ss %v", noun, set)
		switch {
		case set.Empty():
			return "master"
		case set.Count() == 1:
			some = fmt.Sprintf("%s %v", noun, set)
		}
		if master {
			some += " and the master"
		}
		return some
	}
	// The followers, grouped by how they ended, in the order first seen.
	type group struct {
		how    string
		set    wire.Builder
		master bool
	}
	var groups []*group
	for _, e := range failed[1:] {
		how := rm.HowEnded(e.err)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.how == how })
		if i < 0 {
			groups = append(groups, &group{how: how})
			i = len(groups) - 1
		}
		if e.server == size {
			groups[i].master = true
		} else {
			groups[i].set.Add(e.server)
		}
	}
	cause := failed[0]
	one := wire.RankSet{}
	if cause.server != size {
		one = wire.Single(cause.server)
	}
	causeHow := rm.HowEnded(cause.err)
	if len(groups) == 1 && groups[0].how == causeHow {
		// All alike (a job cancelled, say): one line for all of them.
		all := groups[0].set
		all.AddSet(one)
		return fmt.Errorf("%s %s (see %s)", name(all.Set(), groups[0].master || cause.server == size), causeHow, log)
	}
	text := fmt.Sprintf("%s %s", name(one, cause.server == size), causeHow)
	for i, g := range groups {
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		text += fmt.Sprintf("%s%s lost (%s)", sep, name(g.set.Set(), g.master), g.how)
	}
	return fmt.Errorf("%s (see %s)", text, log)
}

// exited says whether err is that of a process that exited (1), rather
// than one a signal killed (0).
func exited(err error) int {
	if ws, ok := rm.WaitStatus(err); ok && ws.Signaled() {
		return 0
	}
	return 1
}
