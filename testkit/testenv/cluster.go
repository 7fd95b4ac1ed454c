package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster is the emulated cluster of scripts/cluster.sh: hosts h1..h4,
// each a network namespace with its own address and hostname, a real
// sshd and a slurmd.
type Cluster struct {
	Hosts     []string // h1..h4
	Addrs     []string // their addresses, in the same order
	FrontEnd  string   // this machine's address on the cluster's network
	Bridge    string   // this machine's interface on it
	Links     []string // each host's link to the bridge, in Hosts' order
	RSH       string   // the ssh stand-in that launchers use to reach a host
	SSH       string   // real ssh, with the cluster's key and options
	SLURMConf string   // the cluster's SLURM
	Env       string   // what a shell sources to run sdm there (scripts/cluster.sh)
}

var (
	clusterOnce sync.Once
	theCluster  *Cluster
	clusterErr  error
	clusterBase string // the BASE of a cluster these tests started
	clusterLogs string
)

// StartCluster brings up the emulated cluster once per test binary
// (StopCluster tears it down). It needs root and network namespaces: a test
// fails, saying why, when they are missing under CI=true, and is skipped
// elsewhere.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	for _, tool := range []string{"ip", "nsenter", "unshare", "ssh", "/usr/sbin/sshd", "srun", "slurmctld", "mpirun"} {
		RequireTool(t, tool)
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the emulated cluster needs root (network namespaces, a bridge), and CI=true")
		}
		t.Skip("the emulated cluster needs root")
	}
	clusterOnce.Do(func() {
		// One that runs already (scripts/cluster.sh up, by hand) is used,
		// and left running.
		base := "/tmp/sdm-cluster"
		if cluster(base, "status") != nil {
			var err error
			if base, err = os.MkdirTemp("", "sdm-cluster-"); err != nil {
				clusterErr = err
				return
			}
			os.Remove(base) // the script makes it, and removes it when down
			if clusterErr = cluster(base, "up"); clusterErr != nil {
				return
			}
			clusterBase = base
		}
		clusterLogs = filepath.Join(base, "log")
		theCluster, clusterErr = clusterIn(base)
	})
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return theCluster
}

// clusterIn describes the cluster that runs in base, on the network K
// that the script recorded there (scripts/cluster.sh names it).
func clusterIn(base string) (*Cluster, error) {
	id, err := os.ReadFile(filepath.Join(base, "id"))
	if err != nil {
		return nil, fmt.Errorf("the cluster in %s: %v", base, err)
	}
	k := strings.TrimSpace(string(id))
	c := &Cluster{
		FrontEnd: "10.200." + k + ".254", Bridge: "sdmbr" + k,
		RSH: filepath.Join(base, "bin", "rsh"), SSH: filepath.Join(base, "bin", "ssh"),
		SLURMConf: filepath.Join(base, "slurm", "etc", "slurm.conf"),
		Env:       filepath.Join(base, "env"),
	}
	for i := 1; i <= 4; i++ {
		c.Hosts = append(c.Hosts, fmt.Sprintf("h%d", i))
		c.Addrs = append(c.Addrs, fmt.Sprintf("10.200.%s.%d", k, i))
		c.Links = append(c.Links, fmt.Sprintf("sdm%s-h%d", k, i))
	}
	return c, nil
}

// StopCluster tears down the cluster StartCluster started, if it did.
func StopCluster() {
	if clusterBase != "" {
		cluster(clusterBase, "down")
	}
}

// cluster runs scripts/cluster.sh ACTION on the cluster in base.
func cluster(base, action string) error {
	cmd, cancel := CommandTimeout(2*time.Minute, filepath.Join(repoRoot(), "scripts", "cluster.sh"), action)
	defer cancel()
	cmd.Env = append(os.Environ(), "BASE="+base)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/cluster.sh %s: %v\n%s", action, err, out)
	}
	return nil
}

// Pids lists the processes that run on host (in its network namespace).
func (c *Cluster) Pids(t testing.TB, host string) []int {
	t.Helper()
	out, err := Command(t, "ip", "netns", "pids", host).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", host, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Procs lists the processes named comm on any of the hosts.
func (c *Cluster) Procs(t testing.TB, comm string) []int {
	t.Helper()
	var found []int
	for _, h := range c.Hosts {
		for _, pid := range c.Pids(t, h) {
			if name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(name)) == comm {
				found = append(found, pid)
			}
		}
	}
	return found
}

// Logins counts the ssh logins each host's sshd has let in so far.
func (c *Cluster) Logins(t testing.TB) []int {
	t.Helper()
	counts := make([]int, len(c.Hosts))
	for i, h := range c.Hosts {
		log, err := os.ReadFile(filepath.Join(clusterLogs, "sshd-"+h+".log"))
		if err != nil {
			t.Fatal(err)
		}
		counts[i] = strings.Count(string(log), "Accepted publickey")
	}
	return counts
}
