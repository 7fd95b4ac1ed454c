package wire

// Ops understood by the rank servers' backends, and the types of their
// bodies (B) and answers (A). Answers of different ranks merge when their
// msgpack bytes are equal, so these types hold only what people compare:
// no timestamps, no pids, nothing rank-specific unless it is the point.
const (
	OpStart  = "start"  // B: Start; A: State
	OpStatus = "status" // A: State
	OpWhere  = "where"  // A: Stack, innermost frame first
	OpRun    = "continue"
	OpHalt   = "halt"
	OpKill   = "kill"
	// OpQuit ends the session: every node answers it, sends what events
	// it still holds, and exits. It is handled by the tree, not the backend.
	OpQuit = "quit"
)

// Events sent up the tree. Their bodies merge like answers do.
const (
	EventConnected = "connected" // the ranks' servers joined the tree; no body
	EventLost      = "lost"      // the ranks' servers left the tree; B: text reason
	EventRunning   = "running"   // no body
	EventStopped   = "stopped"   // B: State
	EventExited    = "exited"    // B: State
	EventOutput    = "output"    // B: Output
)

// Start describes the program a rank runs.
type Start struct {
	Program string
	Args    []string
	Env     []string // extra NAME=VALUE pairs on top of the server's environment
	Dir     string
}

// Frame is one level of a call stack.
type Frame struct {
	_msgpack struct{} `msgpack:",as_array"`
	Func     string
	File     string
	Line     int
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
)

// State says what a rank's process is doing.
type State struct {
	State  string
	Reason string // why it stopped or exited: "breakpoint-hit", "signal-received", …
	Frame  Frame  // where it stopped (innermost frame)
	Code   int    // exit code
}

// Output is a piece of the program's standard output or error.
type Output struct {
	Stream string // "stdout" or "stderr"
	Text   string
}
