package wire

// Ops understood by the rank servers' backends, with the type of their
// body (B) and of their answer (A); package op declares these types, and
// how answers merge, in its table. Answers of different ranks merge when
// their msgpack bytes are equal, so the answer types hold only what people
// compare: no addresses that differ from rank to rank, no thread ids, no
// hit counts, nothing rank-specific unless it is the point.
const (
	OpStart  = "start"  // B: Start; A: State. Loads the program; does not run it.
	OpStatus = "status" // A: State
	OpRun    = "run"    // A: State. Starts the loaded program.
	OpCont   = "continue"
	OpStep   = "step"   // B: Count; A: State
	OpNext   = "next"   // B: Count; A: State
	OpFinish = "finish" // A: State
	OpHalt   = "halt"   // A: State. Interrupts a running process.
	OpKill   = "kill"   // A: State
	// OpAttach has the rank's debugger take over a running process (one
	// of a job acquired through MPIR). B: Attach; A: Attached.
	OpAttach = "attach"
	OpDetach = "detach" // A: State. Lets the process go on, undebugged.

	OpBreak     = "break"     // B: Break; A: Breakpoint
	OpDelete    = "delete"    // B: IDs; A: nothing
	OpEnable    = "enable"    // B: IDs
	OpDisable   = "disable"   // B: IDs
	OpCondition = "condition" // B: Condition
	OpIgnore    = "ignore"    // B: Ignore
	OpWatch     = "watch"     // B: Watch; A: Breakpoint
	OpBreakList = "breakpoints"
	// OpBreakNext makes N the number of the next breakpoint or watchpoint
	// the rank's debugger creates, by using up the numbers below it: a
	// debugger started again numbers from 1, while the user knows the
	// breakpoints by their old numbers. N below the next number is an
	// error. B: Count; A: nothing.
	OpBreakNext = "break-next"

	OpWhere   = "where"   // A: Stack, innermost frame first
	OpFrame   = "frame"   // B: Count (the level); A: Frame
	OpDepth   = "depth"   // A: Count
	OpLocals  = "locals"  // A: []Var
	OpArgs    = "args"    // A: []Var
	OpGlobals = "globals" // A: []Var
	OpPrint   = "print"   // B: Expr; A: Text (the value)
	OpPtype   = "ptype"   // B: Expr; A: Text (the type)
	OpThreads = "threads" // A: []Thread
	OpThread  = "thread"  // B: Count (the thread id); A: Thread
	OpMemRead = "x"       // B: Memory; A: Memory
	OpMemSet  = "poke"    // B: Memory (Hex set); A: nothing
	OpSignals = "signals" // A: Text
	OpHandle  = "handle"  // B: Text ("SIGUSR1 nostop noprint"); A: Text
	OpRaw     = "gdb"     // B: Text (a CLI command, or an MI command starting with -); A: Text

	// OpBacktrace is gdb's bt: numbered frames with their arguments.
	// B: Backtrace; A: Trace.
	OpBacktrace = "backtrace"
	// OpUp selects the frame N levels up (down when N is negative; 0
	// shows the selected one). B: Count; A: Level.
	OpUp        = "up"
	OpList      = "list"          // B: Text (list's argument, as gdb takes it); A: Text (the lines)
	OpEvaluate  = "evaluate"      // B: Exprs; A: []Value, in the order asked
	OpFrameInfo = "info-frame"    // A: Text, gdb's description of the selected frame
	OpRegisters = "registers"     // B: Text (register names; none: all); A: Text
	OpLibraries = "sharedlibrary" // A: Text, gdb's list of the shared libraries
	OpSymbols   = "symbols"       // A: Symbols, the names a command line may complete to
	OpVarObjs   = "varobjs"       // B: VarQuery; A: []VarObj, the variables or members it asks for

	// OpDlopen sets what the rank's debugger does when the program loads
	// a library (package dlopen); an empty body only asks. B: Dlopen; A:
	// Dlopen, the setting as it stands.
	OpDlopen = "dlopen"
	// OpPlant is the front end's answer to EventLoaded: the debugger reads
	// the symbols of the libraries loaded since it last did, which plants
	// the pending breakpoints they hold, and the rank held at the load goes
	// on. A rank that is not held only reads them (if it is stopped). A: State.
	OpPlant = "plant"

	// OpQuit ends the session: every node answers it, sends what events
	// it still holds, and exits. It is handled by the tree, not the backend.
	OpQuit = "quit"
)

