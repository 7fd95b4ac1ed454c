// Package stackwalk takes native stack snapshots of processes without a
// debugger: every thread is stopped with ptrace for the time it takes to
// read its registers and walk its stack with the DWARF call frame
// information of the code it runs, then let go exactly as it was; the
// frames are named afterwards from ELF symbols, separate debug files and
// DWARF line tables, inlined calls included. It answers "where is each
// thread of this process" in a fraction of a millisecond of the process's
// time, for hang triage over many ranks. A leaf package: stdlib,
// x/sys/unix and a C++ demangler; nothing of sdm's enters it.
//
// What enters: a process id (and a context bounding the wait for its
// threads to stop). What leaves: a Snapshot: per thread (by thread id,
// with its name), the frames innermost first, each with its pc (the return
// address for callers, as eu-stack and gdb show), function, file, line,
// module and whether it is an inlined call; and how long the process was
// stopped. Or an error: ErrGone (exited before or while sampled, a
// zombie), *PermissionError (its reason from /proc: another tracer such as
// the rank's gdb, Yama's ptrace_scope, another user), *ArchError ("stack
// sampling needs amd64; this is arm64"), a kernel thread. Modules are kept
// by the Sampler for every process it samples (Sampler.Prepare reads a
// program's ahead). amd64 only.
//
// # One sample
//
// In the order it happens (the process's state in brackets):
//
//  1. Read /proc/PID/maps; a module per executable mapping, once per
//     Sampler (device+inode; the vdso by a hash of its image, read from
//     the process); the program's ELF headers, to refuse another
//     architecture (maps.go, module.go) [running].
//  2. PTRACE_SEIZE + PTRACE_INTERRUPT every thread of /proc/PID/task,
//     again until a scan finds no new one; wait4(__WALL) polled under a
//     deadline; PTRACE_GETREGS (a process held by package hold is stopped
//     by its tracer, which hands the registers to a Walker; ReadRegisters)
//     (ptrace.go, regs_amd64.go) [stopped].
//  3. Walk each stack: frame 0 at the pc, callers at return address − 1
//     (the pc itself after a signal trampoline, whose CIE has 'S'); a
//     module's ELF headers read (mapped) when the walk first meets it, its
//     FDE found through .eh_frame_hdr's table and parsed alone
//     (.debug_frame parsed whole, on a miss); CFA and register rules with
//     DWARF expressions (cfirow.go, expr.go); memory by process_vm_readv,
//     /proc/PID/mem where it fails (the vdso) (unwind.go, ehframe.go,
//     cfi.go, memory.go) [stopped].
//  4. PTRACE_DETACH, with the signal a stop consumed (a
//     signal-delivery-stop before the interrupt) so that none is lost; a
//     SIGSTOPped process returns to its group stop (ptrace.go) [as it
//     was].
//  5. Name the frames: symbol (one alias per address: global over weak
//     over local, then fewer leading underscores, shorter, byte order; the
//     table sorted once per host, cache.go), DWARF line (SeekPC, a scan of
//     the unit's rows when it misses) and inlined calls, each unit read on
//     first use and every answer cached per pc (symbols.go, lines.go,
//     units.go, cache.go, sampler.go) [running].
//
// # Decisions
//
//   - All ptrace calls of one sample come from one goroutine locked to its
//     OS thread: the kernel's tracer is a thread.
//   - SEIZE + INTERRUPT, not ATTACH: no SIGSTOP is sent, so none can be
//     left behind or confused with the program's own; a stopped process
//     can be seized and stays stopped.
//   - Frame pointers only as a checked fallback: for a function without
//     CFI whose first instructions are the frame pointer prologue and whose
//     pc is past them. Otherwise the stack ends with a frame ?? (pc 0): no
//     frame is invented.
//   - A module is read as far as stacks need it: an MPI rank maps seventy
//     objects, and its stacks pass through a few. Its headers are read
//     when a walk first meets it, while the process is stopped (a fraction
//     of a millisecond, on a process's first sample), its FDEs one at a
//     time.
//   - DWARF is read after the process is let go, and only the units a pc
//     falls in; the stop covers registers and the CFI walk only. Where
//     .debug_aranges says which unit holds a pc and no unit refers into
//     another (no DW_FORM_ref_addr, no dwz alternate file), a unit is read
//     on its own, a dwarf.Data of its own (units.go); other modules are
//     read whole. A section's bytes are the mapped file's, or, compressed,
//     the host cache's inflated copy.
//   - A thread that is exiting refuses the seize with EPERM, as a
//     forbidden process does; it is left out of the snapshot, not an
//     error.
//   - Tests compare the return-address lists with eu-stack -p for every
//     thread: C -O0/-O2, C++, a thread in a signal handler, the vdso, a
//     stripped program, CFI only in .debug_frame, Open MPI and MPICH
//     ranks.
//
// # The host's cache
//
// What costs most is made once per host (cache.go): a module's sorted
// symbol table, its compile units' ranges, and its compressed DWARF
// sections inflated (libc's debug file: 100 ms of inflating), by build-id,
// under $XDG_CACHE_HOME/sdm/modules (0700, the user's alone; else not
// used). The first server that needs an entry makes it under a lock of its
// own (flock, with a deadline; the others block on it and wake when it is
// let go), every server maps it: the page cache's pages, shared. A rank's
// server samples its rank itself, being its tracer (package hold), so the
// host shares what the servers read, not the sampling. An entry's symbols
// are named by the sizes of the tables they come from (a stripped object
// of the same build-id, or one whose debug file was installed since, gets
// its own); a damaged entry is made again; entries unused for 30 days go
// when a new one is made. A module's DWARF sections are inflated side by
// side (ahead: each by whichever server or thread finds it unmade and
// unlocked) rather than one after another as lookups reach them.
//
// A lazy server prepares the job's program (prepare.go, Sampler.Prepare):
// the host's first server to claim it (a marker per program, a day at
// most; the others spend nothing) finds the libraries as the dynamic
// loader would (run paths with $ORIGIN, LD_LIBRARY_PATH, ld.so.conf, the
// system's) and makes their entries while the job starts, when nobody
// waits for them. sdm names the program to lazy servers (--prepare,
// launcher.jobSpec), so that this begins with each server's start, before
// the tree is up.
package stackwalk

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
)

