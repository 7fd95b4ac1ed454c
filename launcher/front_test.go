package launcher

import (
	"bytes"
	"context"
	"errors"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
)

// A launch that fails ends as Ended says when ctx was cut short, and with
// its own error otherwise; nothing of the session is shown.
func TestFrontDebugEndsAFailedLaunchAsEndedSays(t *testing.T) {
	var out, errs bytes.Buffer
	signalled := errors.New("terminated: the session's job ended")
	ctx, cancel := context.WithCancel(context.Background())
	f := Front{Out: &out, Errors: &errs, Log: log.New(&errs, "sdm: ", 0),
		Ended: func(ctx context.Context, _ error) error {
			if ctx.Err() != nil {
				return signalled
			}
			return nil
		}}
	o := Options{RM: "nonesuch", Size: 1, Program: "/bin/true"}
	err := f.Debug(ctx, o, []string{"/bin/true"})
	if err == nil || errors.Is(err, signalled) {
		t.Fatalf("a launch under no known launcher: %v, want its own error", err)
	}
	cancel()
	if err := f.Debug(ctx, o, []string{"/bin/true"}); err != signalled {
		t.Errorf("a launch cut short: %v, want Ended's %v", err, signalled)
	}
	if out.Len() != 0 {
		t.Errorf("the console printed %q before any session", out.String())
	}
}

// The listener takes the session's timeout, dlopen setting and log, and
// shows its jobs' progress where the front end does.
func TestFrontListenerTakesTheSessionsSettings(t *testing.T) {
	var errs bytes.Buffer
	logger := log.New(&errs, "sdm: ", 0)
	dl := dlopen.Default()
	f := Front{Errors: &errs, Terminal: true, Log: logger, Dlopen: dl, Console: console.Options{Timeout: 7 * time.Second}}
	l := f.Listener(Listener{Dir: "/requests", Fanout: 4})
	if l.Dir != "/requests" || l.Fanout != 4 || l.Timeout != 7*time.Second || l.Log != logger || l.Dlopen.String() != dl.String() {
		t.Errorf("listener %+v: want the given directory and fanout, the session's timeout, log and dlopen setting", l)
	}
	l.Progress(Progress{Stage: StageConnected, Done: 2, Total: 4})
	l.Settled()
	if !strings.Contains(errs.String(), "connected 2/4") {
		t.Errorf("the progress line showed %q, want the job's step", errs.String())
	}
}

// A yes takes the request; a no rejects it, saying where; no answer at
// all is an error.
func TestAskerTakesYesAndRejectsNo(t *testing.T) {
	dir := connectDir(t)
	yes, no := requestIn(t, dir), requestIn(t, dir)
	l := &Listener{Dir: dir}
	var shown bytes.Buffer
	pick := l.Asker(strings.NewReader("Yes\nn\n"), &shown)
	if ok, err := pick(yes); !ok || err != nil {
		t.Errorf("answered yes: %v, %v", ok, err)
	}
	if ok, err := pick(no); ok || err != nil {
		t.Errorf("answered n: %v, %v", ok, err)
	}
	if !strings.Contains(shown.String(), "a job asks to be debugged:\n  "+yes.String()+"\naccept? [y/n] ") {
		t.Errorf("asked %q, want the request shown", shown.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	if a, err := connect.WaitAnswer(ctx, dir, no); err != nil || a.Accept || a.Reason != "rejected at "+host {
		t.Errorf("the job refused read %+v, %v; want rejected at %s", a, err, host)
	}
	if _, err := pick(requestIn(t, dir)); err == nil || !strings.HasPrefix(err.Error(), "no answer: ") {
		t.Errorf("no answer left: %v", err)
	}
}
