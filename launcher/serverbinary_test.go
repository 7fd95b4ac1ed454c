package launcher

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// A job's servers are sdm-rank when they hand their ranks over and it
// sits beside sdm-server, sdm-server otherwise, and sdm itself without
// sdm-server.
func TestServerBinary(t *testing.T) {
	dir := t.TempDir()
	sdm := filepath.Join(dir, "sdm")
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch("sdm")
	hand := Options{SDM: sdm, Debugger: backend.GDB}
	if got := serverBinary(hand, target{}); got != "" {
		t.Errorf("without sdm-server: %q, want sdm itself", got)
	}
	touch(ServerBinary)
	if got := serverBinary(hand, target{}); got != filepath.Join(dir, ServerBinary) {
		t.Errorf("without sdm-rank: %q, want sdm-server", got)
	}
	touch(RankBinary)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{hand, RankBinary},
		{Options{SDM: sdm, Debugger: backend.Sim, GDB: backend.Lazy}, RankBinary},
		{Options{SDM: sdm, Debugger: backend.GDB, GDB: backend.Eager, Members: "hand"}, RankBinary},
		{Options{SDM: sdm, Debugger: backend.GDB, GDB: backend.Lazy}, RankBinary},
		{Options{SDM: sdm, Debugger: backend.GDB, Members: "serve"}, ServerBinary},
		{Options{SDM: sdm, Debugger: backend.GDB, RankTree: true}, ServerBinary},
		{Options{SDM: sdm, Debugger: backend.GDB, Layout: wire.Layout{wire.All(2)}}, ServerBinary},
	} {
		if got := serverBinary(c.o, target{}); got != filepath.Join(dir, c.want) {
			t.Errorf("%+v: %q, want %s", c.o, got, c.want)
		}
	}
	if got := serverBinary(hand, target{host: "elsewhere"}); got != "" {
		t.Errorf("a job on another host: %q, want sdm there", got)
	}
}
