package mpir

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// started is a process started by a test, as the launcher would: the
// test is its parent and waits for it.
type started struct {
	cmd    *exec.Cmd
	done   chan error
	stdout io.Reader
}

func starter(t *testing.T, argv ...string) (StartFunc, *started) {
	t.Helper()
	s := &started{cmd: testenv.Command(t, argv[0], argv[1:]...), done: make(chan error, 1)}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.stdout = out
	start := func(attr *syscall.SysProcAttr) (int, error) {
		s.cmd.SysProcAttr = attr
		if err := s.cmd.Start(); err != nil {
			return 0, err
		}
		return s.cmd.Process.Pid, nil
	}
	t.Cleanup(func() {
		if s.cmd.Process != nil {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return start, s
}

// lines waits for n lines of the process's output that say what.
func (s *started) lines(t *testing.T, n int, what string) {
	t.Helper()
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(s.stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), what) {
				if n--; n == 0 {
					found <- true
					io.Copy(io.Discard, s.stdout)
				}
			}
		}
		close(found)
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatalf("%s ended without saying %q", s.cmd.Path, what)
		}
	// Beside other packages' tests whose MPI ranks poll at full speed, a
	// starter on two cores can take long to get its ranks going.
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not say %q within 60 s", s.cmd.Path, what)
	}
}

// wait waits for the process, once it is no longer traced.
func (s *started) wait(t *testing.T) error {
	t.Helper()
	go func() { s.done <- s.cmd.Wait() }()
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still runs after 30 s", s.cmd.Path)
		return nil
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// free says whether a process runs freely: neither stopped nor traced.
func free(t *testing.T, pid int) {
	t.Helper()
	if stopped, tracer := Traced(pid); stopped || tracer != 0 {
		t.Errorf("pid %d: stopped %v, traced by %d", pid, stopped, tracer)
	}
}

func TestLaunchExampleStarter(t *testing.T) {
	dir := testenv.Examples(t)
	start, s := starter(t, filepath.Join(dir, "mpir-starter"), "-n", "3")
	st, err := Launch(ctx(t), start)
	if err != nil {
		t.Fatal(err)
	}
	tab := st.Table
	host, _ := os.Hostname()
	if len(tab.Procs) != 3 || !tab.IAmStarter || tab.PartialAttachOK || tab.AcquiredPreMain {
		t.Fatalf("table %+v", tab)
	}
	if tab.DLLName != "libsdm-example-msgq.so" || !strings.HasSuffix(tab.Object, "mpir-starter") {
		t.Errorf("dll %q, symbols in %q", tab.DLLName, tab.Object)
	}
	for i, p := range tab.Procs {
		if p.Host != host || p.Pid <= 0 || p.Pid == tab.Starter || !strings.HasSuffix(p.Executable, "mpir-starter") {
			t.Errorf("rank %d: %+v", i, p)
		}
	}
	if err := st.Release(); err != nil {
		t.Fatal(err)
	}
	free(t, tab.Starter)
	// The ranks wait at the gate for a debugger: nobody opens it here.
	for _, p := range tab.Procs {
		free(t, p.Pid)
		syscall.Kill(p.Pid, syscall.SIGKILL)
	}
	if err := s.wait(t); err == nil {
		t.Error("the starter reported success for killed ranks")
	}
}

func TestLaunchVariants(t *testing.T) {
	dir := testenv.Examples(t)
	for _, c := range []struct {
		name                  string
		iAm, partial, preMain bool
		starterIsRank0        bool
	}{
		{name: "mpir-starter-rank0", starterIsRank0: true},
		{name: "mpir-starter-partial", iAm: true, partial: true},
		{name: "mpir-starter-premain", iAm: true, preMain: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			start, s := starter(t, filepath.Join(dir, c.name), "-n", "2")
			st, err := Launch(ctx(t), start)
			if err != nil {
				t.Fatal(err)
			}
			tab := st.Table
			if tab.IAmStarter != c.iAm || tab.PartialAttachOK != c.partial || tab.AcquiredPreMain != c.preMain {
				t.Errorf("table %+v", tab)
			}
			if (tab.Procs[0].Pid == tab.Starter) != c.starterIsRank0 {
				t.Errorf("rank 0 is pid %d, the starter %d", tab.Procs[0].Pid, tab.Starter)
			}
			st.Kill()
			if err := s.wait(t); err == nil {
				t.Error("a killed starter exited well")
			}
		})
	}
}

func TestLaunchAbort(t *testing.T) {
	dir := testenv.Examples(t)
	start, s := starter(t, filepath.Join(dir, "mpir-starter"), "-n", "2", "--abort", "rank 1 lost its way")
	_, err := Launch(ctx(t), start)
	var abort *AbortError
	if !errors.As(err, &abort) || abort.Message != "rank 1 lost its way" {
		t.Fatalf("got %v, want the abort string", err)
	}
	if err := s.wait(t); err == nil {
		t.Error("an aborting starter exited well")
	}
}

func TestLaunchNotAStarter(t *testing.T) {
	start, s := starter(t, "sleep", "60")
	_, err := Launch(ctx(t), start)
	if !errors.Is(err, ErrNotStarter) || !strings.Contains(err.Error(), "sleep (pid") || !strings.Contains(err.Error(), "no MPIR_Breakpoint") {
		t.Fatalf("got %v", err)
	}
	if err := s.wait(t); err == nil {
		t.Error("sleep was left to run")
	}
}

