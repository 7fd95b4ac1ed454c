package launcher

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/internal/exit"
)

// Ask is the job side of a reverse-connected session (sdm connect): a
// request to be debugged, where it waits, and for how long.
type Ask struct {
	Dir     string
	Request *connect.Request
	// Wait bounds the wait for a front end's answer (0: for ever).
	Wait time.Duration
	// ConnectTimeout bounds, once accepted, the job's coming up.
	ConnectTimeout time.Duration
	Log            *log.Logger
}

// ErrNoAnswer is a request that no front end answered within Ask.Wait.
var ErrNoAnswer = errors.New("no front end answered")

// Run writes the request, waits for a front end's answer, deletes the
// request, and once accepted runs the job until it ends; ctx ends the wait
// or the job. accepted says whether a front end took the request.
func (a Ask) Run(ctx context.Context) (accepted bool, err error) {
	req := a.Request
	if err := req.Write(a.Dir); err != nil {
		return false, err
	}
	a.Log.Printf("request %s waits in %s for a front end (sdm listen --accept %s): %s", req.ID, a.Dir, req.ID, req.Plan)
	answer, err := a.await(ctx)
	if err != nil {
		return false, err
	}
	a.Log.Printf("request %s accepted; the job connects to %s", req.ID, answer.Address)
	h, err := HostRequest(ctx, a.Dir, req, answer, a.ConnectTimeout, a.Log)
	if err != nil {
		return true, err
	}
	stop := context.AfterFunc(ctx, h.Cancel)
	defer stop()
	return true, h.Wait()
}

// Serve is Run for sdm connect, whose ctx ends with a signal
// (exit.Signalled): it says what the signal did, the request deleted or
// the job cancelled, as the error of the signal.
func (a Ask) Serve(ctx context.Context) error {
	accepted, err := a.Run(ctx)
	sig, signalled := exit.Signal(ctx)
	switch {
	case !signalled:
		return err
	case !accepted:
		a.Log.Printf("%v while waiting: request %s deleted", sig, a.Request.ID)
		return exit.Killed(sig, nil)
	}
	return exit.Killed(sig, fmt.Errorf("%v: job cancelled", sig))
}

// WaitFromEnv is how long sdm connect waits for a front end by
// $SDM_CONNECT_TIMEOUT, and whether the variable is set.
func WaitFromEnv(getenv func(string) string) (time.Duration, bool, error) {
	env := getenv("SDM_CONNECT_TIMEOUT")
	if env == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(env)
	if err != nil || d < 0 {
		return 0, true, fmt.Errorf("SDM_CONNECT_TIMEOUT=%s: want a duration such as 30m", env)
	}
	return d, true, nil
}

// await waits for the answer to an accepted request, and deletes the
// request whatever came.
func (a Ask) await(ctx context.Context) (*connect.Answer, error) {
	waitCtx := ctx
	if a.Wait > 0 {
		var stop context.CancelFunc
		waitCtx, stop = context.WithTimeout(ctx, a.Wait)
		defer stop()
	}
	answer, err := connect.WaitAnswer(waitCtx, a.Dir, a.Request)
	a.Request.Remove(a.Dir)
	switch {
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case waitCtx.Err() != nil:
		return nil, fmt.Errorf("%w request %s within %v: deleted it", ErrNoAnswer, a.Request.ID, a.Wait)
	case err != nil:
		return nil, err
	case !answer.Accept:
		return nil, fmt.Errorf("request %s rejected: %s", a.Request.ID, connect.Printable(answer.Reason))
	}
	return answer, nil
}
