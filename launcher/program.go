package launcher

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// Load has every rank load the program argv[0], with its arguments and
// env (NAME=VALUE pairs added to the environment), to run in dir, with
// the library that keeps its MPI operations in flight preloaded if queues
// (Queues), and fails, naming the ranks, if any cannot.
func (s *Session) Load(ctx context.Context, argv, env []string, dir string, queues bool, timeout time.Duration) error {
	st := wire.Start{Program: argv[0], Args: argv[1:], Env: env, Dir: dir}
	if queues {
		st.Queues = Queues(argv[0], dir)
	}
	body, err := wire.Encode(st)
	if err != nil {
		return err
	}
	groups, err := s.Command(ctx, wire.All(s.Size()), wire.OpStart, body, timeout)
	if err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	return wire.Failures(groups, "start "+argv[0], nil)
}

// Queues is the MPI whose interposition library the servers preload into
// program to keep its MPI operations in flight (wire.Start.Queues): the
// one it links, "" for none sdm has a library for.
func Queues(program, dir string) string {
	switch mpi := ReadLinked(program, dir).MPI; mpi {
	case "openmpi", "mpich":
		return mpi
	}
	return ""
}

// SetDlopen gives every rank the session's dlopen setting, and returns
// what the ranks warn about ("ranks 0-3: ..."), one line per group.
func (s *Session) SetDlopen(ctx context.Context, setting dlopen.Setting, timeout time.Duration) (warnings []string, err error) {
	groups, err := s.Command(ctx, wire.All(s.Size()), wire.OpDlopen, wire.MustEncode(setting.Wire()), timeout)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", setting, err)
	}
	for _, g := range groups {
		var d wire.Dlopen
		if g.Status == wire.StatusOK && wire.Decode(g.Body, &d) == nil && d.Warning != "" {
			warnings = append(warnings, fmt.Sprintf("ranks %v: %s", g.Ranks, d.Warning))
		}
	}
	return warnings, wire.Failures(groups, "take dlopen "+setting.String(), nil)
}

// applyDlopen gives every rank setting and logs what they warn about.
func (s *Session) applyDlopen(ctx context.Context, setting dlopen.Setting, timeout time.Duration, logTo *log.Logger) error {
	warnings, err := s.SetDlopen(ctx, setting, timeout)
	for _, w := range warnings {
		logTo.Print(w)
	}
	return err
}
