// Package gdbmi debugs a rank's process with a real gdb, driven through
// its machine interface (GDB/MI 3). A gdb runs per rank, or one for up to
// K of a host's ranks (Host, Pool: shared gdbs, below); the program has a
// terminal of its own, whose output becomes output events; gdb's
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
//
// # gdb and its settings
//
// The backend runs "gdb --interpreter=mi3 --nx -q" per rank, started by
// the first start command (so a missing gdb is that command's answer,
// naming the rank, not a dead server); or drives one a member started and
// handed over (NewSpawned). Settings every session gets: mi-async on
// (commands work while the program runs), confirm off, no paging or
// wrapping, debuginfod enabled off (a network lookup per library per rank
// would stall a large job), and auto-solib-add off with
// stop-on-solib-events 1: library loads are the backend's to handle
// (solib.go; the modes are package dlopen's).
//
// # Inside
//
// The package is cut by concern. GDB (gdb.go) is the MI process and
// nothing else: one command at a time with its token, console output and
// result, the asynchronous records in gdb's order on an unbounded
// internal/fifo queue so that gdb is read while the backend runs commands
// of its own, gdb's end; it knows nothing of the program. mi.go is the MI
// parser. inferior (inferior.go) is the rank's program as gdb's records
// and the backend's commands tell it: state, process, what loads do, under
// one lock that is never held while gdb runs a command (a change is read,
// gdb asked, and the answer written back, with a count of gdb's reports
// telling whether gdb said something meanwhile). events.go turns records
// into state and events, process.go watches the process through its pidfd,
// output.go pumps its terminal, solib.go is the dlopen policy, with letGo
// the one path that sets a stopped or held process going (a resume and the
// answer to a reported load alike), and ops.go the typed methods of
// backend.Ops. Goroutines: the worker runs queued commands, the watcher
// handles records, a watch per process, the output pump; settling
// serialises changes of gdb's load settings between the worker and the
// watcher.
//
// Why a lock and not a goroutine that owns the state: every reader needs
// the state before it acts (the watcher, whether a stop is news or a
// command's answer; the worker, whether the process is held before it
// resumes it), and every write follows a gdb answer that another goroutine
// waited for. An owning goroutine would answer each of those reads by a
// request and a reply on channels, which is the same ordering as the lock
// with more code and a goroutine more to stop; the lock is held for field
// reads and writes only, never across a gdb command, and every field of
// the program's state is behind it.
//
// The watcher runs commands: the goroutine that reads gdb's asynchronous
// records also answers some of them with commands (a load to let go on,
// symbols to read before a stop is reported), so gdb's reader never waits
// for it: records queue without bound between them, or gdb's answer to
// such a command could never be read.
//
// # The program
//
// start loads the program (-file-exec-and-symbols), its arguments,
// directory and environment (SDM_RANK, SDM_SIZE and the front end's
// extras, through the CLI's set environment, which keeps a value with
// spaces intact), on a pseudo-terminal of its own (-inferior-tty-set;
// package program): its output never mixes into MI. The backend keeps the
// terminal's slave end open, so reading it never spins on EIO between
// runs. Output becomes output events a line at a time; a line without an
// end goes up once the terminal has been quiet for 100 ms since it last
// gave anything (a terminal left unread for backpressure is not quiet; one
// with output unread, or whose program has a runnable thread, as a writer
// preempted mid-line on a loaded node has, waits up to a second), in
// pieces of 1 MiB if it grows that long, and at once when the program
// stops. Standard output and standard error share the terminal and arrive
// as one stream, tty. At most 256 KiB of a rank's output is in flight in
// its server (backend.Event.Sent gives it back once the node has passed it
// on); beyond that the backend stops reading the terminal and the program
// blocks in write.
//
// start checks the program for debugging symbols (a .debug_info section,
// or else source files gdb knows of, for symbols in a separate file) and
// sends a warning event when it has none, "no debugging symbols in
// ./prog", which merges across ranks.
//
// # Commands
//
// Commands run one at a time in arrival order, as gdb reads them; the
// console output of a CLI command (-interpreter-exec console) is captured
// between the command and its result. status is answered from the events
// (a rank running a step answers running with the step and the frame it
// left, asked of gdb as the step begins: the innermost frame for step and
// next, the selected one for finish), and halt sends SIGINT to the
// program's main thread (tgkill): MPI libraries run progress threads, and
// a stop in one of those would show the library's wait instead of the
// program's position. Both work while gdb is busy.
//
// The ops map to gdb's commands as PTP's command set does:
//
//   - Breakpoints: -break-insert with -t -c -i -p, and where gdb knows no
//     such location yet -f (pending, so a breakpoint in a library loaded
//     later is planted when gdb reads that library's symbols), except for
//     FILE:LINE on a file that is neither in the symbols read nor on disk
//     (as given, in the rank's directory, beside the program or one of its
//     sources: sources.go), which is an error, as is a line the program's
//     own file lacks; -break-delete, -break-enable, -break-disable,
//     -break-condition, -break-after; -break-watch [-r|-a].
//   - break-next N (a restart's numbering): each number below N not used
//     yet goes to a placeholder, -break-insert -d *0, which needs no
//     symbols and is never inserted, deleted again at once.
//   - Running: -exec-run, -exec-continue, -exec-step N, -exec-next N,
//     -exec-finish; kill through the CLI.
//   - Stacks and variables: -stack-list-frames, -stack-select-frame,
//     -stack-info-depth, -stack-list-locals and -stack-list-arguments,
//     each twice (--simple-values gives the types, --all-values
//     aggregates' whole values); globals from -symbol-info-variables
//     --name, narrowed to the data objects of the executable's ELF symbol
//     table (a search of every name would have gdb read all the C
//     library's debug information, seconds per rank), limited to sources
//     found on disk and 64 values.
//   - Expressions: -data-evaluate-expression. MI answers a C++ reference
//     with its address alone: the backend asks its type of whatis, which
//     evaluates nothing, and reads the value at the address, so a method
//     returning a reference runs once; a reference's "@0x…:" before a
//     value, in variables and a finish's return value, is cut off
//     (values.go).
//   - ptype and signals through the CLI; -thread-info, -thread-select;
//     -data-read-memory-bytes, -data-write-memory-bytes; gdb CMD passes a
//     CLI command, or an MI command when it starts with "-".
//
// Under --gdb eager, where, bt and stacks of a rank that runs look at it in
// passing (look): gdb interrupts it, the main thread's stack is read, it
// goes on, and none of it is told.
//
// gdb says why it refused a command only in words, so the backend reads
// them once, where the ^error record arrives, into a *Refusal that is
// ErrNoSymbol or ErrRunning to errors.Is.
//
// # Events
//
// *running becomes running; *stopped becomes stopped (with a finish's
// return-value, a watchpoint's number and old and new values), or exited
// for the exit reasons (the exit code is octal in MI); a program gdb
// killed becomes exited (killed); gdb itself ending becomes an error event
// with gdb's own reason, and every later command is answered with it,
// until start launches a new gdb. *stopped with reason solib-event and
// =library-loaded belong to library loads (package dlopen). An end is
// reported once however many records tell it, and its news goes out before
// status can say it.
//
// What a merge compares: answers and events merge when their bodies are
// byte-identical, and the bodies are built to hold only what people
// compare: a stop is its reason, signal, breakpoint number and frame
// (function, file, line; library for frames without debug information).
// Thread ids, addresses, argument values, hit counts and system thread ids
// are left out, so ranks stopped at the same line merge whatever thread or
// address they stopped in; ranks running a step from the same line merge
// likewise. where is function, file and line per frame; print is the
// value's text (a reference's, the value it refers to, not its address); a
// list of variables merges one variable at a time (op.Vars); breakpoints
// leave out their address and hits.
//
// # Deaths gdb does not see
//
// gdb notices a process's end only while it waits for it: a program killed
// while stopped at a breakpoint (the OOM killer, a user's kill -9) would
// stay "stopped" for good, a continue would leave it "running" for good,
// and its zombie would hold the job. So each process gdb starts or
// attaches to (=thread-group-started) is watched through a pidfd, which
// the kernel makes readable the moment it ends, whoever its parent is. The
// end is read from the zombie's /proc/PID/stat (its exit_code field, the
// wait status) and reported at once as gdb would (exited, killed by
// SIGKILL or an exit code); gdb is made to let go of the zombie (a kill)
// before its next command, so the parent reaps it. Commands that need the
// process (continue, step, next, finish, kill, detach, where, frame,
// locals, args, threads, memory) then answer "rank 3's process (pid 1234)
// was killed by SIGKILL" instead of gdb's words; run starts it again as
// after any end.
//
// Ends that are not news are left alone: a process let go (detach); one
// that ends while a command that may end it runs (kill, run again, gdb
// CMD: that command says what happened; a death during gdb CMD is reported
// after it only if gdb reported no end and started no new process, as
// killed when gdb let go of a process that is dead: gdb kill; a process
// that a SIGKILL sent during gdb CMD is still ending, which a busy kernel
// may take a while over, is waited for, up to 2 s, so that the next status
// says it); and one gdb reaped before /proc was read (gdb reaps only what
// it waits for, and reports it). Records gdb prints about a process
// already reported dead are dropped until a new one starts. Without pidfds
// (kernels before 5.10) every end is gdb's to report.
//
// gdb's own end: gdb ended through gdb -gdb-exit or gdb quit is reported
// (the error event, the state after gdb's end) before that command is
// answered: gdb's own pidfd tells that it ended before its output has been
// read to the end, and the answer waits for the watcher's report. A gdb
// killed from outside ends its output, which the watcher reports at once
// the same way.
//
// # Wrapped MPI routines
//
// A rank whose MPI calls package mpiq's library records has wrappers as
// frames of their own under the MPI calls. A breakpoint on a wrapped MPI
// routine has two locations in each program, the wrapper's and the MPI's,
// and the wrapper's is always reached first: at that hit the backend
// disables the breakpoint's other locations in the rank's program
// (wrapped.go; in a shared gdb those of the rank's inferior, by their
// thread group), so each call stops once, in the wrapper, with the
// program's frame above it. gdb keeps a disabled location disabled when it
// reads the breakpoints again at a library load.
//
// # Shared gdbs
//
// A server that debugs several ranks (a host's first server, with the
// host's ranks handed over, or a server an attach lays a host's ranks out
// on) can have them share gdbs, whether gdb starts at once or at the first
// command that needs one (--gdb lazy: the host's gdbs start then, each
// taking the ranks that need one): --ranks-per-gdb K (or
// $SDM_RANKS_PER_GDB; the default 16, backend.RanksPerGDB; 1 gives each
// rank a gdb of its own) gives each gdb up to K ranks (Pool), in the order
// the ranks first need one, so that a gdb that dies or hangs takes no more
// than its K ranks with it: they get the error event with gdb's end, the
// others go on.
//
// A shared gdb (Host) runs in non-stop mode with an inferior per rank.
// Each rank's Backend is the same as on a gdb of its own; it drives a view
// of the host (the conn interface, which GDB implements too), which
// answers as the rank's own gdb would:
//
//   - Aim. Every command goes to the rank's inferior: with the rank's
//     selected thread and frame (--thread, --frame; the view follows
//     -thread-select, -stack-select-frame and =thread-selected), or
//     --thread-group iN while it has no process, or once the selected
//     thread has died under it (gdb refuses the thread before it runs the
//     command). The program's directory is the inferior's set cwd, not
//     gdb's cd.
//   - Numbers. gdb numbers threads and breakpoints over all its inferiors;
//     the view gives the rank its own (threads 1, 2, … in the order they
//     appeared; breakpoints 1, 2, … in the order it set them) in commands,
//     answers and stops (a breakpoint's and a watchpoint's), and in
//     $bpnum.
//   - Breakpoints. A breakpoint is kept to its ranks by its condition,
//     "$_inferior == N | …" before the rank's own (gdb 13 has no
//     inferior-specific breakpoints; gdb parses a condition in the
//     language of the breakpoint's location, and | with == reads alike in
//     C, C++ and Fortran, the rank's own joined with &&, or .and. where
//     gdb finds a syntax error). One that several ranks set alike (same
//     location and flags, no condition, a location that means the same in
//     every program) is one breakpoint of gdb's: gdb re-reads every
//     breakpoint in every inferior at each library load, so a breakpoint
//     per rank cost 3.5× the time to the first stop. Shared by every rank
//     of the gdb, it has no condition, which gdb would read again at each
//     location at every re-set (a rank added later restores it first).
//     A rank that enables,
//     disables or conditions its share gets a breakpoint of its own first;
//     temporary, counted, conditioned and thread breakpoints and
//     watchpoints are a rank's alone. gdb 13 reads a condition at every
//     location in the selected inferior's program: where the ranks'
//     programs lie at the same addresses, another rank's location would
//     get that program's block, a local variable would not be found in the
//     rank's frame, and the failed evaluation would stop the rank each
//     time. A rank's condition is therefore read with its inferior
//     selected, on a breakpoint of its own, where $_inferior == N is false
//     first at the other ranks' locations.
//   - CLI commands. A rank's CLI command (-interpreter-exec console) acts
//     on gdb as a whole; what gdb prints while it runs is the command's
//     (Record.During, the token of the command in flight). A thread or
//     frame it selects (up, frame, thread) is the rank's, routed before the
//     answer returns, so the rank's next command goes there; a breakpoint
//     or catchpoint it makes (=breakpoint-created) is the rank's alone,
//     numbered and conditioned as its own. gdb keeps where list goes on per
//     inferior, but whether a bare list centres on the frame shown last for
//     gdb as a whole: the view keeps that per rank, showing the frame again
//     (its text dropped) before a list that centres, and listing from the
//     rank's next line (list N,) after that.
//   - All-stop per process. A thread that stops (breakpoint, signal, end
//     of a step) stops the process's other threads (-exec-interrupt
//     --thread-group) before the stop is told; one *running is told when
//     the process goes on; while one thread steps the others are set going
//     one by one, never with the stepping thread, whose step may have
//     ended; an interrupt is told as SIGINT, as all-stop gdb tells it.
//   - Settings. gdb's own settings are the host's, made once. Those that
//     decide what a process does are the rank's: scheduler-locking (a
//     continue then resumes the selected thread only) and the library
//     settings, whose values in gdb are those some rank wants; a load that
//     stops a rank whose settings do not stop at loads is let go at once
//     (its libraries read first when its settings read them). A step of
//     one rank can still be cut short by a load while another rank's
//     settings stop at loads (slow and medium modes during start-up).
//   - What the rank's own server would give. Each rank's program starts
//     with the environment its own server would have given it (a member's
//     is read from /proc/PID/environ, less what servers keep to
//     themselves) and runs on its processors (sched_setaffinity at its
//     start; never for a process attached to). A gdb the pool needs for a
//     member's rank is that member's child, as its own gdb would be. The
//     descriptors a launcher hands a rank's server (MPICH's and SLURM's PMI
//     socket, $PMI_FD) are the server's, not the gdb's: gdb starts such a
//     program through a wrapper (gdb's exec-wrapper: the server's
//     executable with --exec-inherit, package internal/inherit), which
//     copies the descriptors its rank's server holds without close-on-exec
//     (pidfd_getfd, named in $SDM_INHERIT) to their numbers, closes the
//     rest, and executes the program from its main thread (gdb counts the
//     executions of the process it starts). A program whose server hands
//     down none, in a gdb that holds none either, starts without the
//     wrapper, and without the shell too when its arguments are plain
//     words (hoststart.go): both are executions gdb follows, and cost 64
//     ranks a tenth of their CPU to a first stop. gdb itself starts
//     without $PYTHONUNBUFFERED, which has its Python unbuffer gdb's
//     output, a byte per write(2); gdb gives it back to its programs
//     (package member, GDBWithout). A load's stop selects its
//     thread, as all-stop gdb does: gdb 16 missed a breakpoint and failed
//     an assertion when another rank's thread, selected last, ended while
//     the rank read its libraries.
//   - Ends. gdb in non-stop mode waits for every process at once, so it
//     may reap a rank's process before the process watch reads its zombie;
//     the watch then reads the wait status from its pidfd
//     (PIDFD_GET_INFO, Linux 6.15 and later). A process killed while
//     stopped, which gdb reaps without a *stopped, is told as killed by
//     SIGKILL (nothing else ends a stopped process), unless a command of
//     the rank's ended it. gdb may hold such an end until the process is
//     resumed, and may take seconds to look at a process that died
//     running. Where a gdb of the rank's own would be made to let go by a
//     kill, the view has gdb detach from a process that ended stopped, and
//     interrupts a thread of one gdb believes runs, named by its number
//     (gdb refuses a thread that is gone; a continue of a thread group
//     without a process sets going the thread gdb has selected, another
//     rank's). It never resumes a dead process: a resume inserts every
//     inferior's breakpoints, and fails ("Command aborted") while another
//     rank's process lies dead too, as a job's ranks do when it ends.
//   - Kill. gdb's own kill of a process that is ending meanwhile (its
//     starter killing the job) aborts gdb 16 ("lwp_inferior: Assertion
//     inf != nullptr") and can abort gdb 13: a view's kill sends SIGKILL
//     through a pidfd, waits for the process to end, and lets gdb let go
//     of it as above; the end it tells is the kill's. It first stops a
//     process that runs (refusing resumes meanwhile, a tracepoint's
//     included): gdb 13 may never reap a process killed as it let it go
//     on from a breakpoint.
//   - Refused. quit and -gdb-exit end no gdb other ranks share; kill ends
//     the rank's process.
package gdbmi
