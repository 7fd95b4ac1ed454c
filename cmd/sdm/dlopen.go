package main

import (
	"fmt"
	"os"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/internal/exit"
)

// dlopen works out the dlopen setting from the flags and the environment,
// and says what in it will have no effect. A bad value is a usage error.
func (f *sessionFlags) dlopen() (dlopen.Setting, error) {
	var mode, match *string
	if f.fs.Changed("dlopen-mode") {
		mode = &f.dlopenMode
	}
	if f.fs.Changed("dlopen-match") {
		match = &f.dlopenMatch
	}
	s, notes, err := dlopen.Resolve(os.LookupEnv, mode, match)
	if err != nil {
		return dlopen.Setting{}, exit.Usage(err)
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "sdm:", n)
	}
	return s, nil
}
