package op

import "github.com/sdm-hpc/sdm/wire"

// The ops, by the names package wire gives them (wire/ops.go says what
// each does). Answers of different ranks merge when their bytes are
// equal, so the answer types hold only what people compare; lists of
// variables merge one variable at a time (Vars).
var (
	Start    = Def[wire.Start, wire.State]{Name: wire.OpStart}
	Status   = Def[None, wire.State]{Name: wire.OpStatus}
	Run      = Def[None, wire.State]{Name: wire.OpRun}
	Continue = Def[None, wire.State]{Name: wire.OpCont}
	Step     = Def[wire.Count, wire.State]{Name: wire.OpStep}
	Next     = Def[wire.Count, wire.State]{Name: wire.OpNext}
	Finish   = Def[None, wire.State]{Name: wire.OpFinish}
	Halt     = Def[None, wire.State]{Name: wire.OpHalt}
	Kill     = Def[None, wire.State]{Name: wire.OpKill}
	Attach   = Def[wire.Attach, wire.Attached]{Name: wire.OpAttach}
	Detach   = Def[None, wire.State]{Name: wire.OpDetach}

	Break       = Def[wire.Break, wire.Breakpoint]{Name: wire.OpBreak}
	Delete      = Def[wire.IDs, None]{Name: wire.OpDelete}
	Enable      = Def[wire.IDs, None]{Name: wire.OpEnable}
	Disable     = Def[wire.IDs, None]{Name: wire.OpDisable}
	Condition   = Def[wire.Condition, None]{Name: wire.OpCondition}
	Ignore      = Def[wire.Ignore, None]{Name: wire.OpIgnore}
	Watch       = Def[wire.Watch, wire.Breakpoint]{Name: wire.OpWatch}
	Breakpoints = Def[None, []wire.Breakpoint]{Name: wire.OpBreakList}
	BreakNext   = Def[wire.Count, None]{Name: wire.OpBreakNext}

	Where   = Def[None, wire.Stack]{Name: wire.OpWhere}
	Frame   = Def[wire.Count, wire.Frame]{Name: wire.OpFrame}
	Depth   = Def[None, wire.Count]{Name: wire.OpDepth}
	Locals  = Def[None, []wire.Var]{Name: wire.OpLocals, Merge: varsMerger}
	Args    = Def[None, []wire.Var]{Name: wire.OpArgs, Merge: varsMerger}
	Globals = Def[None, []wire.Var]{Name: wire.OpGlobals, Merge: varsMerger}
	Print   = Def[wire.Expr, wire.Text]{Name: wire.OpPrint}
	Ptype   = Def[wire.Expr, wire.Text]{Name: wire.OpPtype}
	Threads = Def[None, []wire.Thread]{Name: wire.OpThreads}
	Thread  = Def[wire.Count, wire.Thread]{Name: wire.OpThread}
	MemRead = Def[wire.Memory, wire.Memory]{Name: wire.OpMemRead}
	MemSet  = Def[wire.Memory, None]{Name: wire.OpMemSet}
	Signals = Def[None, wire.Text]{Name: wire.OpSignals}
	Handle  = Def[wire.Text, wire.Text]{Name: wire.OpHandle}
	Raw     = Def[wire.Text, wire.Text]{Name: wire.OpRaw}
	Sample  = Def[wire.Sample, wire.CallTree]{Name: wire.OpSample, Merge: func() Merger { return &CallTrees{} }}
	Queues  = Def[None, wire.Queues]{Name: wire.OpQueues, Merge: func() Merger { return &QueueClasses{} }}

	Backtrace = Def[wire.Backtrace, wire.Trace]{Name: wire.OpBacktrace}
	Up        = Def[wire.Count, wire.Level]{Name: wire.OpUp}
	List      = Def[wire.Text, wire.Text]{Name: wire.OpList}
	Evaluate  = Def[wire.Exprs, []wire.Value]{Name: wire.OpEvaluate}
	Compare   = Def[wire.Compare, wire.Summary]{Name: wire.OpCompare, Merge: func() Merger { return &Summaries{} }}
	FrameInfo = Def[None, wire.Text]{Name: wire.OpFrameInfo}
	Registers = Def[wire.Text, wire.Text]{Name: wire.OpRegisters}
	Libraries = Def[None, wire.Text]{Name: wire.OpLibraries}
	Symbols   = Def[None, wire.Symbols]{Name: wire.OpSymbols}
	VarObjs   = Def[wire.VarQuery, []wire.VarObj]{Name: wire.OpVarObjs}

	Dlopen = Def[wire.Dlopen, wire.Dlopen]{Name: wire.OpDlopen}
	Plant  = Def[None, wire.State]{Name: wire.OpPlant}

	Quit = Def[None, None]{Name: wire.OpQuit, Tree: true}
)

