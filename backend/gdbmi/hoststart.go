package gdbmi

import (
	"context"
	"strings"

	"github.com/sdm-hpc/sdm/internal/inherit"
)

// How a shared gdb starts a rank's program.
//
// A gdb starts a program through a shell (startup-with-shell), which
// expands its arguments, and a shared gdb through the wrapper too (the
// host's exec-wrapper, package inherit), which gives the program the
// descriptors of its rank's server and none of the gdb's starter's. Both
// are executions gdb follows before the program's own: a shell and a Go
// program started for each rank cost 64 ranks on gdbs of 16 a tenth of
// their CPU to the first stop. So a program is started directly, without
// either, when neither has anything to do: its arguments are words the
// shell leaves as they are (a program without arguments has none), its
// rank's server hands down no descriptor, and the gdb holds none a
// program would inherit (leaks, NewHost). Such a rank's environment gets
// no inherit.Env either (environ).
//
// Both are gdb's settings, not an inferior's: the host keeps them as the
// last start wanted (Host.started), and a start changes them, if it wants
// others, while it holds starts, so that no other rank's start comes in
// between.

// startSettings are the settings a start wants: whether through the
// shell, and through the wrapper.
type startSettings struct{ shell, wrapped bool }

// wants is how the view's program is to start.
func (v *view) wants() startSettings {
	v.mu.Lock()
	defer v.mu.Unlock()
	wrapped := v.wrapped()
	return startSettings{shell: wrapped || !v.plainArgs, wrapped: wrapped}
}

// wrapped says whether the rank's program starts through the wrapper;
// v.mu is held.
func (v *view) wrapped() bool {
	return v.h.wrapper != "" && (v.fds || v.h.leaks)
}

// start runs command, which starts the rank's program (-exec-run, or the
// CLI's run or start), with the settings the program wants.
func (v *view) start(ctx context.Context, command func() (Record, string, error)) (Record, string, error) {
	want, h := v.wants(), v.h
	h.starts.Lock()
	defer h.starts.Unlock()
	if want.shell != h.started.shell {
		if _, _, err := h.g.Run(ctx, "-gdb-set startup-with-shell "+onOff(want.shell)); err != nil {
			return Record{}, "", err
		}
		h.started.shell = want.shell
	}
	if want.wrapped != h.started.wrapped {
		set := "unset exec-wrapper"
		if want.wrapped {
			set = "set exec-wrapper " + h.wrapper
		}
		if _, _, err := h.g.Run(ctx, "-interpreter-exec console "+Quote(set)); err != nil {
			return Record{}, "", err
		}
		h.started.wrapped = want.wrapped
	}
	return command()
}

// startsProgram says whether a CLI command starts the rank's program,
// and notes the arguments it gives it, as set args does, to know whether
// they need the shell.
func (v *view) startsProgram(cli string) bool {
	w := strings.Fields(cli)
	if len(w) == 0 {
		return false
	}
	args, runs := "", false
	switch {
	case len(w) > 1 && w[0] == "set" && w[1] == "args":
		_, args, _ = strings.Cut(cli, "args")
	case w[0] == "run" || w[0] == "r" || w[0] == "start" || w[0] == "starti":
		runs = true
		if len(w) == 1 {
			return true // with the arguments it had
		}
		_, args, _ = strings.Cut(strings.TrimSpace(cli), w[0])
	default:
		return false
	}
	v.mu.Lock()
	v.plainArgs = plainWords(args)
	v.mu.Unlock()
	return runs
}

// plainWords says whether s is words that the shell and gdb's own split
// (startup-with-shell off: at blanks, nothing else) read alike.
func plainWords(s string) bool {
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+ \t") == ""
}

// noteInherit takes the value of the rank's inherit.Env, which names the
// descriptors its program is to get, and says whether the program starts
// through the wrapper, the one that reads it.
func (v *view) noteInherit(value string) bool {
	_, fds, _ := strings.Cut(value, ":")
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fds = fds != ""
	return v.wrapped()
}

// leaks says whether process pid, a gdb, holds descriptors that a
// program it starts would inherit.
func leaks(pid int) bool {
	fds, err := inherit.Of(pid)
	return err != nil || len(fds) > 0
}