// Events sent up the tree. Their bodies merge like answers do.
const (
	EventConnected = "connected" // the ranks' servers joined the tree; no body
	EventLost      = "lost"      // the ranks' servers left the tree; B: text reason
	EventRejoined  = "rejoined"  // the ranks' servers, lost, are back in the tree; B: text, who reconnected
	EventRunning   = "running"   // no body
	EventStopped   = "stopped"   // B: State
	EventExited    = "exited"    // B: State
	EventOutput    = "output"    // B: Output
	EventError     = "error"     // B: text: the rank's debugger failed
	// EventLoaded: the ranks stopped at a library load that their dlopen
	// setting reports, and wait for the front end's OpPlant. B: Loaded.
	EventLoaded  = "library-loaded"
	EventWarning = "warning" // B: text: something the user should know, such as a setting that leaves out CUDA
	EventTraced  = "traced"  // B: Traced: the ranks passed a tracepoint, which did not stop them
	// EventOutputMark travels on the output stream, never on the control
	// stream: it follows the output the ranks wrote before their latest
	// stop or exit, so that the front end can print that news after it
	// however far the output lags behind. No body.
	EventOutputMark = "output-mark"
	// EventOutputEnd travels on the output stream too: a server sends it
	// after the output queued before its answer to quit has gone up, and
	// its parent counts that answer only once it has read it, so that
	// output still in the stream is passed on before the session ends.
	// No groups.
	EventOutputEnd = "output-end"
)

// Attach names the processes of a job to debug: rank r takes Pids[r], or
// none when it is 0 (a rank left out of a partial attach).
type Attach struct {
	Pids []int
	// PreMain: the processes were acquired before main
	// (MPIR_acquired_pre_main), so run them to main for the user.
	PreMain bool
	// Stop leaves them stopped; otherwise each goes on as it was.
	Stop bool
	// Kill ends the processes with the session, as for a job the debugger
	// launched; otherwise the session's end lets them go on.
	Kill bool
}

// Attached is a rank's answer to attach.
type Attached struct {
	State State
	// DLL is MPIR_dll_name in the process, where it has one: the library
	// that shows a debugger its message queues.
	DLL string
}

// Start describes the program a rank runs.
type Start struct {
	Program string
	Args    []string
	Env     []string // extra NAME=VALUE pairs on top of the server's environment
	Dir     string
	// Queues is the MPI the program links ("openmpi", "mpich"), whose
	// interposition library the server preloads into it to keep its MPI
	// operations in flight (OpQueues); "" for none.
	Queues string
}

