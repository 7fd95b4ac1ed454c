package launcher

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/wire"
)

// HostRequest starts here the job of a request that a front end accepted
// with answer a (the job side of sdm connect): its servers' tree dials the
// front end. A starter acquired through MPIR is held until the front end
// says its ranks are attached. A failure is reported to the front end too,
// so that it stops waiting.
func HostRequest(ctx context.Context, dir string, req *connect.Request, a *connect.Answer, connectTimeout time.Duration, logTo *log.Logger) (*Hosted, error) {
	h, err := hostRequest(ctx, dir, req, a, connectTimeout, logTo)
	if err != nil {
		connect.Fail(dir, req, err)
	}
	return h, err
}

func hostRequest(ctx context.Context, dir string, req *connect.Request, a *connect.Answer, timeout time.Duration, logTo *log.Logger) (*Hosted, error) {
	key, err := wire.ParseKey(a.Key)
	if err != nil {
		return nil, fmt.Errorf("request %s: the answer's session key: %w", req.ID, err)
	}
	plan := req.Plan
	cwd, _ := os.Getwd()
	o := Options{
		RM: plan.RM, Size: plan.Size, Fanout: a.Fanout, Debugger: "gdb-mi",
		Dir: cwd, Launcher: plan.Launcher, LauncherArgs: plan.LauncherArgs,
		ConnectTimeout: timeout, Debug: a.Debug, Log: logTo,
	}
	if plan.Mode != connect.ModeMPIR {
		o.Program = plan.Program[0]
		return Host(ctx, o, a.Address, key)
	}
	h, held, err := HostMPIR(ctx, o, plan.Program, a.Address, key)
	if err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err = connect.PostAttach(dir, req, held.Attach); err == nil {
		if err = connect.WaitRelease(waitCtx, dir, req); err == nil {
			err = held.Release()
		}
	}
	if err != nil {
		held.Kill()
		h.Cancel()
		h.Wait()
		return nil, err
	}
	return h, nil
}
