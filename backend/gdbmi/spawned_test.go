package gdbmi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// spawner starts gdb as a member server does for its leader: Command,
// pipes, a pidfd, handed over as member.Spawned. It counts its spawns and
// keeps the last gdb's pid.
type spawner struct {
	spawns, pid atomic.Int64
}

func (s *spawner) spawn(context.Context) (member.Spawned, error) {
	cmd, err := member.GDB("")
	if err != nil {
		return member.Spawned{}, err
	}
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		return member.Spawned{}, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	reaped := make(chan unix.WaitStatus, 1)
	go func() { // as the member reaps it, and tells how it ended
		cmd.Wait()
		reaped <- unix.WaitStatus(cmd.ProcessState.Sys().(syscall.WaitStatus))
	}()
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		return member.Spawned{}, err
	}
	s.spawns.Add(1)
	s.pid.Store(int64(cmd.Process.Pid))
	return member.Spawned{Stdin: inW, Stdout: outR, Stderr: errR, Pidfd: os.NewFile(uintptr(fd), "pidfd"), Pid: cmd.Process.Pid, Ended: reaped}, nil
}

// A rank whose gdb another process starts and hands over is debugged as
// one whose gdb is its backend's child: a stop, a stack, a halt; its gdb's
// death is told at once, and the next start asks for a new gdb.
func TestSpawnedGDB(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	var sp spawner
	r := &rank{t: t, b: gdbmi.NewSpawned(backend.Config{Rank: 2, Size: 4}, sp.spawn)}
	t.Cleanup(func() { r.b.Close() })
	r.start(filepath.Join(bin, "plain"), "30")
	if sp.spawns.Load() != 1 {
		t.Fatalf("%d gdbs spawned for a start, want 1", sp.spawns.Load())
	}
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Frame.Func != "compute" {
		t.Fatalf("stop: %+v", st)
	}
	if got := r.print("rank * 10 + size"); got != "24" {
		t.Fatalf("print: %q", got)
	}
	r.must(wire.OpBreak, wire.Break{Location: "rest"}, nil)
	r.must(wire.OpCont, nil, nil)
	r.event(wire.EventStopped)
	r.must(wire.OpCont, nil, nil)
	r.event(wire.EventRunning)
	r.must(wire.OpHalt, nil, nil)
	if st := r.event(wire.EventStopped); st.Signal != "SIGINT" {
		t.Fatalf("halt: %+v", st)
	}
	start := time.Now()
	syscall.Kill(int(sp.pid.Load()), syscall.SIGKILL)
	st := r.event(wire.EventError)
	if time.Since(start) > 2*time.Second || !strings.Contains(st.Reason, "killed") {
		t.Fatalf("after %v: %q", time.Since(start), st.Reason)
	}
	r.start(filepath.Join(bin, "plain"))
	if sp.spawns.Load() != 2 {
		t.Fatalf("%d gdbs spawned after a start again, want 2", sp.spawns.Load())
	}
}

// A rank whose gdb cannot be started says why at its start.
func TestSpawnedGDBFails(t *testing.T) {
	fail := func(context.Context) (member.Spawned, error) {
		return member.Spawned{}, os.ErrNotExist
	}
	r := &rank{t: t, b: gdbmi.NewSpawned(backend.Config{Rank: 0, Size: 1}, fail)}
	t.Cleanup(func() { r.b.Close() })
	if _, err := r.do(wire.OpStart, wire.Start{Program: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "not exist") {
		t.Fatalf("start: %v", err)
	}
}
