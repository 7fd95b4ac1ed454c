package routes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sdm-hpc/sdm/routing"
)

func lookupIn(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestComputeOnlyComputedSources(t *testing.T) {
	for _, s := range []routing.Source{routing.SourceFile, routing.SourcePublish} {
		if f, err := Compute(s, 0, lookupIn(nil), ""); f != nil || err != nil {
			t.Errorf("%s: a compute function (%v), want none", s, err)
		}
	}
}

func TestComputeNeedsAPortBase(t *testing.T) {
	for _, base := range []int{0, 65536} {
		_, err := Compute(routing.SourceSLURM, base, lookupIn(nil), "")
		if err == nil || err.Error() != "--routes_from=slurm needs --port_base" {
			t.Errorf("port base %d: %v, want --routes_from=slurm needs --port_base", base, err)
		}
	}
}

func TestComputeFromEachManagersVariables(t *testing.T) {
	slurm, err := Compute(routing.SourceSLURM, 20000, lookupIn(map[string]string{
		"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_STEP_NUM_TASKS": "2",
	}), "")
	if err != nil {
		t.Fatal(err)
	}
	if table, err := slurm(); err != nil || table.Size() != 2 || table.Entries[1].Host != "n2" {
		t.Errorf("SLURM: %v, %v; want n1 and n2", table, err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "host.list"), []byte("h1\nh2\nh3\n"), 0o644)
	pe, err := Compute(routing.SourcePE, 30000, lookupIn(map[string]string{"MP_PROCS": "3"}), dir)
	if err != nil {
		t.Fatal(err)
	}
	if table, err := pe(); err != nil || table.Size() != 3 || table.Entries[2].Host != "h3" {
		t.Errorf("POE: %v, %v; want h1, h2 and h3 from %s", table, err, dir)
	}
}
