package wire

// Level is one frame of a rank's stack as gdb's bt and up show it: its
// number, where it is, and (for a backtrace) its arguments and locals. The
// values are the point here, so ranks merge only where they agree.
type Level struct {
	Level  int    `json:"level"`
	Frame  Frame  `json:"frame"`
	Args   []Var  `json:"args,omitempty"`
	Locals []Var  `json:"locals,omitempty"` // bt full only
	Source string `json:"source,omitempty"` // the text of the frame's line (up, down, frame)
}

// Backtrace asks for a rank's stack as gdb's bt N and bt full do: Limit
// innermost frames (outermost when negative; 0 is all), with each frame's
// locals when Full.
type Backtrace struct {
	Limit int
	Full  bool
}

// Trace is a backtrace: its frames, innermost first, and whether frames
// beyond the limit were left out.
type Trace struct {
	Levels []Level `json:"levels"`
	More   bool    `json:"more"`
}

// Symbols are the program's functions and source files that have debug
// information, which the console completes break and list with.
type Symbols struct {
	Functions []string `json:"functions"`
	Files     []string `json:"files"`
}

// Exprs are expressions evaluated together, in one round trip: the
// console's displays at a stop.
type Exprs struct{ Exprs []string }

// Value is one expression's value, or why it has none in this frame.
type Value struct {
	Value string `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	// Absent: the expression names a symbol that the selected frame does
	// not have, as a display made in another function does; gdb shows a
	// display only inside the block it was made in.
	Absent bool `json:"absent,omitempty"`
}
