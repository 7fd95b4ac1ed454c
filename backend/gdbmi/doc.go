// Package gdbmi debugs a rank's process with a real gdb, driven through
// its machine interface (GDB/MI 3). One gdb runs per rank; the program has
// a terminal of its own, whose output becomes output events; gdb's
// asynchronous records become running, stopped, exited and error events.
//
// Commands run one after the other, in the order the node hands them over,
// as gdb reads them; only status (answered from what the events said) and
// halt (a signal to the program) go around the queue, so that they work
// while gdb is busy.
//
// What enters: the ops of the table through Do (backend.Decode turns each
// into a call of one of Backend's methods), the gdb to run and the program
// or the pids to attach. What leaves: the answers, encoded by their entries
// in package op, and the events of op.Events on Events. gdb's MI records and
// the program's terminal stay inside.
package gdbmi