func TestLaunchStarterFails(t *testing.T) {
	start, _ := starter(t, "/nonexistent/mpirun")
	if _, err := Launch(ctx(t), start); err == nil || !strings.Contains(err.Error(), "/nonexistent/mpirun") {
		t.Fatalf("got %v", err)
	}
}

// running starts argv untraced.
func running(t *testing.T, argv ...string) *started {
	t.Helper()
	start, s := starter(t, argv...)
	if _, err := start(&syscall.SysProcAttr{Setpgid: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); s.cmd.Wait() })
	return s
}

func TestAttach(t *testing.T) {
	dir := testenv.Examples(t)
	s := running(t, filepath.Join(dir, "mpir-starter"), "-n", "4", "--hang")
	pid := s.cmd.Process.Pid
	s.lines(t, 1, "started 4 ranks")
	tab, err := Attach(ctx(t), pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Procs) != 4 || tab.Starter != pid {
		t.Fatalf("table %+v", tab)
	}
	free(t, pid)
	for _, p := range tab.Procs {
		free(t, p.Pid)
	}
	if err := Forget(ctx(t), pid); err != nil {
		t.Fatal(err)
	}
	free(t, pid)
}

// A starter attached to before it spawned its job has no table to read,
// and is left as found: told of a debugger, it would have its ranks wait
// for one (Open MPI's wait in MPI_Init).
func TestAttachBeforeSpawn(t *testing.T) {
	start, s := starter(t, filepath.Join(testenv.Examples(t), "mpir-starter"), "-n", "2", "--after-input")
	in, err := s.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start(&syscall.SysProcAttr{Setpgid: true}); err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	pid := s.cmd.Process.Pid
	s.lines(t, 1, "waiting for a line")
	if _, err := Attach(ctx(t), pid); err == nil || !strings.Contains(err.Error(), "the job has not started (yet)") {
		t.Fatalf("attach before the spawn: %v", err)
	}
	free(t, pid)
	syms, err := lookup(pid, []string{symBeingDebugged})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	b := make([]byte, 4)
	if _, err := mem.ReadAt(b, int64(syms.addr[symBeingDebugged])); err != nil {
		t.Fatal(err)
	}
	if [4]byte(b) != [4]byte{} {
		t.Errorf("%s is %v after a failed attach, want 0", symBeingDebugged, b)
	}
}

func TestAttachErrors(t *testing.T) {
	if _, err := Attach(ctx(t), 999999999); !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), "no process with pid 999999999") {
		t.Errorf("missing pid: %v", err)
	}
	s := running(t, "sleep", "60")
	pid := s.cmd.Process.Pid
	if _, err := Attach(ctx(t), pid); !errors.Is(err, ErrNotStarter) {
		t.Errorf("sleep: %v", err)
	}
	free(t, pid)

	// A process that gdb traces already.
	gdb := testenv.RequireTool(t, "gdb")
	g := testenv.Command(t, gdb, "-q", "-nx", "-p", strconv.Itoa(pid))
	in, _ := g.StdinPipe()
	out, _ := g.StdoutPipe()
	g.Stderr = g.Stdout
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); g.Wait() }()
	// gdb reads its commands once it has attached.
	io.WriteString(in, "echo attached\\n\n")
	attached := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasSuffix(sc.Text(), "attached") {
				attached <- true
			}
		}
		close(attached)
	}()
	select {
	case ok := <-attached:
		if !ok {
			t.Fatal("gdb did not attach")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("gdb did not attach within 20 s")
	}
	if _, err := Attach(ctx(t), pid); err == nil || !strings.Contains(err.Error(), "gdb (pid") {
		t.Errorf("traced by gdb: %v", err)
	}
}

// Open MPI's mpirun keeps the interface in libopen-rte, runs several
// threads, and spawns the ranks through a daemon of its own.
func TestOpenMPI(t *testing.T) {
	dir := testenv.Examples(t)
	mpirun := testenv.OpenMPIWithMPIR(t)
	argv := []string{mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3", filepath.Join(dir, "hang")}

	t.Run("launch", func(t *testing.T) {
		start, s := starter(t, argv...)
		s.cmd.Env = append(os.Environ(), "OMPI_MPIR_DO_NOT_WARN=1")
		st, err := Launch(ctx(t), start)
		if err != nil {
			t.Fatal(err)
		}
		tab := st.Table
		if len(tab.Procs) != 3 || !strings.Contains(tab.Object, "libopen-rte") || !tab.IAmStarter {
			t.Fatalf("table %+v", tab)
		}
		if err := st.Release(); err != nil {
			t.Fatal(err)
		}
		free(t, tab.Starter)
		syscall.Kill(-tab.Starter, syscall.SIGTERM)
		s.wait(t)
	})

	t.Run("attach", func(t *testing.T) {
		s := running(t, argv...)
		pid := s.cmd.Process.Pid
		// mpirun has filled the table once the ranks run.
		s.lines(t, 3, "rank ")
		tab, err := Attach(ctx(t), pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tab.Procs {
			if !strings.HasSuffix(p.Executable, "hang") {
				t.Errorf("entry %+v", p)
			}
			free(t, p.Pid)
		}
		free(t, pid)
	})
}
