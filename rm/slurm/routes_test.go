package slurm

import (
	"strings"
	"testing"
)

func TestExpandHosts(t *testing.T) {
	for in, want := range map[string]string{
		"n1":               "n1",
		"n[1-3]":           "n1 n2 n3",
		"n[1-2,7],login":   "n1 n2 n7 login",
		"node[08-10]":      "node08 node09 node10",
		"rack[1-2]-n[1-2]": "rack1-n1 rack1-n2 rack2-n1 rack2-n2",
		"a[1-2],b[3],c":    "a1 a2 b3 c",
		"vm":               "vm",
	} {
		got, err := ExpandHosts(in)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("ExpandHosts(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n]", "n[3-1]", "n[a-b]", "n[1-99999999]", ",", "a,,b"} {
		if _, err := ExpandHosts(bad); err == nil {
			t.Errorf("ExpandHosts(%q) accepted", bad)
		}
	}
}

func TestExpandCounts(t *testing.T) {
	got, err := ExpandCounts("4,2,1(x3)")
	if err != nil || len(got) != 5 || got[0] != 4 || got[4] != 1 {
		t.Fatalf("ExpandCounts: %v %v", got, err)
	}
	for _, bad := range []string{"x", "1(x)", "1(x0)", "-1"} {
		if _, err := ExpandCounts(bad); err == nil {
			t.Errorf("ExpandCounts(%q) accepted", bad)
		}
	}
}

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestRoutes(t *testing.T) {
	table, err := Routes(env(map[string]string{
		"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "2,1", "SLURM_STEP_NUM_TASKS": "3",
	}), 20000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"n1:20000", "n1:20001", "n2:20000"}
	for i, e := range table.Entries {
		if got := e.Host + ":" + strings.TrimPrefix(e.Addr(), e.Host+":"); got != want[i] {
			t.Errorf("rank %d at %s, want %s", i, got, want[i])
		}
	}
	for name, vars := range map[string]map[string]string{
		"not in a step":   {},
		"counts disagree": {"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "2"},
		"total disagrees": {"SLURM_STEP_NODELIST": "n1", "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_STEP_NUM_TASKS": "3"},
		"cyclic":          {"SLURM_STEP_NODELIST": "n1", "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_DISTRIBUTION": "cyclic"},
	} {
		if _, err := Routes(env(vars), 20000); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