// Frame is one frame of a thread's stack.
type Frame struct {
	// PC is the frame's pc: for the innermost frame and a frame a signal
	// interrupted, where it stands; for a caller, the return address (as
	// eu-stack and gdb show). Frames of inlined calls share their pc.
	PC uint64
	// Function is the function's name (C++ demangled), or "??" when
	// neither symbols nor DWARF name it. The last frame of a stack that
	// could not be walked further (no call frame information for its
	// caller) is a frame of its own with Function "??" and PC 0.
	Function string
	File     string // source file, "" without DWARF
	Line     int
	Module   string // path of the mapped object, "[vdso]", or ""
	// Inlined marks a frame that is an inlined call inside the frame
	// after it.
	Inlined bool
}

// Thread is one thread's stack, innermost frame first.
type Thread struct {
	TID    int
	Name   string // /proc/PID/task/TID/comm
	Frames []Frame
}

// Snapshot is the stacks of a process's threads at one instant.
type Snapshot struct {
	PID     int
	Threads []Thread // by thread id
	// Stopped is how long the process was held: from the first thread's
	// stop to the last thread's release.
	Stopped time.Duration
}

// Sampler takes snapshots. It keeps every module it has read (by
// device+inode; the vdso by its contents) for all the processes it
// samples; one Sampler serves many goroutines.
type Sampler struct {
	mu       sync.Mutex
	modules  map[string]*module
	cache    *hostCache
	prepared map[string]bool // programs Prepare read ahead
}

// NewSampler returns a sampler with an empty module cache, which shares
// what it reads of modules with the host's other samplers through the
// user's cache directory (sdm/modules in it).
func NewSampler() *Sampler {
	return newSampler(defaultCacheDir())
}

// newSampler returns a sampler whose host cache is in dir ("": none).
func newSampler(dir string) *Sampler {
	return &Sampler{modules: map[string]*module{}, cache: newHostCache(dir)}
}

