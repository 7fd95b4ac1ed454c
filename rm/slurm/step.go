package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Step is a running job step whose tasks a debugger takes over by its
// job id (sdm attach --slurm), from any host with SLURM's commands.
type Step struct {
	Job, Step string   // "12" and "0": the step 12.0
	Nodes     []string // where its tasks run
	NodeList  string   // the same as SLURM writes it ("n[1-4]")
	Tasks     int
	Srun      string // the srun that started it, as host:pid
}

// ID is the step's name: JOB.STEP.
func (s Step) ID() string { return s.Job + "." + s.Step }

// ParseStepID reads JOBID[.STEP]; an absent step is "".
func ParseStepID(id string) (job, step string, err error) {
	job, step, dotted := strings.Cut(id, ".")
	if !digits(job) || dotted && !digits(step) {
		return "", "", fmt.Errorf("--slurm %q: want JOBID or JOBID.STEP (--slurm 12, --slurm 12.0)", id)
	}
	return job, step, nil
}

func digits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// FindStep finds the running step that id names (JOBID.STEP), or the
// newest running step of job JOBID: a job of this user (or any, for
// root), running, with a step that has tasks.
func FindStep(ctx context.Context, id string) (Step, error) {
	job, step, err := ParseStepID(id)
	if err != nil {
		return Step{}, err
	}
	out, err := command(ctx, "scontrol", "-o", "show", "job", job)
	if err != nil {
		return Step{}, fmt.Errorf("SLURM job %s: %w", job, err)
	}
	f := fields(out)
	if uid := userID(f["UserId"]); uid != os.Getuid() && os.Getuid() != 0 {
		return Step{}, fmt.Errorf("SLURM job %s is user %s's: sdm attaches to your own jobs only", job, f["UserId"])
	}
	if state := f["JobState"]; state != "RUNNING" {
		return Step{}, fmt.Errorf("SLURM job %s is %s, not running: there are no tasks to attach to", job, state)
	}
	if step == "" {
		if step, err = newestStep(ctx, job); err != nil {
			return Step{}, err
		}
	}
	st := Step{Job: job, Step: step}
	out, err = command(ctx, "scontrol", "-o", "show", "step", st.ID())
	if err != nil {
		return Step{}, fmt.Errorf("SLURM step %s: %w", st.ID(), err)
	}
	f = fields(out)
	if state := f["State"]; state != "RUNNING" {
		return Step{}, fmt.Errorf("SLURM step %s is %s, not running", st.ID(), state)
	}
	st.NodeList, st.Srun = f["NodeList"], f["SrunHost:Pid"]
	if st.Nodes, err = ExpandHosts(st.NodeList); err != nil {
		return Step{}, fmt.Errorf("SLURM step %s: NodeList: %w", st.ID(), err)
	}
	if st.Tasks, err = strconv.Atoi(f["Tasks"]); err != nil || st.Tasks < 1 || len(st.Nodes) == 0 {
		return Step{}, fmt.Errorf("SLURM step %s has no tasks (Tasks=%s, NodeList=%s)", st.ID(), f["Tasks"], st.NodeList)
	}
	return st, nil
}

// newestStep is the newest running step of job that runs tasks (not
// its batch script's or extern step).
func newestStep(ctx context.Context, job string) (string, error) {
	out, err := command(ctx, "squeue", "-h", "-s", "-j", job, "-o", "%i")
	if err != nil {
		return "", fmt.Errorf("SLURM job %s: its steps: %w", job, err)
	}
	newest := -1
	for line := range strings.Lines(string(out)) {
		_, step, _ := strings.Cut(strings.TrimSpace(line), ".")
		if n, err := strconv.Atoi(step); err == nil && n > newest {
			newest = n
		}
	}
	if newest < 0 {
		return "", fmt.Errorf("SLURM job %s runs no step with tasks yet (only its batch script): attach once its srun has started them", job)
	}
	return strconv.Itoa(newest), nil
}

