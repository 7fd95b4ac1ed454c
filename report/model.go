package report

import (
	"encoding/json"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Version is the version of the report's JSON; a later one may add
// fields, which a reader should ignore.
const Version = 1

// Report is what happened to a job that ran unattended. Its JSON is the
// --json file; the HTML page and the text summary say the same.
type Report struct {
	Version  int       `json:"version"`
	Program  []string  `json:"program"`
	Ranks    int       `json:"ranks"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`         // from the run to the report
	Outcome  string    `json:"outcome"`         // ended, crashed, hung, interrupted
	Status   int       `json:"status"`          // sdm report's exit status: the program's
	Error    string    `json:"error,omitempty"` // why a job that did not start did not
	Summary  []string  `json:"summary"`         // the text summary, line by line
	Traces   []*Trace  `json:"tracepoints"`
	Crashes  []*Crash  `json:"crashes"`
	Hangs    []*Shot   `json:"hangs"`
	Shots    []*Shot   `json:"snapshots"`
	Exits    []Exit    `json:"exits"`
	Output   []Tail    `json:"output"`
	Timeline []Entry   `json:"timeline"`
	Dropped  int       `json:"timeline_dropped"` // entries past the timeline's bound
}

// Trace is a tracepoint and what the ranks that passed it held there.
type Trace struct {
	Spec       string   `json:"spec"` // as given to --trace-at
	Location   string   `json:"location"`
	Condition  string   `json:"condition,omitempty"`
	Exprs      []string `json:"exprs"`
	Breakpoint int      `json:"breakpoint"`
	Pending    bool     `json:"pending"`         // its location is in no code loaded yet
	Error      string   `json:"error,omitempty"` // why it could not be set
	Hits       []*Hit   `json:"hits"`
	Dropped    int      `json:"hits_dropped"` // ranks' passes past the bound (maxHits), counted only
	passes     map[int]*passed
}

// Hit is one pass of a set of ranks through a tracepoint: the n-th of
// each of them.
type Hit struct {
	At     float64 `json:"at"` // seconds since the run, when the first of them passed
	Pass   int     `json:"pass"`
	Ranks  string  `json:"ranks"`
	Values []Value `json:"values"`
}

// Value is an expression over the ranks of a hit.
type Value struct {
	Expr string `json:"expr"`
	Text string `json:"text"` // one line a person reads
}

// Crash is a fatal signal that stopped ranks, caught at the fault.
type Crash struct {
	At     float64    `json:"at"`
	Ranks  string     `json:"ranks"`
	Signal string     `json:"signal"`
	Frame  wire.Frame `json:"frame"`
	Stack  []group    `json:"stack"`  // where full of the crashed ranks
	Others *Shot      `json:"others"` // every rank's stacks at that moment
	Then   string     `json:"then"`   // what --on-crash did
}

// Shot is a snapshot of the job: its stacks, and its queues and the
// deadlock diagnosis where they were taken.
type Shot struct {
	At       float64         `json:"at"`
	Why      string          `json:"why"`
	Ranks    string          `json:"ranks"`
	Stacks   json.RawMessage `json:"stacks,omitempty"` // the stacks command's value
	Queues   []group         `json:"queues,omitempty"`
	Deadlock json.RawMessage `json:"deadlock,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Exit is how a set of ranks ended.
type Exit struct {
	Ranks string `json:"ranks"`
	Count int    `json:"count"`
	What  string `json:"what"` // "exited with code 0", "killed by SIGSEGV", "lost: …", "still running"
}

// Tail is the last lines of output of ranks whose last lines agree, or
// differ only in their numbers (Alike): then Lines are those of rank
// Shown, the group's lowest.
type Tail struct {
	Ranks string   `json:"ranks"`
	Lines []string `json:"lines"`
	Shown int      `json:"shown"`
	Alike bool     `json:"numbers_differ"`
}

// Entry is one line of the timeline.
type Entry struct {
	At    float64 `json:"at"`
	Ranks string  `json:"ranks,omitempty"`
	What  string  `json:"what"`
}

// bounds keep a report of a long job readable and its files small.
const (
	maxTimeline = 2000
	maxHits     = 500
	tailLines   = 10
)
