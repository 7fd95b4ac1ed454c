// Package routing is how an sdm debug server finds its peers and its place
// in the tree of servers.
//
// An MPI job runs one debug server per rank. Before the servers can talk to
// one another, the launcher (or the servers themselves) record where each one
// listens in a routing file, in the format Eclipse PTP's SDM uses:
//
//	3
//	0 node01 50000
//	1 node01 50001
//	2 node02 50000
//
// The first line holds N, the number of servers; then come N lines of
// "index host port", separated by spaces or tabs, in any order, each index
// 0..N-1 exactly once. CRLF line ends and blank lines at the end of the file
// are accepted.
//
// Data enters the package in four ways: as a routing file (Parse, ReadFile,
// and Wait, which blocks until another process has finished writing one), as
// a slice of entries a launcher has collected (NewTable), as the hosts a
// master is given (Generate), and as the rank index that the command line or
// the MPI launcher's environment gives a server (Index). It leaves as a Table
// mapping each server index to an address, as a routing file and its master
// file written atomically (Write, the one writer of both; Table.WriteTo), and
// as the parent and children of each server in a Tree, along which the
// servers forward commands and gather replies.
//
// A file with fewer than N entries is not treated as wrong: its writer may
// still be busy. Such errors wrap ErrIncomplete, and Wait keeps waiting on
// them; a file is complete only with exactly N entry lines, so a
// half-written file reads as "incomplete", never as wrong. Writers still
// write a temporary file and rename it. Every other problem is reported at
// once, naming the file and line.
//
// # The master file
//
// The master file (ROUTING_FILE.master) is one line "N host port", where
// the master listens for its children. PTP's file has no line for the
// master because in PTP parents dial children; here children dial their
// parents, so the master's address must be published too. Whoever decides
// it writes it: the local launcher (which binds every socket itself), or
// the master, which binds a free port and writes the file with PublicHost.
//
// # Names, binding and dialling
//
// PublicHost is the name a server or master that writes where it listens
// gives itself: $SDM_MASTER_HOST when set, else its host name when the
// name resolves to an address that is not the loopback, else the address
// of the first interface that is up and not the loopback. A name that does
// not resolve here is of use nowhere, and Debian maps a machine's own name
// to 127.0.1.1, which means another host everywhere else. Servers that
// publish their entries name themselves the same way.
//
// A server named by a host name listens on the address that name resolves
// to among this host's interfaces (sdm.BindHost, InterfaceOf), and on
// every interface only when it resolves to none of them (a login node's
// name mapped to 127.0.1.1, a name SLURM knows and the resolver does not):
// a server is never reachable on an interface its host was not named for,
// and never only on the loopback when its parent is elsewhere.
//
// A child dials its parent at the address its entry gives, except when the
// entry names this very host (its host name, or the node name SLURM gave
// it, as a table computed from SLURM's node list does): it then dials the
// address the parent binds, else the loopback, so that same-host links
// need no name service. Servers read the file afresh on every connection
// attempt, so a stale file from an earlier run is simply replaced. A
// parent's host that the resolver says does not exist is refused at once
// with the entry's FILE:LINE (Table.Where), not retried until the
// deadline; a resolver that does not answer is retried.
//
// AddressToward is where a job on another host (sdm connect, --target)
// dials the front end: the front end's source address on its route toward
// that host, the interface the host's network is on, not its name;
// --client-host overrides, and sdm listen logs it with each accepted job.
// sdm debug runs its master beside the front end, which it dials on the
// loopback.
//
// # Waiting
//
// Wait reads a file that is already there, whole, at once; otherwise it
// watches the directory with inotify (the file usually arrives by rename),
// plus a poll every second because inotify does not see writes from other
// NFS clients. There are no fixed sleeps; the deadline error says what is
// missing ("has 5 of 8 entries").
//
// # Index
//
// A server's index is --server=ID, else the first set of
// OMPI_COMM_WORLD_RANK, OMPI_MCA_orte_ess_vpid, OMPI_MCA_ns_nds_vpid,
// PMI_RANK, PMIX_RANK, MP_CHILD, PCMP_PTP_RANK, SLURM_PROCID, X10_PLACE
// (IndexEnv). None is an error.
//
// # Trees
//
// Tree is PTP's binomial tree rooted at the master by default (for N=8 the
// master's children are 0, 1, 3, 7; 0 has 2, 4). With --fanout K it is a
// K-ary tree whose subtrees are contiguous index ranges, so rank sets stay
// one range per subtree at any size. Every server of a job must be given
// the same --fanout.
//
// With --tree=hosts, the default (TreeShape; Hosts, NewTree), the servers
// of one host share one node of the tree. The routing file's entries are
// grouped by their host field; each host's first server (its lowest index)
// is the host's leader, and its other servers are its members. The tree
// above (binomial or K-ary, as --fanout says) is laid over the hosts in
// the order of their leaders: host k is position k+1, so the leaders link
// to each other and to the master exactly as servers 0..H-1 would in the
// plain tree, over TCP. Below a leader hang its members, each linked to it
// alone over a Unix socket (wire.LocalAddress: an abstract name made of a
// digest of the session key and the leader's index, which lives as long as
// the leader and belongs to the host, or to its network namespace). A
// table of one server per host is the plain tree. --tree=ranks keeps
// PTP's plain tree of one node per server (every link TCP), for
// comparison; the master and every server must be given the same --tree.
//
// A host cut off therefore silences its own ranks and those of the hosts
// below it in the tree over hosts, and the error names the server on the
// cut host; in PTP's tree (--tree=ranks) a server's subtree spans hosts,
// and a host cut off silences the ranks of other hosts whose servers hang
// below its servers.
//
// In a tree of hosts without a layout, a host's members hand their ranks
// over to the leader by default (--members=hand; package member). Hands
// decides it, once, in the launcher's plan, which gives every server the
// outcome as --members=hand or --members=serve.
//
// The package is embeddable: it imports the standard library and
// x/sys/unix only.
package routing
