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
package dap
