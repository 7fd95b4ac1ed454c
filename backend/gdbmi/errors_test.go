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

// gdb says why it aborts on its log stream, over several records: the
// internal error's line is what its death names.
func TestLastWords(t *testing.T) {
	for _, c := range []struct {
		log  []string
		want string
	}{
		{nil, ""},
		{[]string{"warning: one\n", "warning: two\n"}, "warning: two"},
		{[]string{"../../gdb/linux-nat.c:2619: internal-error: lwp_inferior: Assertion `inf != nullptr' failed.\nA problem internal to GDB has been detected,\n",
			"further debugging may prove unreliable.\n"},
			"../../gdb/linux-nat.c:2619: internal-error: lwp_inferior: Assertion `inf != nullptr' failed."},
	} {
		if got := lastWords(c.log); got != c.want {
			t.Errorf("lastWords(%q) = %q, want %q", c.log, got, c.want)
		}
	}
}