// Sample stops every thread of process pid, walks its stacks, lets it go
// and names the frames. A running process keeps running, a stopped one
// stays stopped, and a signal that arrives meanwhile is delivered. A
// process this one traces already (package hold's) is sampled with a
// Walker instead: a process has one tracer.
func (s *Sampler) Sample(ctx context.Context, pid int) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{PID: pid}, fmt.Errorf("process %d: not sampled: %w", pid, err)
	}
	w, err := s.Walker(pid)
	if err != nil {
		return Snapshot{PID: pid}, err
	}
	defer w.Close()
	var stopErr error
	var jobStopped bool
	var stopped time.Duration
	done := make(chan struct{})
	// Every ptrace call on the process comes from this goroutine's thread:
	// a tracer is a thread, and Go would otherwise move the goroutine.
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// A thread still traced when this goroutine ends (it never reached
		// its stop, so it cannot be detached) is let go by the kernel when
		// the tracing thread exits: a goroutine that ends locked ends its
		// thread.
		stuck := false
		defer func() {
			if !stuck {
				runtime.UnlockOSThread()
			}
		}()
		begin := time.Now()
		// A process stopped by a signal (job control) stays stopped: a
		// detach that races with its group-stop can let it run, and it is
		// then stopped again.
		jobStopped = strings.HasPrefix(procfs.StatusField(pid, "State"), "T")
		threads, stuckNow, err := stopThreads(ctx, pid)
		if err != nil {
			stuck, stopErr = stuckNow, err
			return
		}
		for _, th := range threads {
			w.Walk(th.tid, th.regs)
		}
		stuck = !detachAll(threads)
		if jobStopped && !strings.HasPrefix(procfs.StatusField(pid, "State"), "T") {
			unix.Kill(pid, unix.SIGSTOP)
		}
		stopped = time.Since(begin)
	}()
	<-done
	if jobStopped {
		stoppedAgain(ctx, pid)
	}
	if stopErr != nil {
		return Snapshot{PID: pid}, stopErr
	}
	snap := w.Snapshot()
	snap.Stopped = stopped
	return snap, nil
}

// Walker walks the stacks of one process whose threads its caller holds
// stopped, as their tracer: it reads the process's mappings and modules
// when made, before anything stops; Walk runs while a thread is stopped,
// Snapshot names the frames once they run again.
type Walker struct {
	s      *Sampler
	pid    int
	mem    *procMem
	sp     space
	stacks []walked
}

type walked struct {
	tid    int
	frames []rawFrame
}

// Walker returns a walker of process pid's threads.
func (s *Sampler) Walker(pid int) (*Walker, error) {
	if err := checkArch(); err != nil {
		return nil, err
	}
	mem := &procMem{pid: pid}
	sp, err := s.space(pid, mem)
	if err != nil {
		mem.close()
		return nil, err
	}
	return &Walker{s: s, pid: pid, mem: mem, sp: sp}, nil
}

// Walk walks the stack of thread tid, stopped, from its registers.
func (w *Walker) Walk(tid int, regs Registers) {
	fr := walk(regs.r, w.sp, w.mem)
	if unmapped(fr) {
		// Code mapped since the maps were read (a dlopen): read them
		// again, this once while the process waits.
		if sp, err := w.s.space(w.pid, w.mem); err == nil {
			w.sp = sp
			fr = walk(regs.r, sp, w.mem)
		}
	}
	w.stacks = append(w.stacks, walked{tid, fr})
}

// Snapshot names the frames of every thread walked, by thread id.
func (w *Walker) Snapshot() Snapshot {
	snap := Snapshot{PID: w.pid}
	sort.Slice(w.stacks, func(i, j int) bool { return w.stacks[i].tid < w.stacks[j].tid })
	for _, st := range w.stacks {
		snap.Threads = append(snap.Threads, Thread{TID: st.tid, Name: threadName(w.pid, st.tid), Frames: symbolize(st.frames)})
	}
	return snap
}

// Close lets go of the process's memory.
func (w *Walker) Close() { w.mem.close() }

