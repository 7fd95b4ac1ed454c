package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
)

// dlopenUsage explains the dlopen flags and variables in --help.
const dlopenUsage = `Library loads (--dlopen-mode; the console's set dlopen changes it later):
auto, the default, stops a rank at a load only while a breakpoint is pending
(waits for a library not loaded yet): the rank reads the new library itself,
which plants the breakpoint if it is there, and goes on; once none is
pending, and in a session that sets none, loads cost what they cost in fast
mode. With --dlopen-match, auto also reports the loads of matching libraries
as medium does. slow stops every rank at every load and reports it; the
front end has the new library read and lets the rank go on. medium stops at
every load but reports only libraries matching --dlopen-match
(libcuda.so*:libmine.so); the others go on at once. fast never stops for a
load. In medium and fast mode a breakpoint in a library loaded later is
planted at the next stop for another reason; the libraries the program
starts with are read in every mode. SDM_DLOPEN_ALWAYS_RECALCULATE=true|false
(true: slow; false: medium if SDM_DLOPEN_RECALCULATE_ON_MATCH holds a list,
else fast) and SDM_DLOPEN_RECALCULATE_ON_MATCH (the list) decide when set;
each flag wins over its variable. The console prints reported loads only
after set verbose loads on; --json prints them all.`

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
