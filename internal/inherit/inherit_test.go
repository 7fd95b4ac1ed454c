package inherit

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/internal/handover/vars"
)

// The test binary is the wrapper too, as sdm and sdm-server are.
func TestMain(m *testing.M) {
	Wrap("inherit.test")
	os.Exit(m.Run())
}

// server starts a process that holds extra as descriptors 3, 4, … the
// way a launcher hands them to a rank's server, with env added to its
// environment, and waits until it runs.
func server(t *testing.T, env []string, extra ...*os.File) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, "cat")
	cmd.ExtraFiles = extra
	cmd.Env = append(os.Environ(), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait(); cancel() })
	in.Write([]byte("x\n"))
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// What a server hands down is what it holds without close-on-exec: what
// it was given, and what this process hands down (Go opens its own files
// close-on-exec).
func TestOf(t *testing.T) {
	_, w := pipe(t)
	ours, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	pid := server(t, nil, w, w)
	want := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ours), 3, 4))))
	if fds, err := Of(pid); err != nil || !slices.Equal(fds, want) {
		t.Fatalf("descriptors %v %v, want %v", fds, err, want)
	}
	// A server's listening socket and key pipe are its own.
	pid = server(t, []string{vars.ListenFD + "=3", vars.KeyFD + "=5"}, w, w, w)
	want = slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ours), 4)))), func(fd int) bool { return fd == 3 || fd == 5 })
	if fds, err := Of(pid); err != nil || !slices.Equal(fds, want) {
		t.Fatalf("descriptors of a server %v %v, want %v", fds, err, want)
	}
	if _, err := Of(1 << 30); err == nil {
		t.Fatal("a process that is not there hands down descriptors")
	}
}

// The program has the server's descriptors at their numbers, one the
// server closed since is left out, and none of the wrapper's own.
func TestMainGivesTheServersDescriptors(t *testing.T) {
	r, w := pipe(t)
	pid := server(t, nil, w)
	_, own := pipe(t) // the wrapper's descriptors 3 and 4, as a gdb's starter's
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], Flag, "sh", "-c",
		`echo "from the program" >&3; for fd in 4 5; do [ -e /proc/$$/fd/$fd ] && echo "descriptor $fd open"; done; echo "$`+Env+`"`)
	cmd.ExtraFiles = []*os.File{own, own}
	cmd.Env = append(os.Environ(), Env+"="+Value(pid, []int{3, 5}))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("the program: %v\n%s", err, out)
	}
	w.Close()
	got, _ := bufio.NewReader(r).ReadString('\n')
	if got != "from the program\n" {
		t.Fatalf("the server's pipe got %q", got)
	}
}

// A wrong value, or a server that is gone, is said, and nothing runs.
func TestMainRefuses(t *testing.T) {
	for value, want := range map[string]string{
		"12":             "want PID:FD",
		"x:3":            "want PID:FD",
		"1:2":            "not a descriptor above standard error",
		"1073741824:3,4": "the descriptors of process 1073741824",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], Flag, "echo", "ran")
		cmd.Env = append(os.Environ(), Env+"="+value)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), want) || strings.Contains(string(out), "ran\n") {
			t.Errorf("%s=%s: %v %q, want an error with %q", Env, value, err, out, want)
		}
	}
}

// A program started with Files has the server's descriptors at their
// numbers, and the others closed.
func TestFiles(t *testing.T) {
	r, w := pipe(t)
	pid := server(t, nil, w, nil, w)
	files, err := Files(pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 || files[0] == nil || files[1] != nil || files[2] == nil {
		t.Fatalf("files %v, want descriptors 3 and 5 at 0 and 2", files)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `echo three >&3; echo five >&5; [ -e /proc/$$/fd/4 ] && echo "descriptor 4 open" >&3; echo end >&3`)
	cmd.ExtraFiles = files
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
	// The server holds the pipe's end still: the program's last line ends
	// what it wrote.
	var got string
	for lines := bufio.NewReader(r); !strings.HasSuffix(got, "end\n"); {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got += line
	}
	if got != "three\nfive\nend\n" {
		t.Errorf("the program wrote %q through the server's descriptors, want three and five", got)
	}
	if _, err := Files(1 << 30); err == nil {
		t.Error("a process that is not there hands down descriptors")
	}
}
