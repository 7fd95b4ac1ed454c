package routing

import (
	"fmt"
	"slices"
)

// Hosts groups a tree's servers by the host they run on, as the routing
// table names it: the servers of a host share one node of the tree across
// hosts. The first server of each host (its lowest index) is the host's
// leader: it links to the other hosts' leaders over TCP, in the tree's
// shape over hosts (binomial or K-ary, as for servers), and the host's
// other servers, its members, link to it alone, on the host. A table whose
// every server is on a host of its own gives the plain tree.
type Hosts struct {
	host    []int   // each server's host, numbered in the order of their leaders
	members [][]int // each host's servers, ascending: the leader first
}

// GroupHosts groups t's servers by their entries' host names.
func GroupHosts(t *Table) *Hosts {
	h := &Hosts{host: make([]int, t.Size())}
	number := map[string]int{}
	var count []int // each host's servers
	for i, e := range t.Entries {
		if i > 0 && e.Host == t.Entries[i-1].Host {
			// A host's servers come one after the other, as launchers
			// number them: no need to look the host up again.
			h.host[i] = h.host[i-1]
			count[h.host[i]]++
			continue
		}
		k, ok := number[e.Host]
		if !ok {
			k = len(count)
			number[e.Host] = k
			count = append(count, 0)
		}
		h.host[i] = k
		count[k]++
	}
	// One array holds every host's list, each a slice of it: lists grown
	// server by server would leave every server of a large job garbage
	// the size of the table at its start.
	all := make([]int, t.Size())
	h.members = make([][]int, len(count))
	off := 0
	for k, c := range count {
		h.members[k] = all[off : off : off+c]
		off += c
	}
	for i, k := range h.host {
		h.members[k] = append(h.members[k], i)
	}
	return h
}

// Count is how many hosts there are.
func (h *Hosts) Count() int { return len(h.members) }

// Leader is the leader of server id's host.
func (h *Hosts) Leader(id int) int { return h.members[h.host[id]][0] }

// OnHost says whether servers a and b run on the same host.
func (h *Hosts) OnHost(a, b int) bool { return h.host[a] == h.host[b] }

// over is the tree over hosts: host k is its node k.
func (t Tree) over() Tree { return Tree{Size: len(t.Hosts.members), Fanout: t.Fanout} }

// leaderOf is the server index of node k of the tree over hosts.
func (t Tree) leaderOf(k int) int {
	if k == len(t.Hosts.members) {
		return t.Size
	}
	return t.Hosts.members[k][0]
}

// hostKey is id's node in the tree over hosts.
func (t Tree) hostKey(id int) int {
	if id == t.Size {
		return len(t.Hosts.members)
	}
	return t.Hosts.host[id]
}

func (t Tree) verifyHosts() error {
	if len(t.Hosts.host) != t.Size {
		return fmt.Errorf("routing: hosts of %d servers for a tree of %d", len(t.Hosts.host), t.Size)
	}
	return nil
}

func (t Tree) hostParent(id int) int {
	if id != t.Size && t.Hosts.Leader(id) != id {
		return t.Hosts.Leader(id)
	}
	p := t.over().Parent(t.hostKey(id))
	if p < 0 {
		return -1
	}
	return t.leaderOf(p)
}

// hostChildren are a leader's members and the leaders of the hosts below
// its host, ascending; a member has none.
func (t Tree) hostChildren(id int) []int {
	var kids []int
	if id != t.Size {
		if t.Hosts.Leader(id) != id {
			return nil
		}
		kids = append(kids, t.Hosts.members[t.Hosts.host[id]][1:]...)
	}
	for _, k := range t.over().Children(t.hostKey(id)) {
		kids = append(kids, t.leaderOf(k))
	}
	slices.Sort(kids)
	return kids
}

func (t Tree) hostWalk(id int, fn func(int)) {
	if id != t.Size && t.Hosts.Leader(id) != id {
		fn(id)
		return
	}
	t.over().Walk(t.hostKey(id), func(k int) {
		for _, s := range t.Hosts.members[k] {
			fn(s)
		}
	})
}

// hostDepth is the deepest host's depth in the tree over hosts, one more
// for a host with members.
func (t Tree) hostDepth() int {
	over, d := t.over(), 0
	for k, m := range t.Hosts.members {
		depth := 1
		for p := over.Parent(k); p != over.Master(); p = over.Parent(p) {
			depth++
		}
		if len(m) > 1 {
			depth++
		}
		d = max(d, depth)
	}
	return d
}

// Local says whether server id's link to its parent stays on its host:
// it is a member of a host, and its parent that host's leader.
func (t Tree) Local(id int) bool {
	return t.Hosts != nil && t.Valid(id) && id != t.Size && t.Hosts.Leader(id) != id
}

// NewTree is the tree of table's servers with the given fanout: of hosts
// (Hosts) when byHost, else of one node per server.
func NewTree(table *Table, fanout int, byHost bool) Tree {
	t := Tree{Size: table.Size(), Fanout: fanout}
	if byHost {
		t.Hosts = GroupHosts(table)
	}
	return t
}
