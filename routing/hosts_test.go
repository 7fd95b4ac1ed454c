package routing

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// onHosts is a routing table whose server i runs on hosts[i].
func onHosts(t testing.TB, hosts ...string) *Table {
	t.Helper()
	entries := make([]Entry, len(hosts))
	for i, h := range hosts {
		entries[i] = Entry{Index: i, Host: h, Port: 10000 + i}
	}
	tab, err := NewTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestHostTree(t *testing.T) {
	// Hosts a (0, 1, 5), b (2, 3), c (4): the binomial tree over hosts
	// puts a and b under the master and c under a.
	tr := Tree{Size: 6, Hosts: GroupHosts(onHosts(t, "a", "a", "b", "b", "c", "a"))}
	checkTree(t, tr)
	want := map[int][]int{6: {0, 2}, 0: {1, 4, 5}, 2: {3}, 1: nil, 3: nil, 4: nil, 5: nil}
	for id, kids := range want {
		if got := tr.Children(id); !slices.Equal(got, kids) {
			t.Errorf("Children(%d) = %v, want %v", id, got, kids)
		}
	}
	for id, local := range map[int]bool{0: false, 1: true, 2: false, 3: true, 4: false, 5: true, 6: false} {
		if tr.Local(id) != local {
			t.Errorf("Local(%d) = %v, want %v", id, !local, local)
		}
	}
	if got := walk(tr, 0); !slices.Equal(got, []int{0, 1, 5, 4}) {
		t.Errorf("Walk(0) = %v", got)
	}
	if d := tr.Depth(); d != 2 {
		t.Errorf("Depth = %d, want 2", d)
	}
	if h := tr.Hosts; h.Count() != 3 || h.Leader(5) != 0 || !h.OnHost(1, 5) || h.OnHost(0, 2) {
		t.Errorf("hosts: %d hosts, leader of 5 = %d", h.Count(), h.Leader(5))
	}
}

// One server per host is the plain tree; all on one host is a star below
// server 0.
func TestHostTreeEdges(t *testing.T) {
	for _, k := range []int{0, 2, 4} {
		hosts := make([]string, 37)
		for i := range hosts {
			hosts[i] = fmt.Sprint("h", i)
		}
		tr, plain := Tree{Size: 37, Fanout: k, Hosts: GroupHosts(onHosts(t, hosts...))}, Tree{Size: 37, Fanout: k}
		for id := 0; id <= 37; id++ {
			if tr.Parent(id) != plain.Parent(id) || !slices.Equal(tr.Children(id), plain.Children(id)) || tr.Local(id) {
				t.Fatalf("fanout %d, server %d: host tree differs from the plain one", k, id)
			}
		}
		for i := range hosts {
			hosts[i] = "one"
		}
		star := Tree{Size: 37, Fanout: k, Hosts: GroupHosts(onHosts(t, hosts...))}
		checkTree(t, star)
		if kids := star.Children(0); len(kids) != 36 || star.Parent(0) != 37 || star.Depth() != 2 {
			t.Fatalf("fanout %d: one host: server 0 has %d children, depth %d", k, len(kids), star.Depth())
		}
	}
}

func TestHostTreeInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		n := 1 + r.IntN(300)
		hosts := make([]string, n)
		nh := 1 + r.IntN(n)
		for i := range hosts {
			hosts[i] = fmt.Sprint("h", r.IntN(nh))
		}
		checkTree(t, Tree{Size: n, Fanout: []int{0, 2, 3, 8}[r.IntN(4)], Hosts: GroupHosts(onHosts(t, hosts...))})
	}
	if err := (Tree{Size: 3, Hosts: GroupHosts(onHosts(t, "a", "b"))}).Verify(); err == nil {
		t.Error("hosts of 2 servers in a tree of 3 verified")
	}
}

// The example of docs/ARCHITECTURE.md: two servers on each of four hosts.
func TestHostTreeOfFourHosts(t *testing.T) {
	tr := Tree{Size: 8, Hosts: GroupHosts(onHosts(t, "a", "a", "b", "b", "c", "c", "d", "d"))}
	want := map[int][]int{8: {0, 2, 6}, 0: {1, 4}, 4: {5}, 2: {3}, 6: {7}}
	for id, kids := range want {
		if got := tr.Children(id); !slices.Equal(got, kids) {
			t.Errorf("Children(%d) = %v, want %v", id, got, kids)
		}
	}
}

// Grouping a large job's servers costs the two lists it keeps (each
// server's host, each host's servers) and no garbage, wherever the hosts'
// servers sit in the table, and every host lists its servers in order.
func TestGroupHostsOfALargeJob(t *testing.T) {
	const n = 200_000
	for _, c := range []struct {
		name string
		host func(i int) string
	}{
		{"one host", func(int) string { return "node" }},
		{"hosts of 128, in turn", func(i int) string { return fmt.Sprintf("node-%d", i%(n/128)) }},
	} {
		hosts := make([]string, n)
		entries := make([]Entry, n)
		for i := range hosts {
			hosts[i] = c.host(i)
			entries[i] = Entry{Index: i, Host: hosts[i], Port: 1 + i%65535}
		}
		tab, err := NewTable(entries)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h := GroupHosts(tab)
		runtime.ReadMemStats(&after)
		// The two lists are 1.6 MB each.
		if got := after.TotalAlloc - before.TotalAlloc; got > 7<<19 {
			t.Errorf("%s: grouping allocated %d bytes, want at most %d", c.name, got, 7<<19)
		}
		seen := 0
		for k, m := range h.members {
			if !slices.IsSorted(m) {
				t.Fatalf("%s: host %d lists %v, out of order", c.name, k, m[:min(len(m), 8)])
			}
			for _, s := range m {
				if h.host[s] != k || hosts[s] != hosts[m[0]] || h.Leader(s) != m[0] {
					t.Fatalf("%s: server %d listed on host %d (%s), leader %d", c.name, s, k, hosts[s], h.Leader(s))
				}
			}
			seen += len(m)
		}
		if seen != n {
			t.Errorf("%s: the hosts list %d servers, want %d", c.name, seen, n)
		}
	}
}
