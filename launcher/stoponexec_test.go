package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadProctable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "proctable")
	if _, err := readProctable(file, 2); !errors.Is(err, errPartial) {
		t.Fatalf("no file yet: %v", err)
	}
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("(rank, host, exe, pid) = (1, n2, /a, b/prog, 12)\n(rank, host, exe, pid) = (0, n1, /a, b/pr")
	if _, err := readProctable(file, 2); !errors.Is(err, errPartial) {
		t.Fatalf("a line on its way: %v", err)
	}
	write("(rank, host, exe, pid) = (1, n2, /a, b/prog, 12)\n(rank, host, exe, pid) = (0, n1, /a, b/prog, 11)\n")
	tab, err := readProctable(file, 2)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Procs[0].Host != "n1" || tab.Procs[0].Pid != 11 || tab.Procs[1].Executable != "/a, b/prog" || !tab.AcquiredPreMain || tab.Via == "" {
		t.Fatalf("table %+v", tab)
	}
	for in, want := range map[string]string{
		"(rank, host, exe, pid) = (0, n1, /p, 1)\n(rank, host, exe, pid) = (0, n1, /p, 2)\n": "rank 0 is listed twice",
		"(rank, host, exe, pid) = (5, n1, /p, 1)\n":                                          "of a rank 0-1",
		"(rank, host, exe, pid) = (0, n1, /p, 0)\n":                                          "rank 0 on n1 has no pid",
		"(rank, host, exe, pid) = (0, n1)\n":                                                 "is not (rank, host, exe, pid)",
	} {
		write(in)
		if _, err := readProctable(file, 2); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// FuzzReadProctable: any file gives a whole table, errPartial, or an
// error; never a panic, never a rank without a pid.
func FuzzReadProctable(f *testing.F) {
	f.Add("(rank, host, exe, pid) = (0, n1, /p, 1)\n(rank, host, exe, pid) = (1, n1, /p, 2)\n")
	f.Add("(rank, host, exe, pid) = (-1, n1, /p, 1)\n")
	f.Add(") = (")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		file := filepath.Join(dir, "proctable")
		if err := os.WriteFile(file, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		tab, err := readProctable(file, 2)
		if err != nil {
			return
		}
		for r, p := range tab.Procs {
			if p.Pid <= 0 {
				t.Fatalf("rank %d without a pid: %+v", r, tab)
			}
		}
	})
}

func TestPRRTELabels(t *testing.T) {
	un := spaced(func(line string) (int, string, string, bool) { return 3, "stdout", line, true })
	if _, _, text, _ := un(" token 1"); text != "token 1" {
		t.Errorf("%q", text)
	}
	if _, _, text, _ := un("  two"); text != " two" {
		t.Errorf("the line's own space went: %q", text)
	}
	for name, want := range map[string]bool{"prterun (pid 3)": true, "mpirun.openmpi (pid 3)": true, "mpiexec.hydra (pid 3)": false} {
		if prrte(name, "") != want {
			t.Errorf("prrte(%q) != %v", name, want)
		}
	}
}
