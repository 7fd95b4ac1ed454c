package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// A rank that faults stops at the fault, before its MPI library's (or
// its own) handler runs, under every launcher and with gdb started lazily
// or with the job: wait any returns there, where and print show it, and
// continue delivers the signal, which the handler then gets with the
// kernel's siginfo (Open MPI's says "Address not mapped"; fault's exits 3).
func TestFaultCaughtUnderLaunchers(t *testing.T) {
	bin := testenv.Examples(t)
	type launch struct {
		rm, tool, program string
		args              []string
		after             []string // what continue leads to: the handler's words
	}
	// The handlers' words for the kernel's si_code and address: Open MPI
	// 4's ("Signal code: Address not mapped (1)"), UCX's, under MPICH and
	// Open MPI 5 ("address not mapped to object at address (nil)").
	const notMapped = "ddress not mapped"
	launches := []launch{
		{"local", "", "fault", nil, []string{"handler ran", "[1] exited with code 3"}},
		{"openmpi", "mpirun", "crash", []string{"--launcher-arg=--oversubscribe"}, []string{notMapped}},
		{"mpich", "mpiexec.mpich", "crash-mpich", nil, []string{notMapped}},
		{"slurm", "srun", "crash", nil, []string{notMapped}},
	}
	for _, l := range launches {
		for _, gdb := range []string{"lazy", "eager"} {
			t.Run(l.rm+"/"+gdb, func(t *testing.T) {
				if l.tool != "" {
					testenv.RequireTool(t, l.tool)
				}
				if l.rm == "slurm" {
					t.Setenv("SLURM_CONF", testenv.SLURM(t))
				}
				args := append([]string{"debug", "-n", "4", "--rm", l.rm, "--gdb", gdb, "--timeout", "90s"}, l.args...)
				out, stderr, _ := run(t, "", append(args, "-e", "run", "-e", "wait any 60", "-e", "[1] where", "-e", "[1] print rank", "-e", "[1] continue",
					"-e", "wait any 60", "-e", "kill", "--", filepath.Join(bin, l.program))...)
				file := map[bool]string{true: "examples/fault/fault.c", false: "examples/crash/crash.c"}[l.program == "fault"]
				stop := "[1] stopped in fail at " + file
				at := strings.Index(out, stop)
				if at < 0 || !strings.Contains(out[at:], "(SIGSEGV)") {
					t.Fatalf("no %q … (SIGSEGV):\n%s%s", stop, out, stderr)
				}
				before, after := out[:at], out[at:]
				for _, handler := range []string{"handler ran", "Signal code", "Process received signal"} {
					if strings.Contains(before, handler) {
						t.Errorf("the program's handler ran before the stop (%q):\n%s", handler, out)
					}
				}
				for _, want := range append([]string{"[1] #0  fail ", "[1] rank = 1"}, l.after...) {
					if !strings.Contains(after, want) {
						t.Errorf("no %q after the stop:\n%s%s", want, out, stderr)
					}
				}
			})
		}
	}
}