// userID is the number in scontrol's UserId=name(uid), -1 if none.
func userID(s string) int {
	_, rest, _ := strings.Cut(s, "(")
	uid, err := strconv.Atoi(strings.TrimSuffix(rest, ")"))
	if err != nil {
		return -1
	}
	return uid
}

// fields reads scontrol -o's one line of Key=Value words.
func fields(out []byte) map[string]string {
	f := map[string]string{}
	for _, w := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if _, seen := f[k]; !seen {
				f[k] = v
			}
		}
	}
	return f
}

// command runs a SLURM command and returns its output, or its own
// words for why it failed.
func command(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if why := strings.TrimSpace(stderr.String()); why != "" {
			return nil, errors.New(why)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s did not answer in time", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Overlap is the command line that runs argv on node as a step of its
// own inside st's job, beside its tasks (srun --overlap): how a
// debugger's tools reach a job's nodes through SLURM itself.
func (st Step) Overlap(node string, argv ...string) []string {
	return append([]string{"srun", "--overlap", "--jobid=" + st.Job, "-N1", "-n1", "-w", node, "--quiet"}, argv...)
}

// Task is one task of a step: its rank (SLURM_PROCID), node and pid.
type Task struct {
	Rank, Pid int
	Node      string
}

// ListTasks lists st's tasks on every node, with one srun --overlap over
// its nodes, a task per node, each asking its slurmd (scontrol listpids).
func (st Step) ListTasks(ctx context.Context) ([]Task, error) {
	script := `echo "node $SLURMD_NODENAME"; exec scontrol listpids ` + st.ID()
	out, err := command(ctx, "srun", "--overlap", "--jobid="+st.Job, "-w", st.NodeList, "-N", strconv.Itoa(len(st.Nodes)),
		"-n", strconv.Itoa(len(st.Nodes)), "--ntasks-per-node=1", "--label", "--quiet", "sh", "-c", script)
	if err != nil {
		return nil, fmt.Errorf("SLURM step %s: list its tasks on %s: %w", st.ID(), st.NodeList, err)
	}
	return parseTasks(out, st)
}

// parseTasks reads ListTasks's output: lines "L: node NAME" and "L: PID
// JOBID STEPID LOCALID GLOBALID" for each label L, and checks that it
// lists every rank of the step once.
func parseTasks(out []byte, st Step) ([]Task, error) {
	node := map[string]string{}
	type row struct {
		label     string
		rank, pid int
	}
	var rows []row
	for line := range strings.Lines(string(out)) {
		label, rest, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		label = strings.TrimSpace(label)
		w := strings.Fields(rest)
		switch {
		case len(w) == 2 && w[0] == "node":
			node[label] = w[1]
		case len(w) == 5 && w[1] == st.Job && w[2] == st.Step && w[4] != "-": // "-": a process of the step that is no task
			pid, perr := strconv.Atoi(w[0])
			rank, rerr := strconv.Atoi(w[4])
			if perr != nil || rerr != nil || pid <= 0 || rank < 0 || rank >= st.Tasks {
				return nil, fmt.Errorf("SLURM step %s: %q is not a task of its %d", st.ID(), strings.TrimSpace(rest), st.Tasks)
			}
			rows = append(rows, row{label, rank, pid})
		}
	}
	tasks := make([]Task, st.Tasks)
	for _, r := range rows {
		if tasks[r.rank].Pid != 0 {
			return nil, fmt.Errorf("SLURM step %s: rank %d is listed twice", st.ID(), r.rank)
		}
		if node[r.label] == "" {
			return nil, fmt.Errorf("SLURM step %s: rank %d's node is not known", st.ID(), r.rank)
		}
		tasks[r.rank] = Task{Rank: r.rank, Pid: r.pid, Node: node[r.label]}
	}
	if missing := slices.IndexFunc(tasks, func(t Task) bool { return t.Pid == 0 }); missing >= 0 {
		return nil, fmt.Errorf("SLURM step %s: rank %d of %d not found on its nodes %s (has it ended?)", st.ID(), missing, st.Tasks, st.NodeList)
	}
	return tasks, nil
}
