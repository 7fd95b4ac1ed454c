// Package local is the built-in launcher: it starts the master and one
// rank server per rank as processes on this machine. It binds every
// server's listening socket itself and hands it down, so the routing file
// is complete before any server starts, no port can be taken in between,
// and start order does not matter.
//
// What enters: an rm.Spec. What leaves: the routing file and the master
// file, written before any server starts, and the started job.
package local
