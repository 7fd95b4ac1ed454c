package local

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// exitErr is the error of a real process that ended as script says.
func exitErr(t *testing.T, script string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := exec.CommandContext(ctx, "sh", "-c", script).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("sh -c %q: %v, want an exit error", script, err)
	}
	return err
}

// A job's failure is told cause first, the first process to fail, and
// then the servers that followed it, grouped by how they ended.
func TestSummaryTellsTheCauseFirst(t *testing.T) {
	killed, status1, term := exitErr(t, "kill -KILL $$"), exitErr(t, "exit 1"), exitErr(t, "kill -TERM $$")
	const size, log = 8, "/s/servers.log"
	all := func(first int, firstErr, rest error) []ending {
		ends := make([]ending, size+1)
		order := 2
		for i := range ends {
			ends[i] = ending{server: i, err: rest, order: order}
			order++
		}
		ends[first] = ending{server: first, err: firstErr, order: 1}
		return ends
	}
	mixed := all(3, killed, status1)
	mixed[5].err, mixed[size].err = term, nil
	// Waits return in any order: the one killed is the cause, though an
	// exit was seen first.
	late := all(2, status1, status1)
	late[6].err = killed
	for _, c := range []struct {
		ends []ending
		want string
	}{
		{all(size, killed, status1), "master killed by SIGKILL: ranks 0-7 lost (exit status 1) (see /s/servers.log)"},
		{all(3, killed, status1), "rank 3 killed by SIGKILL: ranks 0-2,4-7 and the master lost (exit status 1) (see /s/servers.log)"},
		{mixed, "rank 3 killed by SIGKILL: rank 5 lost (killed by SIGTERM); ranks 0-2,4,6-7 lost (exit status 1) (see /s/servers.log)"},
		{all(0, term, term), "ranks 0-7 and the master killed by SIGTERM (see /s/servers.log)"},
		{late, "rank 6 killed by SIGKILL: ranks 0-5,7 and the master lost (exit status 1) (see /s/servers.log)"},
		{all(0, nil, nil), ""},
	} {
		err := summary(c.ends, size, false, log)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
