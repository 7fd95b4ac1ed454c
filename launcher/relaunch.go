package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/rm"
)

// origin is how a session's job was started, so that it can be started
// again the same way.
type origin struct {
	o Options // Adapter set to the one chosen; no session directory
	m *MPIR   // for a job launched and acquired through MPIR
	// held says how a launched job's ranks were held for the debugger
	// when its starter has no MPIR (Table.Via).
	held string
	// launcher names the program that started the ranks as one job; ""
	// for ranks started one by one.
	launcher string
	// refusal, when set, is why the job cannot be started again.
	refusal error
}

// Launcher names the program that started the ranks as one job: mpirun,
// mpiexec, srun or poe, or the starter of a job launched through MPIR. It
// is "" when sdm started each rank's process itself (the local adapter),
// so that each can be run again alone, and for a job sdm did not start.
func (s *Session) Launcher() string { return s.origin.launcher }

// Relaunchable is nil when Relaunch can start the job again, or says why
// it cannot and what to do instead.
func (s *Session) Relaunchable() error {
	switch {
	case s.origin.refusal != nil:
		return s.origin.refusal
	case s.origin.o.Size == 0:
		return errors.New("sdm did not start this job, so it cannot start it again")
	}
	return nil
}

// Relaunch starts the job of a session that has ended (End) again, the way
// it was started: the same adapter, launcher options, size, program and
// target, or, for a job acquired through MPIR, the same launch and
// acquisition. It returns once every rank has joined, and, through MPIR,
// every rank is attached; loading the program is the caller's, as after
// Launch. The new job has a session directory of its own.
func (s *Session) Relaunch(ctx context.Context) (*Session, error) {
	if err := s.Relaunchable(); err != nil {
		return nil, err
	}
	if !s.ended {
		return nil, errors.New("the job still runs: it must end before it starts again")
	}
	o := s.origin.o
	if progress := o.Progress; progress != nil {
		o.Progress = func(p Progress) {
			if p.Stage != StageUsing { // the adapter was said the first time
				progress(p)
			}
		}
	}
	if s.origin.m != nil {
		again, _, err := Acquire(ctx, o, *s.origin.m)
		return again, err
	}
	return Launch(ctx, o)
}

// Summary says in a few words what the job is: "4 ranks under mpirun",
// "8 ranks under srun on login1".
func (s *Session) Summary() string {
	how := "under " + s.origin.launcher
	if s.origin.launcher == "" {
		how = "under the local launcher"
	}
	switch {
	case s.origin.m != nil && s.origin.held != "":
		how += ", " + s.origin.held
	case s.origin.m != nil:
		how += ", acquired through MPIR"
	}
	if s.target.remote() {
		how += " on " + s.target.host
	}
	if s.Size() == 1 {
		return "1 rank " + how
	}
	return fmt.Sprintf("%d ranks %s", s.Size(), how)
}

// launcherName is how people call the launcher of adapter: the program
// given to --launcher, or the usual name of the adapter's (Debian installs
// Open MPI's mpirun as mpirun.openmpi, but people type mpirun).
func launcherName(adapter rm.Adapter, launcher string) string {
	name, ok := map[string]string{"openmpi": "mpirun", "mpich": "mpiexec", "slurm": "srun", "pe": "poe"}[adapter.Name()]
	switch {
	case !ok:
		return ""
	case launcher != "":
		return filepath.Base(launcher)
	}
	return name
}

// attachRefusal explains why a job sdm attached to cannot be started
// again, and how to start it under sdm instead, from the starter's own
// command line.
func attachRefusal(pid int) error {
	how := "sdm debug --mpir --starter -- STARTER ARGS..."
	if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(raw) > 0 {
		words := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		for i, w := range words {
			words[i] = text.ShellQuote(w)
		}
		how = "sdm debug --mpir --starter -- " + strings.Join(words, " ")
	}
	return fmt.Errorf("this job was started outside sdm (sdm attach took over its starter, pid %d), so sdm cannot start it again; to be able to restart it, start it under sdm: %s", pid, how)
}

// reverseRefusal explains why a job that connected back cannot be started
// again from the front end.
func reverseRefusal(host string) error {
	return fmt.Errorf("this job connected back from %s (sdm connect): it runs where its batch system placed it, so sdm cannot start it again from here; submit the batch job again and accept it with sdm listen", host)
}
