package console

import (
	"context"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// goneTree is 8 ranks stopped at a breakpoint but for 6 and 7, which
// exited; commands that need a process fail on those with gdb's words.
func goneTree() *fakeTree {
	f := newFakeTree(8, atBreakpoint)
	f.states[6] = wire.State{State: wire.StateExited, Reason: "exited"}
	f.states[7] = f.states[6]
	f.answer = func(_ context.Context, ranks wire.RankSet, op string) ([]wire.Group, error) {
		if op == wire.OpStatus {
			return f.stateGroups(ranks), nil
		}
		live, dead := ranks.Minus(wire.Range(6, 7)), ranks.Intersect(wire.Range(6, 7))
		var groups []wire.Group
		if !live.Empty() {
			body := wire.MustEncode(wire.Trace{Levels: []wire.Level{{Frame: atBreakpoint.Frame}}})
			if op != wire.OpBacktrace {
				body = nil
			}
			groups = append(groups, wire.Group{Ranks: live, Body: body})
		}
		if !dead.Empty() {
			groups = append(groups, wire.Group{Ranks: dead, Status: wire.StatusError, Body: []byte("No registers.")})
		}
		return groups, nil
	}
	return f
}

// A command to ranks whose process exited says so, once, in one line for
// them all, never with gdb's words.
func TestGoneRanksSayWhatBecameOfThem(t *testing.T) {
	for line, want := range map[string]string{
		"where":        "[0-5] #0  pass () at ring.c:10\n[6-7] exited with code 0\n",
		"[5-7] where":  "[5] #0  pass () at ring.c:10\n[6-7] exited with code 0\n",
		"continue":     "[6-7] exited with code 0\n",
		"[7] continue": "[7] exited with code 0\n",
		"[0-5] where":  "[0-5] #0  pass () at ring.c:10\n",
		"globals":      "[0-5] none\n[6-7] error: No registers.\n", // not an op on the process
	} {
		out, err := execLines(t, goneTree(), Options{}, line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if out != want {
			t.Errorf("%s printed %q, want %q", line, out, want)
		}
	}
}

func TestGoneRanksInJSON(t *testing.T) {
	out, err := execLines(t, goneTree(), Options{JSON: true}, "where")
	if err != nil {
		t.Fatal(err)
	}
	replies := replies(jsonLines(t, out))
	if len(replies) != 1 {
		t.Fatalf("JSON: %s", out)
	}
	groups, _ := replies[0]["groups"].([]any)
	last, _ := groups[len(groups)-1].(map[string]any)
	if last["ranks"] != "6-7" || last["error"] != "exited with code 0" || last["op"] != wire.OpBacktrace {
		t.Fatalf("JSON: %s", out)
	}
}
