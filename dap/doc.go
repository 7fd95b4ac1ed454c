// Package dap is sdm's front end for editors: a Debug Adapter Protocol
// server (Serve) that launches a job, or attaches to one through MPIR,
// and shows its ranks as the editor's threads. Breakpoints go to every
// rank; continue, next, step and pause go to every rank or to one (the
// launch's allRanks); stacks, variables and expressions are read from the
// rank the editor selected. The editor's debug console takes the sdm
// console's commands ([0-3] print x, stacks, focus) and answers as the
// console does, merged; a custom request, sdm/stacks, gives the merged
// stack tree as JSON. It drives the tree through the launcher and client
// packages, beside the console and unchanged.
//
// sdm dap speaks DAP on stdin and stdout (--listen 127.0.0.1:PORT, Listen,
// for an editor that connects) and drives a job the way the console does,
// through launcher and the client session; the node, the ops and the
// backends do not know it exists. DAP's types and codec are
// github.com/google/go-dap's.
//
// # Framing
//
// Framing is read by conn.go, not go-dap's reader: a header that is not
// Content-Length, a length that is not a number or over 16 MiB, a body
// that is not JSON, each is answered with an error response (request_seq
// 0) and the reader goes on at the next "Content-Length:", even one in the
// middle of a line (a length too short leaves the rest of the body before
// it). Requests are served one at a time, in order; one before initialize,
// or that needs a job before launch or attach, gets an error naming what
// is missing. Unknown fields of the launch arguments are errors (a
// misspelt ranks would otherwise launch one).
//
// # Ranks are threads
//
// A rank's thread id is rank + 1 (with allThreads, the other threads of a
// rank carry their gdb number above bit 20; rank + 1 stays the thread that
// stopped, whatever is selected meanwhile). The pump (events.go) is the
// only reader of the session's events: it keeps which ranks run
// (rankState; the ranks a continue, run or step sets going are marked
// running before the command goes, so that a quick rank's stop is not
// taken for the last while a slower one has yet to tell that it runs),
// hands every event but output to the console behind the debug console,
// and gathers stops and output for a window after the last (at most ten
// windows after the first) so that ranks that stop one after another make
// one stopped event: its thread is the biggest group's first rank,
// allThreadsStopped says whether any rank still runs, its text says where
// every group is. A 256-rank stop is 4 messages (docs/PERFORMANCE.md).
// Output lines merge across ranks when equal, but never move before a line
// of the same rank held before them.
//
// # Frames and variables
//
// Frames and variables are handles that live until a rank moves (any
// running event drops them all, as DAP allows). Locals and arguments come
// from the op varobjs after frame N (and, for a thread of a multi-threaded
// rank shown with allThreads, thread N) selects it: gdb's variable objects
// with pretty-printing on, so that a std::vector opens into its elements,
// a std::map into its keys and values, a class into its members (its
// access groups flattened), a Fortran derived type into its components; a
// member is named by the path of keys down from its variable, and each
// answer creates the objects it lists and deletes them, so none outlives
// the stop it was read at.
//
// # Breakpoints
//
// Breakpoints are made on every live rank at once, so every rank's gdb
// gives the same number, which is the breakpoint's DAP id; a source's
// breakpoints are replaced as DAP says (delete the old numbers, make the
// new). Logpoints are breakpoints whose stops the pump does not show: it
// evaluates the message's {expressions} on the ranks that stopped, prints
// one line per group of equal values and continues them.
//
// # The end
//
// Disconnect, terminate, the client's stream ending or the adapter's
// context ending all go through endJob, once: an attached job's ranks are
// let go (killed only with terminateDebuggee), a launched job ends with
// Session.End, as sdm debug's quit.
package dap
