package resident

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// underDebugger is set in the copy of the test binary that
// TestDropExecutableUnderADebugger runs under ptrace: it drops its
// executable and says how much of it was mapped before and after.
const underDebugger = "SDM_RESIDENT_TRACED"

func TestMain(m *testing.M) {
	if os.Getenv(underDebugger) != "" {
		before, err := exeRSS()
		if err == nil {
			err = DropExecutable()
		}
		after, err2 := exeRSS()
		fmt.Println(before, after, err, err2)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// counter lives in the executable's writable data, which DropExecutable
// must leave as it is.
var counter = 41

// The executable's code and constants shrink to what runs after, and
// the program's variables keep their values.
func TestDropExecutable(t *testing.T) {
	counter++
	want := counter
	before := mustExeRSS(t)
	if before == 0 {
		t.Fatal("no page of the executable is mapped before")
	}
	if err := DropExecutable(); err != nil {
		t.Fatal(err)
	}
	after := mustExeRSS(t)
	// What measuring runs comes back at once (with the pages around each
	// one): a quarter less is well clear of it.
	if after >= before*3/4 {
		t.Errorf("the executable's read-only pages: %d KB mapped before, %d KB after; want a quarter less at least", before, after)
	}
	if counter != want {
		t.Errorf("a variable of the program reads %d after, want %d", counter, want)
	}
}

// A process under a debugger keeps its pages: the breakpoints are
// private copies of them, which unmapping would throw away.
func TestDropExecutableUnderADebugger(t *testing.T) {
	// ptrace's requests come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	cmd := testenv.Command(t, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), underDebugger+"=1")
	cmd.Stdout = out
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// It stops at its exec and at each signal after: let it go on each
	// time, with the signal, until it exits. The command's deadline kills
	// it if it hangs.
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
		if ws.Exited() || ws.Signaled() {
			if ws.ExitStatus() != 0 {
				t.Fatalf("the traced copy ended: %v", ws)
			}
			break
		}
		sig := 0
		if ws.StopSignal() != syscall.SIGTRAP {
			sig = int(ws.StopSignal())
		}
		if err := syscall.PtraceCont(pid, sig); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	var before, after int
	var e1, e2 string
	if _, err := fmt.Sscan(string(got), &before, &after, &e1, &e2); err != nil || e1 != "<nil>" || e2 != "<nil>" {
		t.Fatalf("the traced copy said %q", got)
	}
	if before == 0 || after < before {
		t.Errorf("under a debugger, the executable's read-only pages: %d KB mapped before, %d KB after; want none let go", before, after)
	}
}

// mustExeRSS is exeRSS for a test.
func mustExeRSS(t *testing.T) int {
	t.Helper()
	kb, err := exeRSS()
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// exeRSS is how much of the executable's read-only mappings is resident,
// in KB.
func exeRSS() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total, counting := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 6 && strings.Contains(fields[0], "-"):
			counting = fields[5] == exe && fields[1][1] == '-'
		case counting && fields[0] == "Rss:":
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, err
			}
			total += kb
		}
	}
	return total, sc.Err()
}

// Only the executable's read-only mappings are let go, and a line of
// them that cannot be read is an error that quotes it.
func TestReadOnlyMappings(t *testing.T) {
	maps := `00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/sdm-server
00652000-00653000 r--p 00052000 08:02 173521 /usr/bin/sdm-server
00653000-00654000 rw-p 00053000 08:02 173521 /usr/bin/sdm-server
00e03000-00e24000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000001000 r-xp 00000000 08:02 2 /usr/lib/libc.so.6
`
	var got []string
	err := readOnly([]byte(maps), "/usr/bin/sdm-server", func(lo, hi uint64) error {
		got = append(got, fmt.Sprintf("%x-%x", lo, hi))
		return nil
	})
	if want := "400000-452000 652000-653000"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("let go %v, %v; want %s", got, err, want)
	}
	for _, line := range []string{
		"00452000-00400000 r-xp 00000000 08:02 173521 /usr/bin/sdm-server",
		"0040000g-00452000 r-xp 00000000 08:02 173521 /usr/bin/sdm-server",
		"00400000 r-xp 00000000 08:02 173521 /usr/bin/sdm-server",
	} {
		err := readOnly([]byte(line+"\n"), "/usr/bin/sdm-server", func(lo, hi uint64) error {
			t.Errorf("%q let go %x-%x", line, lo, hi)
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), line) {
			t.Errorf("%q: %v, want an error that quotes the line", line, err)
		}
	}
}
