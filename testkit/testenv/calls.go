package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var calls struct {
	once sync.Once
	ok   bool
	why  string
}

// InferiorCalls says whether gdb can call a function of the program it
// debugs on this machine. gdb 13 (Debian 12's) cannot on processors with
// AMX state (Intel's since Sapphire Rapids) under kernels that give it to
// ptrace: its write of the registers back fails, "Couldn't write
// extended state status: Bad address"; gdb 14 and later can. Tests skip
// what needs a call where it cannot, and say why in their log.
func InferiorCalls(t testing.TB) bool {
	t.Helper()
	gdb := RequireTool(t, "gdb")
	calls.once.Do(func() {
		calls.ok = true
		dir, err := os.MkdirTemp("", "sdm-calls-")
		if err != nil {
			return
		}
		defer os.RemoveAll(dir)
		src, prog := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
		if os.WriteFile(src, []byte("int seven(void) { return 7; }\nint main(void) { return seven() - 7; }\n"), 0o600) != nil {
			return
		}
		if out, err := Command(t, "gcc", "-g", "-o", prog, src).CombinedOutput(); err != nil {
			t.Logf("gcc: %v\n%s", err, out)
			return
		}
		out, _ := Command(t, gdb, "-nx", "-batch", "-ex", "break main", "-ex", "run", "-ex", "print seven()", prog).CombinedOutput()
		if strings.Contains(string(out), "Couldn't write extended state status") {
			calls.ok, calls.why = false, "gdb cannot call functions of a program on this machine (its registers' AMX state): "+
				strings.TrimSpace(string(out[strings.Index(string(out), "Couldn't"):]))
		}
	})
	if !calls.ok {
		t.Log(calls.why)
	}
	return calls.ok
}
