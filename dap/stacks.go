package dap

import (
	"fmt"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// stacksCommand is sdm's own request for the merged stack tree.
const stacksCommand = "sdm/stacks"

// StacksRequest asks for the merged stack tree of some ranks (all when
// Ranks is empty): sdm/stacks.
type StacksRequest struct {
	godap.Request
	Arguments StacksArguments `json:"arguments"`
}

// StacksArguments name the ranks, as a rank set: "0-3,7".
type StacksArguments struct {
	Ranks string `json:"ranks,omitempty"`
}

// StacksResponse is the tree: call-prefix nodes, outermost frame first,
// each with the ranks that reached it, and the ranks whose stacks could
// not be read.
type StacksResponse struct {
	godap.Response
	Body StackTree `json:"body"`
}

// StackTree is the body of an sdm/stacks response.
type StackTree struct {
	Roots  []console.TreeNode `json:"roots"` // as the console's --json gives them
	Errors []RankErrors       `json:"errors,omitempty"`
}

// RankErrors are ranks that failed alike.
type RankErrors struct {
	Ranks string `json:"ranks"`
	Error string `json:"error"`
}

// runningRanks are the running job and the ranks a request of sdm's
// own names: its live ranks when it names none.
func (a *adapter) runningRanks(command string, args StacksArguments) (*job, wire.RankSet, error) {
	j, err := a.running()
	if err != nil {
		return nil, wire.RankSet{}, err
	}
	if args.Ranks == "" {
		return j, j.state.live(), nil
	}
	ranks, err := wire.ParseRankSet(args.Ranks)
	if err != nil {
		return nil, wire.RankSet{}, fmt.Errorf("%s: ranks %q: %v", command, args.Ranks, err)
	}
	return j, ranks, nil
}

// stacks answers sdm/stacks.
func (a *adapter) stacks(m *StacksRequest) error {
	j, ranks, err := a.runningRanks(stacksCommand, m.Arguments)
	if err != nil {
		return err
	}
	groups, err := j.s.Command(a.ctx, ranks, wire.OpWhere, nil, a.opts.Timeout)
	if err != nil {
		return err
	}
	var tree wire.CallTree
	var body StackTree
	for _, g := range groups {
		stack, err := op.Where.DecodeAnswer(g.Body)
		if g.Status != wire.StatusOK || err != nil {
			body.Errors = append(body.Errors, RankErrors{Ranks: g.Ranks.String(), Error: string(g.Body)})
			continue
		}
		tree.AddStackOf(g.Ranks, stack.Frames)
	}
	body.Roots = console.TreeJSON(console.TreeOf(tree))
	return a.send(&StacksResponse{Response: ok(m.Request), Body: body})
}

// deadlockCommand is sdm's own request for deadlock's diagnosis.
const deadlockCommand = "sdm/deadlock"

// DeadlockRequest asks why some ranks (all when Ranks is empty) hang:
// sdm/deadlock.
type DeadlockRequest struct {
	godap.Request
	Arguments StacksArguments `json:"arguments"`
}

// DeadlockResponse is deadlock's diagnosis, as --json gives it
// (docs/JSON.md), and the ranks whose stacks could not be read.
type DeadlockResponse struct {
	godap.Response
	Body DeadlockBody `json:"body"`
}

// DeadlockBody is the body of an sdm/deadlock response.
type DeadlockBody struct {
	Diagnosis map[string]any `json:"diagnosis"`
	Errors    []RankErrors   `json:"errors,omitempty"`
}

// deadlock answers sdm/deadlock from one sample of the ranks' stacks.
func (a *adapter) deadlock(m *DeadlockRequest) error {
	j, ranks, err := a.runningRanks(deadlockCommand, m.Arguments)
	if err != nil {
		return err
	}
	groups, err := j.s.Command(a.ctx, ranks, wire.OpSample, wire.MustEncode(wire.Sample{Count: 1}), a.opts.Timeout)
	if err != nil {
		return err
	}
	var tree wire.CallTree
	var body DeadlockBody
	for _, g := range groups {
		var t wire.CallTree
		if g.Status != wire.StatusOK || wire.Decode(g.Body, &t) != nil {
			body.Errors = append(body.Errors, RankErrors{Ranks: g.Ranks.String(), Error: string(g.Body)})
			continue
		}
		tree.Merge(t)
	}
	d := console.Diagnose(console.TreeOf(tree), tree.Moved)
	if queues, size := a.queuesOf(j, ranks); len(queues) > 0 {
		d = d.WithQueues(queues, size)
	}
	body.Diagnosis = d.JSON()
	return a.send(&DeadlockResponse{Response: ok(m.Request), Body: body})
}

// queuesCommand is sdm's own request for the ranks' MPI operations in
// flight.
const queuesCommand = "sdm/queues"

// QueuesRequest asks for the MPI operations in flight of some ranks (all
// when Ranks is empty): sdm/queues.
type QueuesRequest struct {
	godap.Request
	Arguments StacksArguments `json:"arguments"`
}

// QueuesResponse is the operations, merged over ranks as the console's
// queues merges them, the longest waits first; Idle the ranks with none.
type QueuesResponse struct {
	godap.Response
	Body QueuesBody `json:"body"`
}

// QueuesBody is the body of an sdm/queues response.
type QueuesBody struct {
	Groups []QueueGroup `json:"groups"`
	Idle   string       `json:"idle,omitempty"`
	Errors []RankErrors `json:"errors,omitempty"`
}

// QueueGroup is ranks with an operation that reads alike.
type QueueGroup struct {
	Ranks        string  `json:"ranks"`
	Text         string  `json:"text"`
	Call         string  `json:"call"`
	WaitingLeast float64 `json:"waitingLeast"` // seconds
	WaitingMost  float64 `json:"waitingMost"`
	At           string  `json:"at,omitempty"` // where the program called it
	// Library is the MPI's message-queue library the operation was read
	// through (a job sdm attached to), which knows no waits.
	Library string `json:"library,omitempty"`
}

// queues answers sdm/queues.
func (a *adapter) queues(m *QueuesRequest) error {
	j, ranks, err := a.runningRanks(queuesCommand, m.Arguments)
	if err != nil {
		return err
	}
	groups, err := j.s.Command(a.ctx, ranks, wire.OpQueues, nil, a.opts.Timeout)
	if err != nil {
		return err
	}
	body := QueuesBody{Groups: []QueueGroup{}}
	queues, _, failed := console.DecodeQueues(groups)
	for _, g := range failed {
		body.Errors = append(body.Errors, RankErrors{Ranks: g.Ranks.String(), Error: string(g.Body)})
	}
	merged, idle := console.GroupQueues(queues)
	for _, g := range merged {
		body.Groups = append(body.Groups, QueueGroup{Ranks: g.Ranks.String(), Text: g.Text, Call: g.Op.Call,
			WaitingLeast: g.Least.Seconds(), WaitingMost: g.Most.Seconds(), At: console.PlaceText(g.Op.At), Library: g.Library})
	}
	if !idle.Empty() {
		body.Idle = idle.String()
	}
	return a.send(&QueuesResponse{Response: ok(m.Request), Body: body})
}

// queuesOf asks ranks for their queues: those that have them, and the
// world's size they tell.
func (a *adapter) queuesOf(j *job, ranks wire.RankSet) (map[int]wire.Queues, int) {
	groups, err := j.s.Command(a.ctx, ranks, wire.OpQueues, nil, a.opts.Timeout)
	if err != nil {
		return nil, 0
	}
	queues, size, _ := console.DecodeQueues(groups)
	return queues, size
}
