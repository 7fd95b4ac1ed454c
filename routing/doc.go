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
// them. Every other problem is reported at once, naming the file and line.
package routing
