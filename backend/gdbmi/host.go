package gdbmi

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
)

// A host's ranks can share one gdb: a Host is a gdb in non-stop mode with
// an inferior per rank, and each rank's Backend drives its share of it, a
// view, as it would a gdb of its own (conn). gdb then reads the program
// and every library once for all of them, instead of once per rank.
//
// The view makes the shared gdb look like a rank's own:
//
//   - every command goes to the rank's inferior: with the thread and
//     frame the rank has selected (--thread, --frame), or the inferior
//     itself (--thread-group) while it has no process; settings that are
//     the gdb's (-gdb-set mi-async, …) are the host's, made once, and
//     those that decide what a rank's process does (scheduler-locking,
//     the library settings) are kept by the view and acted on;
//   - threads and breakpoints have the numbers a gdb of the rank's own
//     would give them: gdb numbers them over all inferiors;
//   - a breakpoint is the rank's alone: its condition starts with
//     $_inferior == N (gdb 13 has no inferior-specific breakpoints), which
//     the view leaves out of what it shows;
//   - a process stops and runs as a whole, as in all-stop mode: a thread
//     that stops (a breakpoint, a signal, the end of a step) stops the
//     process's other threads before the stop is told, and while a thread
//     steps, the others run (views.go has the records, stop.go the rest).
//
// Records are routed to the view of their inferior by the host's one
// reader of gdb (route): by thread id, by thread group, and, for the
// end of a process, which gdb tells without either, by the thread group
// gdb said had exited just before.

// Host is one gdb shared by ranks of a host. mu guards the routing
// tables; each view guards its own state.
type Host struct {
	g *GDB
	// gdbEnv is gdb's environment, which a new inferior starts with.
	gdbEnv map[string]string
	// breaks is held while the breakpoints change (hostbreak.go); shared
	// are those the ranks set alike, by how they were set.
	breaks sync.Mutex
	shared map[string]*hostPoint
	// wrapped is held while a rank keeps a breakpoint to its wrapper's
	// location (wrapped.go).
	wrapped sync.Mutex
	// listing is held by a rank's list (hostcli.go).
	listing sync.Mutex
	// wrapper starts programs that need it, leaks says whether gdb holds
	// descriptors a program would inherit, and starts is held while a
	// program starts, with the settings started (hoststart.go).
	wrapper string
	leaks   bool
	starts  sync.Mutex
	started startSettings

	mu      sync.Mutex
	views   map[int]*view      // by inferior number
	threads map[int]*view      // by gdb's thread id
	points  map[int]*hostPoint // by gdb's breakpoint number
	exited  *view              // whose thread group gdb said exited last
	// created are the breakpoints a CLI command made (hostcli.go),
	// until the view that ran it takes them.
	created []created
	ending  map[*view]bool // views with an end to tell (exited)
	made    int            // inferiors made, i1 included
	// loads are the library settings gdb has: those any view wants
	// (settleLoads).
	loads solibVars
	users int // views not closed
}

// hostSettings are the settings of a shared gdb: a Backend's own (launch)
// and non-stop mode, which lets each inferior stop and run on its own.
var hostSettings = []string{
	"-gdb-set non-stop on",
	"-gdb-set mi-async on",
	"-gdb-set confirm off",
	"-gdb-set width 0",
	"-gdb-set height 0",
	"-gdb-set print pretty off",
	"-enable-pretty-printing",
	"-gdb-set debuginfod enabled off",
	"-gdb-set auto-solib-add off",
	"-gdb-set stop-on-solib-events 1",
}

// hostOwned are the settings a view takes as made: the host made them.
var hostOwned = map[string]bool{
	"mi-async": true, "confirm": true, "width": true, "height": true, "print": true,
	"debuginfod": true, "non-stop": true, "index-cache": true,
}

// NewHost sets up g, a gdb no inferior of which has a process yet, to be
// shared (Pool). wrapper, when not empty, starts every program gdb runs
// (gdb's exec-wrapper: a command line that ends with the program's).
func NewHost(g *GDB, wrapper string) (*Host, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	settings := append(slices.Clip(hostSettings), indexCache()...)
	if wrapper != "" {
		settings = append(settings, "-interpreter-exec console "+Quote("set exec-wrapper "+wrapper))
	}
	for _, cmd := range settings {
		if _, _, err := g.Run(ctx, cmd); err != nil {
			g.Kill()
			return nil, fmt.Errorf("gdb did not accept %q: %w", cmd, err)
		}
	}
	h := &Host{g: g, gdbEnv: environOf(g.pid), wrapper: wrapper, leaks: leaks(g.pid), started: startSettings{shell: true, wrapped: wrapper != ""},
		views: map[int]*view{}, threads: map[int]*view{}, points: map[int]*hostPoint{}, shared: map[string]*hostPoint{},
		ending: map[*view]bool{}, loads: solibVars{stop: true}}
	go h.dispatch()
	return h, nil
}

