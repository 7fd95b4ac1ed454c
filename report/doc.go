// Package report runs a job with nobody watching and says what happened:
// sdm report. A Watcher drives a console session whose output is JSON
// (docs/JSON.md): it sets tracepoints (breakpoints whose ranks it lets go
// on once it has compared their expressions), runs the job, and waits for
// news. A fatal signal is a crash, taken with the crashed ranks' full
// stacks and every other rank's; stacks that stop changing are a hang,
// taken with queues and deadlock's diagnosis; a request (SIGUSR1) or a
// period takes a snapshot. When the job ends (or is ended) the report is
// written as one self-contained HTML page, as JSON, and as a text
// summary. Reading the console's JSON rather than its insides keeps the
// report saying exactly what the console says.
package report