// stoppedAgain waits, for at most a second, until a process that was in
// a job-control stop before a sample is in it again. A detach wakes every
// thread, which goes back into the stop only once the scheduler runs it:
// on a busy node that takes milliseconds, during which the process looks
// running to whoever asks, and a sample must leave it as it found it.
func stoppedAgain(ctx context.Context, pid int) {
	deadline := time.Now().Add(time.Second)
	pause := 50 * time.Microsecond
	for ctx.Err() == nil && time.Now().Before(deadline) {
		st := procfs.StatusField(pid, "State")
		if st == "" || strings.HasPrefix(st, "T") || strings.HasPrefix(st, "Z") {
			return // stopped again, or gone
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

// unmapped reports a walk that met a pc outside every known mapping.
func unmapped(fr []rawFrame) bool {
	for _, f := range fr {
		if !f.unknown && f.seg == nil {
			return true
		}
	}
	return false
}

// space reads the process's executable mappings. Their modules are
// read when a walk first meets them (segment.resolve); only the
// program's headers are read here, to refuse a process of another
// architecture at once.
func (s *Sampler) space(pid int, mem *procMem) (space, error) {
	maps, err := readMaps(pid)
	if err != nil {
		return nil, err
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	var sp space
	for _, m := range maps {
		if !m.executable() || m.path == "[vsyscall]" {
			continue
		}
		var mod *module
		switch {
		case m.path == "[vdso]":
			mod = s.vdso(m, mem)
		case m.inode != 0 && strings.HasPrefix(m.path, "/"):
			mod = s.file(pid, m)
		default:
			continue // anonymous code (a JIT): its frames are "??"
		}
		if mod == nil {
			continue
		}
		if m.path == exe && !mod.header() {
			if ae, ok := mod.err.(*ArchError); ok {
				// Code of another architecture: a process this sampler
				// cannot walk (a 32-bit program, an emulated one).
				return nil, &ArchError{Arch: ae.Arch + " (process " + strconv.Itoa(pid) + ", " + m.path + ")"}
			}
		}
		sp = append(sp, segment{mapping: m, mod: mod, path: m.path})
	}
	return sp, nil
}

// file returns the module of a file mapping, one per device+inode.
func (s *Sampler) file(pid int, m mapping) *module {
	return s.cached(fileKey(m.dev, m.inode), m.path, func() ([]byte, func(), error) {
		path := strings.TrimSuffix(m.path, " (deleted)")
		for _, p := range []string{path, fmt.Sprintf("/proc/%d/root%s", pid, path),
			fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.start, m.end)} {
			if data, release, err := mapFile(p); err == nil {
				return data, release, nil
			}
		}
		return nil, nil, fmt.Errorf("%s: cannot open it (nor through /proc/%d)", m.path, pid)
	})
}

// fileKey names a file's module by device and inode, the device as
// /proc/PID/maps writes it (major:minor, in hex).
func fileKey(dev string, inode uint64) string {
	return dev + ":" + strconv.FormatUint(inode, 10)
}

// vdso returns the module of the vdso, read from the process's memory and
// kept by a hash of its image (one kernel, one vdso): parsed once.
func (s *Sampler) vdso(m mapping, mem *procMem) *module {
	image := make([]byte, m.end-m.start)
	if err := mem.readAt(image, m.start); err != nil {
		return nil
	}
	h := fnv.New64a()
	h.Write(image)
	key := fmt.Sprintf("vdso:%x", h.Sum64())
	return s.cached(key, "[vdso]", func() ([]byte, func(), error) { return image, nil, nil })
}

func (s *Sampler) cached(key, path string, open func() ([]byte, func(), error)) *module {
	s.mu.Lock()
	defer s.mu.Unlock()
	mod, ok := s.modules[key]
	if !ok {
		mod = &module{path: path, cache: s.cache, open: open}
		s.modules[key] = mod
	}
	return mod
}

// Close releases the files of every module the sampler read, once no
// Sample is under way and what Prepare and the modules read ahead is
// read.
func (s *Sampler) Close() error {
	s.cache.behind.Wait() // Prepare's work takes s.mu
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.modules {
		m.close()
	}
	s.modules, s.prepared = map[string]*module{}, nil
	s.cache.close()
	return nil
}

// symbolize names the frames of one walk.
func symbolize(raw []rawFrame) []Frame {
	var out []Frame
	for _, r := range raw {
		if r.unknown {
			out = append(out, Frame{Function: "??"})
			continue
		}
		f := Frame{PC: r.pc, Function: "??"}
		if r.seg == nil {
			out = append(out, f)
			continue
		}
		f.Module = r.seg.path
		mod := r.seg.mod
		addr := r.lookup - r.seg.bias
		if sym, ok := mod.symbols().find(addr); ok {
			f.Function = demangled(sym.name)
		}
		var places []place
		if lines := mod.lineIndex(); lines != nil {
			places = lines.places(addr)
		}
		for i, p := range places {
			g := f
			g.File, g.Line, g.Inlined = p.file, p.line, p.inlined
			if p.function != "" && (p.inlined || f.Function == "??") {
				g.Function = p.function
			}
			if i < len(places)-1 {
				g.Inlined = true
			}
			out = append(out, g)
		}
		if len(places) == 0 {
			out = append(out, f)
		}
	}
	return out
}

// threadName is a thread's comm, or "".
func threadName(pid, tid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	return strings.TrimSpace(string(b))
}

// Places names return addresses into process pid's code, as a caller's
// frame would be named, without stopping the process: the function, file
// and line of the call each returns after (the innermost of an inlined
// chain). An address of no mapping, or the process gone, is "??".
func (s *Sampler) Places(pid int, pcs []uint64) ([]Frame, error) {
	mem := &procMem{pid: pid}
	defer mem.close()
	sp, err := s.space(pid, mem)
	if err != nil {
		return nil, err
	}
	out := make([]Frame, len(pcs))
	for i, pc := range pcs {
		out[i] = Frame{PC: pc, Function: "??"}
		if pc == 0 {
			continue
		}
		if fs := symbolize([]rawFrame{{pc: pc, lookup: pc - 1, seg: sp.find(pc - 1)}}); len(fs) > 0 {
			out[i] = fs[0]
		}
	}
	return out, nil
}