// Frame is one level of a call stack. Addresses and argument values are
// left out on purpose: they differ between ranks that stand at the same
// line, and would keep their answers from merging.
type Frame struct {
	_msgpack struct{} `msgpack:",as_array" json:"-"`
	Func     string   `json:"func"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
	From     string   `json:"from"` // the library, for a frame without debug information
}

// Stack is a call stack, innermost frame first.
type Stack struct {
	Frames []Frame
}

// Process states reported in State.State.
const (
	StateNotStarted = "not started"
	StateRunning    = "running"
	StateStopped    = "stopped"
	StateExited     = "exited"
	StateDetached   = "detached"
	StateNone       = "not attached" // a rank left out of an attach
)

// State says what a rank's process is doing. A stop event carries the
// reason, the signal, the breakpoint and the frame; two ranks whose stops
// agree on these merge, whatever their thread ids and addresses. A rank
// running a step (OpStep, OpNext, OpFinish) has that op as its Reason and
// the frame the step left as its Frame, so that ranks stepping from the
// same line merge, and a step that does not come back can say where it
// began.
type State struct {
	State      string
	Reason     string // "breakpoint-hit", "signal-received", "end-stepping-range", "exited", …; running: the step
	Frame      Frame  // where it stopped (innermost frame); running: where the step began
	Signal     string // the signal received, or the one that ended the process
	Breakpoint int    // the breakpoint hit
	Code       int    // exit code
	// Value is what the function a finish left returned, as gdb prints it
	// (a reference as the value it refers to); none for a void function.
	Value string `msgpack:",omitempty"`
	// Old and New are the watched expression's values around the write
	// that stopped a watchpoint (a read watchpoint has New only).
	Old string `msgpack:",omitempty"`
	New string `msgpack:",omitempty"`
}

// ReasonLoad is the Reason of a rank held at a library load until the
// front end answers (OpPlant). Its State is running: it goes on without
// the user doing anything, so a wait goes on waiting for it.
const ReasonLoad = "library-loaded"

// Output is a piece of the program's output. The program writes to a
// terminal of its own, so standard output and standard error arrive as
// one stream ("tty").
type Output struct {
	Stream string
	Text   string
}

// Count is the body of ops that take one number: a repeat count, a frame
// level, a thread id.
type Count struct{ N int }

// IDs are breakpoint numbers.
type IDs struct{ IDs []int }

// Expr is an expression in the program's language.
type Expr struct{ Expr string }

// Text is free text: a value, a type, a command's output.
type Text struct{ Text string }

// Break asks for a breakpoint. Breakpoints are always allowed to be
// pending, so that one in a library loaded later is planted when it loads.
type Break struct {
	Location  string // function, file:line, *address
	Condition string
	Temporary bool
	Ignore    int
	Thread    int
	// Tracepoint makes it a breakpoint that never stops the rank for
	// longer than its debugger takes to evaluate Trace, the expressions
	// logged at each pass: it tells them (EventTraced) and lets the rank
	// go on, without a stop told to anyone.
	Tracepoint bool
	Trace      []string
}

// Traced is what a rank held at its Pass-th pass (from 1) through the
// tracepoint Breakpoint: the value of each of its expressions, Exprs, or
// the error within <error: …>.
type Traced struct {
	Breakpoint int      `json:"breakpoint"`
	Pass       int      `json:"pass"`
	Exprs      []string `json:"exprs"`
	Values     []string `json:"values"`
}

// Watch asks for a watchpoint on Expr; Mode is "write", "read" or "access".
type Watch struct {
	Expr string
	Mode string
}

// Condition sets (or, when Expr is empty, clears) a breakpoint's condition.
type Condition struct {
	ID   int
	Expr string
}

// Ignore makes a breakpoint ignore its next Count hits.
type Ignore struct {
	ID    int
	Count int
}

// Breakpoint describes a breakpoint or watchpoint as it stands.
type Breakpoint struct {
	Number    int    `json:"number"`
	Type      string `json:"type"`     // breakpoint, tracepoint, watchpoint, read watchpoint, acc watchpoint
	Location  string `json:"location"` // file:line, or the pending location, or the watched expression
	Func      string `json:"func"`
	Enabled   bool   `json:"enabled"`
	Pending   bool   `json:"pending"`
	Temporary bool   `json:"temporary"`
	Condition string `json:"condition"`
	Ignore    int    `json:"ignore"`
	// Original is the location as it was asked for (a function name, say),
	// which is how the breakpoint is made again in a new debugger.
	Original string `json:"original"`
	// Trace holds a tracepoint's expressions (Break.Trace).
	Trace []string `json:"trace,omitempty"`
}

// Var is a variable and its value: an aggregate's whole value, a
// reference's the value it refers to.
type Var struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
	// Index is the variable's place in its frame's list, in gdb's order,
	// which keeps that order when ranks' variables merge one by one.
	Index int `json:"index"`
}

// Thread is one thread of a rank's process. The system's thread id is left
// out so that threads doing the same thing on different ranks merge.
type Thread struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	State   string `json:"state"`
	Frame   Frame  `json:"frame"`
	Current bool   `json:"current"`
}

// Memory is a block of the process's memory: Addr is an expression giving
// the start, Count the bytes to read; in answers and writes, Hex holds
// the contents.
type Memory struct {
	Addr  string `json:"addr"`
	Count int    `json:"count"`
	Hex   string `json:"hex"`
}
