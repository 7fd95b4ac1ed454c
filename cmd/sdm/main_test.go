package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
)

// Every command's --help text is embedded, with its flags filled in.
func TestEveryCommandHasItsHelpText(t *testing.T) {
	names := []string{"sdm", "server", "dlopen"}
	for name := range commands {
		if name != "help" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if helpFile(name) == "" {
			t.Errorf("no help/%s.txt", name)
		}
	}
	fs := pflag.NewFlagSet("sdm debug", pflag.ContinueOnError)
	addSessionFlags(fs)
	if text := helpText(helpFile("debug"), fs); strings.Contains(text, "{flags}") || !strings.Contains(text, "--dlopen-mode") {
		t.Errorf("sdm debug --help lacks its flags:\n%s", text)
	}
}

// A launch refused for what the user asked and commands typed wrong are
// usage errors; a session's other failures are not.
func TestOutcomeGivesUsageErrorsTheirStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&launcher.RefusedError{Reason: "links MPICH"}, 2},
		{fmt.Errorf("batch: %w", console.ErrScriptErrors), 2},
		{console.ErrRanksFailed, 1},
		{errors.New("rank 3: lost"), 1},
	} {
		if got := exit.Status(outcome(c.err)); got != c.want {
			t.Errorf("outcome(%v): status %d, want %d", c.err, got, c.want)
		}
	}
}

// Flags that go straight into the job's options and the console's land
// there.
func TestSessionFlagsFillTheFrontEndAndTheJob(t *testing.T) {
	fs := pflag.NewFlagSet("sdm attach", pflag.ContinueOnError)
	f := addSessionFlags(fs)
	args := []string{"--json", "--fanout", "8", "--timeout", "2m", "--connect-timeout", "5m", "--debug", "--ssh", "ssh -p 2222", "-e", "where", "-e", "quit", "--batch", "cmds.txt"}
	if help, err := parseFlags(fs, args, helpFile("attach")); help || err != nil {
		t.Fatal(help, err)
	}
	front, err := f.ready()
	if err != nil {
		t.Fatal(err)
	}
	o := f.job
	if !front.Console.JSON || front.Console.Color || front.Console.Timeout.String() != "2m0s" {
		t.Errorf("console options %+v", front.Console)
	}
	if o.Fanout != 8 || o.ConnectTimeout.String() != "5m0s" || !o.Debug || o.SSH != "ssh -p 2222" || o.Log == nil {
		t.Errorf("job options %+v", o)
	}
	if c := front.Commands; strings.Join(c.Exprs, ";") != "where;quit" || c.Batch != "cmds.txt" {
		t.Errorf("commands %+v", c)
	}
}