// A rank of a running job that sdm attached to (through mpirun's MPIR, or
// Open MPI 5's PMIx server) stops at its fault whether its gdb runs or
// not; where and print show it.
func TestFaultCaughtAttached(t *testing.T) {
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	for _, gdb := range []string{"lazy", "eager"} {
		t.Run(gdb, func(t *testing.T) {
			trigger := filepath.Join(t.TempDir(), "crash now")
			job, pid := detached(t, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, mpirun, "--allow-run-as-root", "--oversubscribe",
				"-np", "4", filepath.Join(bin, "crash"), trigger)
			job.lines(t, 4, " ready")
			defer syscall.Kill(pid, syscall.SIGKILL)
			cmd := testenv.Command(t, sdmBin, "attach", "--gdb", gdb, "--pid", strconv.Itoa(pid))
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			sdm := start(t, cmd)
			say := func(line string) {
				if _, err := fmt.Fprintln(in, line); err != nil {
					t.Fatal(err)
				}
			}
			say("status")
			sdm.lines(t, 1, "[0-3] running")
			if err := os.WriteFile(trigger, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			say("wait any 60")
			sdm.lines(t, 1, "[1] stopped in fail at examples/crash/crash.c:12 (SIGSEGV)")
			say("[1] where")
			sdm.lines(t, 1, "[1] #0  fail ")
			say("[1] print rank")
			sdm.lines(t, 1, "[1] rank = 1")
			// Open MPI 4's handler says "Process received signal", Open
			// MPI 5's (UCX's) "Caught signal 11 (… address not mapped …)".
			if out := job.out.String(); strings.Contains(out, "Process received signal") || strings.Contains(out, "Caught signal") {
				t.Errorf("Open MPI's handler ran while the rank was stopped at its fault:\n%s", out)
			}
			// Letting go of the rank delivers its signal, as gdb's detach
			// does: Open MPI's handler gets it.
			say("quit")
			in.Close()
			<-sdm.done
			job.lines(t, 1, "ddress not mapped")
		})
	}
}

// detach and quit of an attached session leave every rank as it was
// found, whatever happened to it: halted, under gdb or not, stopped at a
// breakpoint and stepped, or stopped by a signal before the session.
// Each runs on (or stays stopped), untraced, nothing pending, its text as
// its file holds it (no breakpoint left behind).
func TestDetachLeavesRanksAsFound(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	for _, gdb := range []string{"lazy", "eager"} {
		for _, end := range []string{"detach", "quit"} {
			t.Run(gdb+"/"+end, func(t *testing.T) {
				var pids []string
				for rank := range 4 {
					cmd := testenv.Command(t, filepath.Join(bin, "plain"), "600")
					cmd.Env = append(os.Environ(), "SDM_RANK="+strconv.Itoa(rank), "SDM_SIZE=4")
					p := start(t, cmd)
					p.lines(t, 1, "from rank ")
					pids = append(pids, strconv.Itoa(cmd.Process.Pid))
					t.Cleanup(func() { cmd.Process.Kill() })
				}
				third, _ := strconv.Atoi(pids[3])
				syscall.Kill(third, syscall.SIGSTOP)
				testenv.WaitStopped(t, third)
				out, stderr, code := run(t, "", "attach", "--gdb", gdb, "--pids", strings.Join(pids, ","), "--timeout", "90s",
					"-e", "[0-2] halt", "-e", "[0-2] wait 30", "-e", "[1] print counter",
					"-e", "[2] break plain.c:30", "-e", "[2] continue", "-e", "[2] wait 30", "-e", "[2] next", "-e", "[2] wait 30",
					"-e", end)
				if code != 0 || !strings.Contains(out, "[2] stopped in rest at examples/plain/plain.c:30 (breakpoint 1)") {
					t.Fatalf("exit %d:\n%s%s", code, out, stderr)
				}
				for rank, p := range pids {
					pid, _ := strconv.Atoi(p)
					asFound(t, pid, rank == 3)
				}
			})
		}
	}
}

// asFound fails unless process pid runs (or is stopped by a signal, when
// stopped), untraced, with no signal pending, its program's text as in
// its file.
func asFound(t *testing.T, pid int, stopped bool) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("rank's process %d: %v", pid, err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	state := fields["State"]
	if stopped != strings.HasPrefix(state, "T") || strings.HasPrefix(state, "t") {
		t.Errorf("process %d: state %s, want %s", pid, state, map[bool]string{true: "T (stopped)", false: "running or sleeping"}[stopped])
	}
	for _, f := range []string{"TracerPid", "SigPnd", "ShdPnd"} {
		if strings.Trim(fields[f], "0") != "" {
			t.Errorf("process %d: %s %s, want 0", pid, f, fields[f])
		}
	}
	if diff := textDiffers(pid); diff != "" {
		t.Errorf("process %d: %s", pid, diff)
	}
}

// textDiffers compares the executable mapping of a process's program with
// its file, and says where they differ (a breakpoint left behind), or "".
func textDiffers(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return err.Error()
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err.Error()
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return err.Error()
	}
	defer mem.Close()
	file, err := os.Open(exe)
	if err != nil {
		return err.Error()
	}
	defer file.Close()
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || !strings.Contains(f[1], "x") {
			continue
		}
		var start, end, off uint64
		fmt.Sscanf(f[0], "%x-%x", &start, &end)
		fmt.Sscanf(f[2], "%x", &off)
		live, disk := make([]byte, end-start), make([]byte, end-start)
		if _, err := mem.ReadAt(live, int64(start)); err != nil {
			return "read its text: " + err.Error()
		}
		n, _ := file.ReadAt(disk, int64(off))
		if i := firstDifference(live[:n], disk[:n]); i >= 0 {
			return fmt.Sprintf("its text differs from %s at %#x (%#x in memory, %#x in the file)", exe, start+uint64(i), live[i], disk[i])
		}
		return ""
	}
	return "no executable mapping of " + exe
}

func firstDifference(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
