package gdbmi

import (
	"errors"
	"fmt"
	"testing"
)

func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want error
	}{
		{`No symbol "MPIR_debug_gate" in current context.`, ErrNoSymbol},
		{"Cannot execute this command while the selected thread is running.", ErrRunning},
		{"Selected thread is running.", ErrRunning},
		{"The program is not being run.", nil},
		{"No source file named nosuch.c.", ErrNoSource},
		{`No symbol table is loaded.  Use the "file" command.`, ErrNoSymbol},
	} {
		err := fmt.Errorf("rank 3: %w", newRefusal(c.msg))
		for _, s := range []error{ErrNoSymbol, ErrRunning, ErrNoSource} {
			if got := errors.Is(err, s); got != (s == c.want) {
				t.Errorf("%q: errors.Is(%v) = %v", c.msg, s, got)
			}
		}
		var r *Refusal
		if !errors.As(err, &r) || r.Msg != c.msg || err.Error() != "rank 3: "+c.msg {
			t.Errorf("%q: %v", c.msg, err)
		}
	}
}
