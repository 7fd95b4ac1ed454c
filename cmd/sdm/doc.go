// Command sdm is the scalable debug manager: one binary for the debug
// servers that run beside every rank (started by mpirun, srun, poe or the
// built-in local launcher), the master at the root of their tree, and the
// front end that people type at.
//
//	sdm debug -n 8 --debugger sim -- ring       # a whole session on this machine
//	sdm --routing_file F [--server=ID]          # a rank server, as PTP's sdm
//	sdm --master --host H --port P --routing_file F
//	sdm routes check F | sdm routes tree -n N   # routing-file tools
//
// What enters: the command line and the environment. What leaves: the
// exit status, the console's output, and the processes it starts: a rank
// server's or the master's node, or a front end's job and session; the
// packages below do the work, this one only parses flags and wires them.
package main
