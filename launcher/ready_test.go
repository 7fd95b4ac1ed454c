package launcher

import (
	"context"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// ready fills in the defaults, says which adapter it chose, and refuses
// what the target cannot do before anything is started.
func TestReadyRefusesWhatTheTargetCannotDo(t *testing.T) {
	var steps []Progress
	o := Options{RM: "local", Size: 1, Debugger: backend.Sim, SDM: "/bin/true", Progress: func(p Progress) { steps = append(steps, p) }}
	got, adapter, tgt, err := o.ready(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if adapter.Name() != "local" || tgt.remote() || got.ConnectTimeout <= 0 {
		t.Errorf("ready: adapter %s, remote %v, connect timeout %v; want local, on this machine, a default", adapter.Name(), tgt.remote(), got.ConnectTimeout)
	}
	if len(steps) != 1 || steps[0].Stage != StageUsing {
		t.Errorf("steps %+v, want the adapter said", steps)
	}
	o.Forward = true
	if _, _, _, err := o.ready(context.Background()); err == nil || !strings.Contains(err.Error(), "needs a target host") {
		t.Errorf("forward without a target: %v", err)
	}
	o.Forward, o.Target = false, "login1"
	if _, _, _, err := o.ready(context.Background()); err == nil || !strings.Contains(err.Error(), "--rm local starts its processes on this machine") {
		t.Errorf("local on a target: %v", err)
	}
}

// A job on this machine dials the loopback; one on a target dials this
// machine by the name given.
func TestSessionPortIsTheAddressTheJobDials(t *testing.T) {
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{}
	ln, addr, err := s.sessionPort(context.Background(), Options{}, wire.LinkConfig{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("local job dials %s, want the loopback", addr)
	}
	s = &Session{target: newTarget("login1", "ssh")}
	ln, addr, err = s.sessionPort(context.Background(), Options{ClientHost: "desk"}, wire.LinkConfig{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if !strings.HasPrefix(addr, "desk:") {
		t.Errorf("job on a target dials %s, want desk:PORT", addr)
	}
}
