package dap

import (
	"fmt"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// threadShift splits a thread id: the rank + 1 below it, the thread's
// number in its rank's debugger above it (0: the rank's selected thread).
const threadShift = 20

// threadID is the client's id of a rank's thread: rank + 1 for the
// thread its debugger has selected (the one a stop names), the thread's
// number above threadShift for the others.
func threadID(rank, thread int) int { return rank + 1 + thread<<threadShift }

// threadOf is the rank and thread an id stands for; the id rank + 1 of a
// multi-threaded rank is the thread the last threads request found
// selected, so that a rank's threads keep their names whatever is
// selected meanwhile.
func (a *adapter) threadOf(j *job, id int) (place, error) {
	rank, thread := id&(1<<threadShift-1)-1, id>>threadShift
	if rank < 0 || !j.ranks.Contains(rank) {
		return place{}, fmt.Errorf("no thread %d: the threads are ranks %v, numbered from 1", id, j.ranks)
	}
	if thread == 0 {
		a.mu.Lock()
		thread = a.handles.current[rank]
		a.mu.Unlock()
	}
	return place{rank: rank, thread: thread}, nil
}

// selectThread makes a place's thread the selected one of its rank's
// debugger (nothing to do for thread 0).
func (a *adapter) selectThread(j *job, at place) error {
	if at.thread == 0 {
		return nil
	}
	_, err := a.one(j, at.rank, wire.OpThread, wire.MustEncode(wire.Count{N: at.thread}))
	return err
}

// threads lists the ranks, one thread each ("rank 3"), and, with
// allThreads, each thread of a stopped multi-threaded rank ("rank 3 ·
// thread 2"): one broadcast to the stopped ranks finds them.
func (a *adapter) threads(m *godap.ThreadsRequest) error {
	threads := []godap.Thread{}
	j := a.current()
	if j == nil {
		return a.send(&godap.ThreadsResponse{Response: ok(m.Request), Body: godap.ThreadsResponseBody{Threads: threads}})
	}
	several := map[int][]wire.Thread{}
	if stopped := j.state.still(); j.threads && !stopped.Empty() {
		groups, err := j.s.Command(a.ctx, stopped, wire.OpThreads, nil, a.opts.Timeout)
		if err != nil {
			return err
		}
		for _, g := range groups {
			// A rank without gdb yet, or one that cannot say, is one thread.
			list, err := op.Threads.DecodeAnswer(g.Body)
			if g.Status != wire.StatusOK || err != nil || len(list) < 2 {
				continue
			}
			g.Ranks.Each(func(r int) bool {
				several[r] = list
				return true
			})
		}
	}
	current := make(map[int]int)
	j.ranks.Each(func(r int) bool {
		list, ok := several[r]
		if !ok {
			threads = append(threads, godap.Thread{Id: threadID(r, 0), Name: fmt.Sprintf("rank %d", r)})
			return true
		}
		for _, th := range list {
			id := threadID(r, th.ID)
			if th.Current {
				id, current[r] = threadID(r, 0), th.ID
			}
			threads = append(threads, godap.Thread{Id: id, Name: fmt.Sprintf("rank %d · thread %d", r, th.ID)})
		}
		return true
	})
	a.mu.Lock()
	a.handles.current = current
	a.mu.Unlock()
	return a.send(&godap.ThreadsResponse{Response: ok(m.Request), Body: godap.ThreadsResponseBody{Threads: threads}})
}
