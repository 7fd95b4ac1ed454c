package slurm

import (
	"strings"
	"testing"
)

func TestParseStepID(t *testing.T) {
	for in, want := range map[string][2]string{"12": {"12", ""}, "12.0": {"12", "0"}, "7.31": {"7", "31"}} {
		job, step, err := ParseStepID(in)
		if err != nil || job != want[0] || step != want[1] {
			t.Errorf("%q: %q %q %v", in, job, step, err)
		}
	}
	for _, in := range []string{"", "12.", ".3", "12.batch", "-1", "1 2", "12.0.1", "99999999999"} {
		if _, _, err := ParseStepID(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestFields(t *testing.T) {
	f := fields([]byte("JobId=3 UserId=ann(1001) JobState=RUNNING NodeList=n[1-2] Power=\n"))
	if f["JobState"] != "RUNNING" || userID(f["UserId"]) != 1001 || f["NodeList"] != "n[1-2]" || f["Power"] != "" {
		t.Errorf("%v", f)
	}
	if userID("ann") != -1 || userID("") != -1 {
		t.Error("a UserId without a number")
	}
}

func TestParseTasks(t *testing.T) {
	st := Step{Job: "7", Step: "0", Tasks: 3, NodeList: "n[1-2]"}
	out := "0: node n1\n1: node n2\n0: PID      JOBID    STEPID   LOCALID GLOBALID\n" +
		"0: 100 7 0 0 0\n0: 101 7 0 1 2\n0: 99 7 batch 0 0\n1: PID JOBID STEPID LOCALID GLOBALID\n1: 200 7 0 0 1\n1: 201 7 0 - -\n"
	tasks, err := parseTasks([]byte(out), st)
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0] != (Task{0, 100, "n1"}) || tasks[1] != (Task{1, 200, "n2"}) || tasks[2] != (Task{2, 101, "n1"}) {
		t.Errorf("%+v", tasks)
	}
	for in, want := range map[string]string{
		"0: node n1\n0: 100 7 0 0 0\n0: 101 7 0 1 1\n":                  "rank 2 of 3 not found",
		"0: node n1\n0: 100 7 0 0 0\n0: 101 7 0 1 0\n0: 102 7 0 2 2\n":  "rank 0 is listed twice",
		"0: 100 7 0 0 0\n0: 101 7 0 1 1\n0: 102 7 0 2 2\n":              "rank 0's node is not known",
		"0: node n1\n0: 100 7 0 0 0\n0: 101 7 0 1 1\n0: 102 7 0 2 9\n":  "is not a task of its 3",
		"0: node n1\n0: 100 7 0 0 0\n0: 101 7 0 1 1\n0: -102 7 0 2 2\n": "is not a task of its 3",
	} {
		if _, err := parseTasks([]byte(in), st); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// FuzzParseTasks: any output gives every rank once with a pid and a node,
// or an error; never a panic.
func FuzzParseTasks(f *testing.F) {
	f.Add("0: node n1\n0: 100 7 0 0 0\n0: 101 7 0 1 1\n")
	f.Add("0: node n1\n1: node n2\n0: 100 7 0 0 1\n1: 200 7 0 0 0\n")
	f.Add(": : :\n0: 1 7 0 0 99999999999999999999\n")
	f.Fuzz(func(t *testing.T, out string) {
		tasks, err := parseTasks([]byte(out), Step{Job: "7", Step: "0", Tasks: 2})
		if err != nil {
			return
		}
		for r, task := range tasks {
			if task.Pid <= 0 || task.Node == "" || task.Rank != r {
				t.Fatalf("rank %d: %+v", r, task)
			}
		}
	})
}
