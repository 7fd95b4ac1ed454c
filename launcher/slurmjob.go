package launcher

import (
	"context"
	"fmt"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/rm/slurm"
)

// slurmTable finds the SLURM step that a.m.Slurm names and makes the
// table of its tasks from what each node's slurmd says.
func (a *acquisition) slurmTable(ctx context.Context, progress func(Progress)) error {
	st, err := slurm.FindStep(ctx, a.m.Slurm)
	if err != nil {
		return err
	}
	tasks, err := st.ListTasks(ctx)
	if err != nil {
		return err
	}
	tab := mpir.Table{Procs: make([]mpir.Proc, len(tasks)), IAmStarter: true, PartialAttachOK: true,
		Via: "SLURM step " + st.ID() + " on " + st.NodeList}
	for _, t := range tasks {
		tab.Procs[t.Rank] = mpir.Proc{Host: t.Node, Pid: t.Pid}
	}
	a.step = &st
	a.result.Table, a.result.Again = tab, "--slurm "+st.ID()
	progress(Progress{Stage: StageAcquired, Done: len(tab.Procs), Total: len(tab.Procs), Text: describeTable(tab)})
	return nil
}

// overlap runs a host's servers, script, on that node of the SLURM
// job, as a step of their own beside its tasks.
func (a *acquisition) overlap(node, script string) []string {
	return a.step.Overlap(node, "sh", "-c", script)
}

// slurmRefusal explains why a job attached by its job id cannot be
// started again from the front end.
func slurmRefusal(id string) error {
	return fmt.Errorf("this job is SLURM's (sdm attach --slurm %s took over its tasks), so sdm cannot start it again; to be able to restart it, start its srun under sdm: sdm debug --rm slurm -n N -- PROGRAM, or sdm connect srun … in the batch script", id)
}