// Share is what a rank brings to a shared gdb: what its program is to
// have of the process that would have started it (the rank's own server),
// and how to start a gdb when the pool needs one.
type Share struct {
	// Env is the environment the rank's program starts with, in place of
	// gdb's own (nil: gdb's).
	Env []string
	// CPUs are the processors the rank's program may run on (nil:
	// gdb's).
	CPUs *unix.CPUSet
	// Start starts a gdb, should the pool need one for this rank (nil:
	// the pool's Start).
	Start func(ctx context.Context) (*GDB, error)
}

// view adds an inferior for a rank and returns the rank's share of the
// gdb.
func (h *Host) view(ctx context.Context, share Share) (conn, error) {
	h.mu.Lock()
	h.made++
	first := h.made == 1
	h.users++
	h.mu.Unlock()
	fail := func(err error) (conn, error) {
		h.release()
		return nil, err
	}
	inf := 1
	if !first {
		r, _, err := h.g.Run(ctx, "-add-inferior")
		if err != nil {
			return fail(err)
		}
		if inf, err = strconv.Atoi(trimGroup(r.Results.S("inferior"))); err != nil {
			return fail(fmt.Errorf("gdb named a new inferior %q", r.Results.S("inferior")))
		}
	}
	v := newView(h, inf)
	v.cpus = share.CPUs
	if share.Env != nil {
		if err := v.environ(ctx, share.Env); err != nil {
			return fail(err)
		}
	}
	h.breaks.Lock()
	defer h.breaks.Unlock()
	if err := h.scope(ctx); err != nil {
		return fail(err)
	}
	h.mu.Lock()
	h.views[inf] = v
	h.mu.Unlock()
	return v, nil
}

// settleLoads gives gdb the library settings some view wants: a load
// stops when one rank's settings stop at loads (the others let it go on:
// stop.go), and gdb reads new libraries by itself while one rank steps.
func (h *Host) settleLoads(ctx context.Context) error {
	h.mu.Lock()
	var want solibVars
	for _, v := range h.views {
		v.mu.Lock()
		want.stop = want.stop || v.solib.stop
		want.auto = want.auto || v.solib.auto
		v.mu.Unlock()
	}
	have := h.loads
	h.loads = want
	h.mu.Unlock()
	if want.stop != have.stop {
		value := "0"
		if want.stop {
			value = "1"
		}
		if _, _, err := h.g.Run(ctx, "-gdb-set stop-on-solib-events "+value); err != nil {
			return err
		}
	}
	if want.auto != have.auto {
		if _, _, err := h.g.Run(ctx, "-gdb-set auto-solib-add "+onOff(want.auto)); err != nil {
			return err
		}
	}
	return nil
}

// release counts a view gone, and ends gdb after the last one.
func (h *Host) release() {
	h.mu.Lock()
	h.users--
	last := h.users == 0
	h.mu.Unlock()
	if last {
		h.g.Close()
	}
}

// Done is closed when the host's gdb has ended.
func (h *Host) Done() <-chan struct{} { return h.g.Done() }

// dispatch routes gdb's records to the views until gdb ends, then ends
// every view.
func (h *Host) dispatch() {
	var handled uint64
	for r := range h.g.Async() {
		h.route(r)
		h.g.Handled()
		handled++
		h.mu.Lock()
		var ending []*view
		for v := range h.ending {
			ending = append(ending, v)
		}
		h.mu.Unlock()
		for _, v := range ending {
			if v.tellEnd(handled) {
				h.mu.Lock()
				delete(h.ending, v)
				h.mu.Unlock()
			}
		}
	}
	h.mu.Lock()
	views := make([]*view, 0, len(h.views))
	for _, v := range h.views {
		views = append(views, v)
	}
	h.mu.Unlock()
	for _, v := range views {
		v.end()
	}
}

