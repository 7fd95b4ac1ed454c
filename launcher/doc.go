// Package launcher is the front end's side of starting a debug job: it
// picks the resource-manager adapter, checks that everything the job needs
// is there before submitting it, makes the session key and the private
// session directory, binds the session port, submits the job, helps the
// launch where the adapter needs it (routing file and master), and waits
// until every rank has joined the tree. What comes out is a
// client.Session ready for commands.
//
// It also owns the sessions built on such jobs: Relaunchable, the job of
// sdm debug or sdm attach that restart starts again; and reverse connect's
// two sides, Listener and Jobs (sdm listen: requests in, sessions of one
// or several jobs out) and HostRequest (sdm connect: an accepted request
// in, the job running here out). Front runs the whole front end of a
// session on such a job, for sdm debug, attach and listen: the job comes
// up, the console (package console) runs its commands, the job ends.
//
// What enters: the job to debug (program, ranks, adapter and its flags, or
// the pids or starter to acquire through MPIR, or an accepted request).
// What leaves: the session, the job's handle to end it, and the progress
// of the launch on the terminal; through Front, the console's output and
// the session's outcome.
//
// # Starting a job
//
// Launch picks the adapter (Choose: --rm, or by default auto), checks
// before submitting anything that the sdm binary, gdb, the launcher and
// the program exist and are executable where the job runs (an error names
// the host and the path), makes the session key and a private 0700
// directory with the key file (0600), binds the session port, submits the
// job, helps the launch where the adapter needs it, and waits until every
// rank has joined ("connected 812/1024" on a terminal). Every process of a
// session carries SDM_SESSION=<dir> in its environment, down to gdb and
// the program: that is how the tests find strays.
//
// # Choosing the adapter
//
// An MPI program's ranks find each other only through their own MPI's
// launcher: under another one (or none), each rank is a job of its own, a
// singleton with a world of one. So auto goes by the environment first
// (SLURM inside an allocation, SLURM_JOB_ID; POE inside a partition,
// MP_PROCS), then by the program: found as the backend will run it (a name
// with a slash is a path from the working directory, a bare name is looked
// up in $PATH), its ELF dynamic section's DT_NEEDED entries (debug/elf's
// ImportedLibraries) name its MPI: libmpi.so.40 and Open MPI's Fortran,
// C++ and Java libraries (libmpi_mpifh, libmpi_usempif08,
// libmpi_usempi_ignore_tkr, libmpi_cxx, …) are Open MPI; libmpich,
// libmpichfort, libmpichcxx, libmpifort are MPICH. libmpi.so.12 is both
// Open MPI 1.10's and the MPICH ABI's: auto refuses it and asks for --rm.
// Anything else (no MPI, a statically linked one, a script, which is not
// followed to the program it runs) is local. Choose says why in a line
// that the front end prints ("sdm: using openmpi (./ring links
// libmpi.so.40)"). With a target host nothing is read there, and auto asks
// for --rm.
//
// An --rm given by the user is checked against the program the same way:
// local, openmpi or mpich with another MPI's program of more than one rank
// is a RefusedError before anything starts (exit status 2), naming the
// library, the reason and the fix, unless --force. srun and poe run either
// MPI's programs; under srun, a program that links an MPI gets the --mpi
// plugin it needs (pmix for Open MPI, pmi2 for MPICH; a cluster whose
// MpiDefault is none leaves Open MPI's ranks failing in MPI_Init and
// MPICH's waiting for ever) unless the launcher arguments name one.
//
// Launchers run by the name found in $PATH (rm.FindProgram), as a user
// types them, or by the path --launcher gives: Open MPI's mpirun takes an
// absolute argv[0] for an implied --prefix (/bin/mpirun.openmpi means
// --prefix /, which fails where /bin is a link to /usr/bin).
//
// # The adapters and their routing tables
//
//   - local: no launcher, sdm starts the processes. The adapter binds
//     every socket, writes the routing and master files, and hands each
//     server its socket (SDM_LISTEN_FD=3); it starts the master too.
//   - openmpi: mpirun -np N; routes_from publish (launch help, below); the
//     front end starts the master once all have published.
//   - mpich: mpiexec -n N (Hydra); likewise.
//   - slurm: srun -n N; routes_from slurm: each server computes the table
//     from SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE and the block
//     distribution, its port --port_base + the task's index on its node;
//     rank 0 writes the file for the master, which the front end starts at
//     once and which waits for the file.
//   - pe: poe … -procs N; routes_from pe: each server computes the table
//     from MP_PROCS, MP_CHILD and the host list (MP_HOSTFILE or
//     host.list), ports likewise; the master likewise.
//
// Launch help (publish): mpirun and mpiexec cannot say where ranks will run
// before they do, and ports chosen for them in advance can be taken by the
// time they bind. So each server binds any free port and publishes its
// entry as a file ROUTING_FILE.d/INDEX (atomically); the front end waits
// for all N entries (inotify on the directory, plus the slow poll), writes
// the routing file, and starts the master; servers that came up early wait
// for the routing file. No fixed sleeps anywhere. If the servers never
// publish, the error at the deadline names the missing ones. On a remote
// target the same help runs there as "sdm routes collect FILE N".
//
// # The job and its end
//
// The job watcher is the launcher process itself: its exit ends a launch
// in progress at once with its own words (the end of its standard error,
// such as mpirun's "not enough slots available"), and in a session the
// front end says so when it ends early. The tree does not depend on the
// launcher: if mpirun is killed, its servers carry on and the session ends
// normally.
//
// Servers answer quit and then wait for their parents to hang up, top
// down, so that no launcher tears the job down before every rank has
// answered (mpiexec kills the whole job once one of its processes ends
// badly, and a killed program counts). When every rank answered, how the
// launcher exits afterwards does not make the session fail.
//
// # Targets and forwarding
//
// --target [user@]host runs the launcher and the master on another host
// with ssh (--ssh gives the command and its options): the checks run
// there in one ssh round trip, the session directory is made there with
// mktemp, and the key is written there from ssh's standard input, never a
// command line. Remote commands get a terminal (ssh -tt), so they end when
// the connection does. --forward [user@]host also has ssh forward a port
// of that host (-R 0:…, the port ssh allocates) to the session port, and
// the master dials 127.0.0.1:PORT there. The forwarded port listens on the
// target's loopback only unless its sshd sets GatewayPorts yes: the master
// must run on that host, which is why the master goes where the forward
// is. Without forwarding, the session port listens on every interface and
// the master dials --client-host (this machine's name by default).
//
// Servers run with one Go processor (GOMAXPROCS=1, set by the local
// launcher and removed again from the environment the debugged program
// inherits): they mostly wait, and with hundreds per node the scheduler's
// idle spinning on a second processor cost more than it brought.
//
// # Acquiring a job through MPIR
//
// sdm debug --mpir starts the launcher's own command ("mpirun -np N
// PROGRAM", not wrapped) and sdm attach --pid PID takes a starter that is
// running; both end in Acquire:
//
//  1. The mpir engine traces the starter and reads the job's table of
//     processes (package mpir says how).
//  2. The table (MPIR_proctable, MPIR_proctable_size) gives host,
//     executable and pid per rank. One server is started on each host and
//     serves all of its ranks (as STAT's daemons do): the tree's node for
//     a host has a backend per rank under one module cache, so a 64-rank
//     node costs one process and reads each library once. On the front
//     end's host the local adapter starts it, on another host the ssh adapter (which
//     needs the session directory on a filesystem both see). The servers'
//     tree is over servers, not ranks: --layout (wire.Layout,
//     "0:0-7;1:8-15") tells each server its ranks, its hello to the parent
//     carries them, and the master's hello carries the job's rank count,
//     so the front end sees ranks as ever. --server-per-rank keeps a
//     server beside every rank (as mpirun sdm and the routing file do,
//     unchanged).
//  3. attach goes down the tree: each server's gdb runs -target-attach
//     PID, sets MPIR_debug_gate = 1 where the rank has one, reads
//     MPIR_dll_name, runs to main when the ranks were held before it, and
//     leaves the rank stopped (launch, attach --stop) or running.
//  4. Only then is the starter released: its breakpoint removed, its
//     pending signals re-delivered, and it is detached. Nothing stays
//     traced.
//
// The rank servers' gdbs are the cost of acquisition (docs/PERFORMANCE.md:
// about 0.45 s of CPU per rank, most of it in -target-attach reading the
// symbols of the libraries an MPI rank has loaded). While attaching, a
// rank's events are held back, so the first thing the front end sees is
// the merged attach reply. detach lets every rank go on as it was;
// MPIR_being_debugged is reset when an attach session ends, and a launched
// job is killed with the session unless it was detached.
//
// # Tables from /proc
//
// For a starter without MPIR, sdm attach --pids and --starter make the
// table from /proc instead (MPIR.Procs, MPIR.Ancestor), and the rest of
// the acquisition is the same, with no starter to hold or release. Each
// process's rank is read from /proc/PID/environ with the rank servers' own
// index variables (routing.IndexEnv: PMI_RANK, OMPI_COMM_WORLD_RANK,
// PMIX_RANK, SLURM_PROCID, …); processes without any are ranks in the
// order given, and a mix, a rank given twice, a pid given twice, a process
// that is gone or a zombie is refused naming the pid. --starter walks the
// starter's descendants (parents from /proc/PID/stat) and takes each first
// process on a path that carries a rank variable, not its children, which
// inherit it; helpers such as hydra_pmi_proxy carry none and are walked
// through, and a variable whose value the starter itself holds was
// inherited, not given. The job's size is the largest of the ranks found
// and the size variables (OMPI_COMM_WORLD_SIZE, PMI_SIZE, MP_PROCS,
// SLURM_NTASKS); ranks not found are left alone, as in a partial attach,
// and the acquisition's note names them. /proc shows this host only;
// srun's tasks are slurmstepd's children, so --starter finds none under
// srun and says to use --pid.
//
// # Starters without MPIR: Open MPI 5
//
// An attach (--pid) whose starter lacks MPIR's symbols
// (mpir.NotStarterError) asks the starter's PMIx server for the table
// (package pmix); from the table on, everything is as after an MPIR
// attach (servers per host, --ranks, stacks, detach), but there is no
// MPIR_being_debugged to clear at the end (Table.Via set).
//
// A launch (--mpir) under a starter that turns out to be PRRTE's (--rm
// openmpi, prterun, a *.openmpi launcher) starts it again with
// --stop-on-exec --output-proctable=FILE in the session directory: PRRTE
// stops each rank with SIGSTOP right after its exec, untraced, and writes
// (rank, host, exe, pid) lines; sdm reads the file until every rank is in
// it (or the starter ends, or the deadline passes), each rank's gdb
// attaches (the SIGSTOP is neither news nor passed on, as under srun) and
// runs it to main (AcquiredPreMain). Nothing holds the starter, so there
// is nothing to release, and every rank is attached (a rank left alone
// would stay stopped). PRRTE writes a space after its output labels
// ("[1,0]<stdout>: text"), which the reader takes off. Why not PMIx's own
// launch-and-hold: package pmix.
//
// # SLURM jobs by id
//
// A batch job's srun runs on the job's first node, where the user is not.
// MPIR.Slurm (sdm attach --slurm JOBID[.STEP]) takes the step through
// SLURM's commands alone (rm/slurm's FindStep, Step.ListTasks): scontrol
// -o show job says whose the job is and whether it runs, squeue -s its
// newest numeric step when none is given, scontrol -o show step its nodes
// and task count; one "srun --overlap --jobid=J -w NODES
// --ntasks-per-node=1 --label" asks every node's slurmd for the step's
// tasks (scontrol listpids J.S: pid and global rank, the node from
// $SLURMD_NODENAME), and every rank must be there once. The servers, one
// per node, start through ssh.Adapter with Remote set to "srun --overlap
// --jobid=J -N1 -n1 -w NODE sh -c SCRIPT", a step of their own beside the
// tasks, on every node (this one too: no host is taken for local), and
// publish their addresses as ssh's do. The session's suggestion to look
// closer (Acquired.Again) says --slurm J.S; restart refuses, as for any
// job sdm did not start.
//
// # The starter's output
//
// A launched starter passes on its ranks' output on its own standard
// output, where sdm would only see lines. So the launch asks a launcher
// that can label each line with its rank (rm.Labeller: mpirun
// --tag-output, "[1,3]<stdout>:text"; srun --label, "3: text", the rank
// padded to the widest) to do so, unless its arguments ask already, and
// reads the labels back (MPIR.Lines). The front end hands a labelled line
// to client.Session.AddOutput, which queues it among the tree's events as
// that rank's output: it prints and merges in the console's display window
// as output that came through the tree does ("[0-3] ring of 4 ranks
// done"), under the session's output bound (package client). Lines without
// a label (the starter's own, a --starter of the user's) print as they
// are; a labelled line that arrives after the session ended prints alone,
// with its rank.
package launcher