// varsMerger merges lists of variables one variable at a time (Vars).
func varsMerger() Merger { return &Vars{} }

// Table lists every op.
var Table = []Spec{
	Start.Spec(), Status.Spec(), Run.Spec(), Continue.Spec(), Step.Spec(), Next.Spec(), Finish.Spec(),
	Halt.Spec(), Kill.Spec(), Attach.Spec(), Detach.Spec(),
	Break.Spec(), Delete.Spec(), Enable.Spec(), Disable.Spec(), Condition.Spec(), Ignore.Spec(),
	Watch.Spec(), Breakpoints.Spec(), BreakNext.Spec(),
	Where.Spec(), Frame.Spec(), Depth.Spec(), Locals.Spec(), Args.Spec(), Globals.Spec(),
	Print.Spec(), Ptype.Spec(), Threads.Spec(), Thread.Spec(), MemRead.Spec(), MemSet.Spec(),
	Signals.Spec(), Handle.Spec(), Raw.Spec(), Sample.Spec(), Queues.Spec(),
	Backtrace.Spec(), Up.Spec(), List.Spec(), Evaluate.Spec(), Compare.Spec(), FrameInfo.Spec(), Registers.Spec(), Libraries.Spec(),
	Symbols.Spec(), VarObjs.Spec(),
	Dlopen.Spec(), Plant.Spec(),
	Quit.Spec(),
}

// The events, by the names package wire gives them (wire/ops.go says when
// each is sent). Connected, Lost and Rejoined are the tree's own news of
// its servers; OutputMark travels on the output stream after the output
// a rank wrote before a stop or an exit, OutputEnd after a server's last
// output; the others come from a backend.
// Like answers, they merge when their bytes are equal.
var (
	Connected  = Event[None]{Name: wire.EventConnected}
	Lost       = Event[Reason]{Name: wire.EventLost}
	Rejoined   = Event[Reason]{Name: wire.EventRejoined}
	Running    = Event[None]{Name: wire.EventRunning}
	Stopped    = Event[wire.State]{Name: wire.EventStopped}
	Exited     = Event[wire.State]{Name: wire.EventExited}
	Output     = Event[wire.Output]{Name: wire.EventOutput}
	OutputMark = Event[None]{Name: wire.EventOutputMark}
	OutputEnd  = Event[None]{Name: wire.EventOutputEnd}
	Error      = Event[Reason]{Name: wire.EventError}
	Loaded     = Event[wire.Loaded]{Name: wire.EventLoaded}
	Warning    = Event[Reason]{Name: wire.EventWarning}
	Traced     = Event[wire.Traced]{Name: wire.EventTraced}
)

// Events lists every event.
var Events = []EventSpec{
	Connected.Spec(), Lost.Spec(), Rejoined.Spec(), Running.Spec(), Stopped.Spec(), Exited.Spec(),
	Output.Spec(), OutputMark.Spec(), OutputEnd.Spec(), Error.Spec(), Loaded.Spec(), Warning.Spec(),
	Traced.Spec(),
}
