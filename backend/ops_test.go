package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/op"
)

// TestEveryOpIsDispatched checks the table against the dispatcher: every
// op that reaches a backend decodes into a call, and Unsupported answers
// each with ErrUnsupported naming the op and the backend.
func TestEveryOpIsDispatched(t *testing.T) {
	none := backend.Unsupported{Backend: "none"}
	for _, s := range op.Table {
		call, err := backend.Decode(s.Name, nil)
		if s.Tree {
			if !errors.Is(err, backend.ErrUnknownOp) {
				t.Errorf("%s is the tree's, yet the dispatcher takes it (%v)", s.Name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: no dispatch: %v", s.Name, err)
			continue
		}
		_, err = call(context.Background(), none)
		if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), s.Name) || !strings.Contains(err.Error(), "none") {
			t.Errorf("%s on Unsupported: %v", s.Name, err)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	if _, err := backend.Decode("frobnicate", nil); !errors.Is(err, backend.ErrUnknownOp) || !strings.Contains(err.Error(), "frobnicate") {
		t.Errorf("unknown op: %v", err)
	}
	// A body that is not the op's type fails at the edge, naming the op.
	if _, err := backend.Decode(op.Break.Name, []byte{0x2a}); err == nil || !strings.HasPrefix(err.Error(), "break: ") {
		t.Errorf("bad break body: %v", err)
	}
}
