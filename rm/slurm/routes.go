package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/routing"
)

// Routes computes the routing table of a job step from what SLURM tells
// each of its tasks, with no file and no round trip to the front end: the
// step's nodes (SLURM_STEP_NODELIST), the tasks on each
// (SLURM_STEP_TASKS_PER_NODE), and the block distribution SLURM uses by
// default, in which a node's tasks have consecutive ranks. The server of a
// task listens on portBase plus the task's index on its node
// (SLURM_LOCALID for itself).
func Routes(lookup func(string) (string, bool), portBase int) (*routing.Table, error) {
	get := func(name string) (string, error) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("%s is not set: not a task of a SLURM job step", name)
		}
		return v, nil
	}
	if d, ok := lookup("SLURM_DISTRIBUTION"); ok && d != "" && !strings.HasPrefix(d, "block") {
		return nil, fmt.Errorf("SLURM_DISTRIBUTION=%s: sdm computes routes for the block distribution only; start the servers with --routes_from=publish instead", d)
	}
	nodelist, err := get("SLURM_STEP_NODELIST")
	if err != nil {
		return nil, err
	}
	perNode, err := get("SLURM_STEP_TASKS_PER_NODE")
	if err != nil {
		return nil, err
	}
	hosts, err := ExpandHosts(nodelist)
	if err != nil {
		return nil, fmt.Errorf("SLURM_STEP_NODELIST: %w", err)
	}
	counts, err := ExpandCounts(perNode)
	if err != nil {
		return nil, fmt.Errorf("SLURM_STEP_TASKS_PER_NODE: %w", err)
	}
	if len(hosts) != len(counts) {
		return nil, fmt.Errorf("SLURM_STEP_NODELIST has %d nodes but SLURM_STEP_TASKS_PER_NODE counts %d", len(hosts), len(counts))
	}
	var entries []routing.Entry
	for i, h := range hosts {
		for local := range counts[i] {
			entries = append(entries, routing.Entry{Index: len(entries), Host: h, Port: portBase + local})
		}
	}
	if total, err := get("SLURM_STEP_NUM_TASKS"); err == nil && total != strconv.Itoa(len(entries)) {
		return nil, fmt.Errorf("SLURM_STEP_NUM_TASKS=%s but the nodes hold %d tasks", total, len(entries))
	}
	return routing.NewTable(entries)
}
