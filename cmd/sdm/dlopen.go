package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
)

// dlopen works out the dlopen setting from the flags and the environment,
// and says what in it will have no effect. A bad value is a usage error.
func (f *sessionFlags) dlopen() (dlopen.Setting, error) {
	var mode, match *string
	if f.fs.Changed("dlopen-mode") {
		mode = f.dlopenMode
	}
	if f.fs.Changed("dlopen-match") {
		match = f.dlopenMatch
	}
	s, notes, err := dlopen.Resolve(os.LookupEnv, mode, match)
	if err != nil {
		return dlopen.Setting{}, &exitError{2, err}
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "sdm:", n)
	}
	return s, nil
}

// applyDlopen gives every rank the session's dlopen setting and passes on
// what they warn about.
func applyDlopen(ctx context.Context, s *launcher.Session, setting dlopen.Setting, timeout time.Duration) error {
	warnings, err := s.SetDlopen(ctx, setting, timeout)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "sdm:", w)
	}
	return err
}
