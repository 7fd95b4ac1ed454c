package backend

import (
	"strings"
	"testing"
)

func TestParseDebugger(t *testing.T) {
	for in, want := range map[string]Debugger{"gdb-mi": GDB, "gdb": GDB, "sim": Sim} {
		if got, err := ParseDebugger(in); got != want || err != nil {
			t.Errorf("%s: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", "lldb", "GDB"} {
		if _, err := ParseDebugger(in); err == nil || !strings.Contains(err.Error(), "--debugger="+in+" is not available") {
			t.Errorf("%q: %v", in, err)
		}
	}
}
