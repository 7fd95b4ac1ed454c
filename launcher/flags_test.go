package launcher

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/internal/exit"
)

// Flags that go straight into the job's options and the console's land
// there.
func TestSessionFlagsFillTheFrontEndAndTheJob(t *testing.T) {
	fs := pflag.NewFlagSet("sdm attach", pflag.ContinueOnError)
	f := AddSessionFlags(fs)
	args := []string{"--json", "--fanout", "8", "--timeout", "2m", "--connect-timeout", "5m", "--debug", "--ssh", "ssh -p 2222", "-e", "where", "-e", "quit", "--batch", "cmds.txt"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	front, err := f.Ready()
	if err != nil {
		t.Fatal(err)
	}
	o := f.Job
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

// A launch refused for what the user asked and commands typed wrong are
// usage errors; a session's other failures are not.
func TestOutcomeGivesUsageErrorsTheirStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&RefusedError{Reason: "links MPICH"}, 2},
		{fmt.Errorf("batch: %w", console.ErrScriptErrors), 2},
		{console.ErrRanksFailed, 1},
		{errors.New("rank 3: lost"), 1},
	} {
		if got := exit.Status(Outcome(c.err)); got != c.want {
			t.Errorf("Outcome(%v): status %d, want %d", c.err, got, c.want)
		}
	}
}