// route hands a record to the view of its inferior.
func (h *Host) route(r Record) {
	h.mu.Lock()
	var v *view
	switch {
	case r.Type == Exec && r.Class == "stopped" && isExit(r.Results.S("reason")):
		v = h.exited
	case r.Results.Has("thread-id"):
		id, _ := strconv.Atoi(r.Results.S("thread-id"))
		v = h.threads[id]
	case r.Type == Notify && (r.Class == "thread-created" || r.Class == "thread-exited"):
		v = h.views[group(r.Results.S("group-id"))]
		if id := r.Results.Int("id"); v != nil && r.Class == "thread-created" {
			h.threads[id] = v
		} else {
			delete(h.threads, id)
		}
	case r.Type == Notify && (r.Class == "thread-group-started" || r.Class == "thread-group-exited"):
		v = h.views[group(r.Results.S("id"))]
		if r.Class == "thread-group-exited" {
			h.exited = v
		}
	case r.Type == Notify && (r.Class == "library-loaded" || r.Class == "library-unloaded"):
		v = h.views[group(r.Results.S("thread-group"))]
	case r.Type == Notify && r.Class == "breakpoint-deleted":
		// gdb deleted it (a temporary breakpoint, hit): its ranks
		// forget it.
		if p := h.points[r.Results.Int("id")]; p != nil {
			delete(h.points, p.id)
			for w := range p.views {
				defer w.record(r)
			}
		}
	case r.Type == Notify && r.Class == "thread-selected":
		id, _ := strconv.Atoi(r.Results.S("id"))
		v = h.threads[id]
	case r.Type == Notify && r.Class == "breakpoint-created":
		// A view's -break-insert is told in its answer: this one a CLI
		// command made, whose view takes it.
		if point := r.Results.Get("bkpt"); h.points[point.Int("number")] == nil {
			h.created = append(h.created, created{id: point.Int("number"), cond: point.S("cond"), fortran: fortranAt(point), during: r.During})
		}
	}
	h.mu.Unlock()
	if v != nil {
		v.record(r)
	}
}

// environOf reads a process's environment as it started: this
// process's own when it cannot be read.
func environOf(pid int) map[string]string {
	env, err := procfs.Environ(pid)
	if err != nil {
		env = os.Environ()
	}
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// isExit says whether a stop's reason is the end of the process.
func isExit(reason string) bool {
	return reason == "exited" || reason == "exited-normally" || reason == "exited-signalled"
}

// group is the inferior number of a thread group id ("i3"), 0 if none.
func group(id string) int {
	n, err := strconv.Atoi(trimGroup(id))
	if err != nil {
		return 0
	}
	return n
}

func trimGroup(id string) string {
	if len(id) > 0 && id[0] == 'i' {
		return id[1:]
	}
	return id
}

// Pool hands each of a host's ranks its share of a gdb: the ranks go to
// the pool's gdbs in the order they ask, up to PerGDB each, so that one
// gdb that dies or stops answering takes only its own ranks with it.
type Pool struct {
	// Start starts a gdb for the pool (Start, or a spawn by a rank's
	// server).
	Start  func(ctx context.Context) (*GDB, error)
	PerGDB int
	// Wrapper starts the ranks' programs (NewHost).
	Wrapper string

	mu   sync.Mutex
	cur  *starting
	used int // views given out of cur
}

// starting is a gdb of the pool from the moment a rank needs it: the
// rank that asked first starts it, and the others of its share wait for
// it, while the ranks past it start the next gdb beside it. A host's gdbs
// thus start and take their ranks side by side, not one after another.
type starting struct {
	ready chan struct{} // closed once h or err is set
	h     *Host
	err   error
}

// over tells whether no more views can come from s: its gdb failed to
// start or has ended.
func (s *starting) over() bool {
	select {
	case <-s.ready:
	default:
		return false
	}
	if s.err != nil {
		return true
	}
	select {
	case <-s.h.Done():
		return true
	default:
		return false
	}
}

// view returns a share of one of the pool's gdbs, starting a gdb when the
// last one is full or has ended.
func (p *Pool) view(ctx context.Context, share Share) (conn, error) {
	p.mu.Lock()
	first := p.cur == nil || p.cur.over() || p.used >= max(p.PerGDB, 1)
	if first {
		p.cur, p.used = &starting{ready: make(chan struct{})}, 0
	}
	p.used++
	s := p.cur
	p.mu.Unlock()
	if first {
		start := share.Start
		if start == nil {
			start = p.Start
		}
		s.h, s.err = p.startHost(ctx, start)
		close(s.ready)
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a gdb to start: %w", ctx.Err())
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.h.view(ctx, share)
}

// startHost starts a gdb with start and sets it up to be shared.
func (p *Pool) startHost(ctx context.Context, start func(context.Context) (*GDB, error)) (*Host, error) {
	g, err := start(ctx)
	if err != nil {
		return nil, err
	}
	return NewHost(g, p.Wrapper)
}

// viewTimeout bounds the commands a view runs of its own accord (to stop
// a process's other threads, to let a load go on).
const viewTimeout = 30 * time.Second
