package mpiq

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/wire"
)

// The queues of a rank without the interposition library (a job sdm
// attached to) are read through its MPI's own message-queue library
// (Open MPI's libompi_dbg_msgq.so, which the rank names in MPIR_dll_name)
// run by a helper, sdm-msgq (lib/msgq.c), that asks the server for the
// symbols and types the library needs and reads the running process's
// memory itself (no ptrace stop: the library reads lists that a rank
// blocked in MPI leaves alone). Symbols come from the objects the rank
// maps; types from the MPI library's DWARF: its own, its separate debug
// file, or, for a distribution's stripped libmpi, the object sdm's build
// made from the same library's development headers (lib/ompi-types.c),
// named by the library's build-id, so that it is used for that build of
// libmpi alone. The questions stay few, as each waits for the server to
// be scheduled beside ranks whose MPI polls on every core: a helper is
// told before it starts what earlier helpers asked (types.known).

// libraryTimeout bounds a helper's run: a library that reads a list
// while the rank changes it may follow it round for ever.
const libraryTimeout = 10 * time.Second

// libraryQuestions bounds the questions a helper may ask.
const libraryQuestions = 1 << 20

// TypesDir is where sdm's build leaves the type objects, beside its
// binaries.
const TypesDir = "msgq-types"

// fromLibrary reads process pid's queues (rank rank) through its MPI's
// message-queue library; mpi is the MPI library it maps.
func fromLibrary(ctx context.Context, pid, rank int, mpi string) (wire.Queues, error) {
	syms, err := stackwalk.NewSymbols(pid)
	if err != nil {
		return wire.Queues{}, err
	}
	defer syms.Close()
	syms.Prefer(mpi)
	dll, err := dllName(pid, syms)
	if err != nil {
		return wire.Queues{}, err
	}
	typesFile, err := typesOf(mpi)
	if err != nil {
		return wire.Queues{}, err
	}
	t, err := typesIn(typesFile)
	if err != nil {
		return wire.Queues{}, fmt.Errorf("the type information of %s: %w", mpi, err)
	}
	helper, err := beside("sdm-msgq")
	if err != nil {
		return wire.Queues{}, err
	}
	s := session{syms: syms, types: t}
	if err := s.run(ctx, helper, dll, rank, pid); err != nil {
		return wire.Queues{}, err
	}
	q := s.queues()
	q.Library = filepath.Base(dll)
	return q, nil
}

// run runs the helper on the library for process pid, rank rank, to its
// end or its deadline.
func (s *session) run(ctx context.Context, helper, dll string, rank, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, libraryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, dll, strconv.Itoa(rank), strconv.Itoa(pid))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// What earlier helpers asked goes first, answered for this process.
	s.answer = bufio.NewWriter(in)
	for _, l := range s.types.known() {
		s.answer.WriteString(l + "\n")
	}
	for _, name := range s.types.symbols() {
		s.answer.WriteString("sym " + name + " " + s.ask("sym", name) + "\n")
	}
	s.answer.WriteString("go\n")
	serr := s.answer.Flush()
	if serr == nil {
		serr = s.serve(out)
	}
	in.Close()
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s did not finish within %v (a list it read may have changed under it)", filepath.Base(dll), libraryTimeout)
	case s.failed != "":
		return fmt.Errorf("%s: %s", filepath.Base(dll), s.failed)
	case serr != nil:
		return serr
	case werr != nil:
		return fmt.Errorf("%s, running %s: %v %s", filepath.Base(helper), filepath.Base(dll), werr, strings.TrimSpace(stderr.String()))
	case !s.ended:
		return fmt.Errorf("%s ended before its answer's end", filepath.Base(helper))
	}
	return nil
}

// dllName is the message-queue library the process names in
// MPIR_dll_name, which its MPI library sets in MPI_Init.
func dllName(pid int, syms *stackwalk.Symbols) (string, error) {
	addr, _, ok := syms.Address("MPIR_dll_name")
	if !ok {
		return "", errors.New("the process has no MPIR_dll_name: its MPI names no message-queue library")
	}
	var b []byte
	for _, n := range []int{1024, 256, 64} {
		b = make([]byte, n)
		if err := stackwalk.ReadMemory(pid, b, addr); err == nil {
			break
		} else if n == 64 {
			return "", fmt.Errorf("read MPIR_dll_name: %w", err)
		}
	}
	name, _, _ := bytes.Cut(b, []byte{0})
	if len(name) == 0 {
		return "", errors.New("MPIR_dll_name is empty: the rank has not called MPI_Init")
	}
	return string(name), trusted(string(name))
}

// trusted refuses a library that another user could have written: the
// name comes from the rank's memory, and the helper runs the library
// with the server's rights. It must be an absolute path to a file, and
// it and its directories owned by root or the server's user and
// writable by no one else.
func trusted(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("MPIR_dll_name %q is not an absolute path: sdm does not load it", path)
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("MPIR_dll_name %q: %w", path, err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
		case sys.Uid != 0 && int(sys.Uid) != os.Geteuid():
			return fmt.Errorf("MPIR_dll_name %q: %s belongs to another user (uid %d): sdm does not load it", path, p, sys.Uid)
		case st.Mode().Perm()&0o022 != 0 && st.Mode()&os.ModeSticky == 0:
			return fmt.Errorf("MPIR_dll_name %q: %s is writable by others: sdm does not load it", path, p)
		}
		if p == "/" {
			return nil
		}
	}
}

// typesOf is the file with the type information of the MPI library at
// path: its DWARF, or the object sdm built for its build-id.
func typesOf(path string) (string, error) {
	if f := stackwalk.DWARFFile(path); f != "" {
		return f, nil
	}
	id, err := stackwalk.BuildID(path)
	if err != nil {
		return "", err
	}
	built, err := beside(filepath.Join(TypesDir, id+".so"))
	if err != nil {
		return "", fmt.Errorf("%s has no debugging information (in itself or a separate debug file), and sdm was built without the "+
			"development headers of this build of it (build-id %s): Open MPI's message-queue library needs its types", path, id)
	}
	return built, nil
}

// beside is a file beside the running executable (sdm's binaries).
func beside(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// session answers a helper's questions and keeps what it tells.
type session struct {
	syms   *stackwalk.Symbols
	types  *types
	answer *bufio.Writer
	asked  int
	failed string
	ended  bool
	comms  []libComm
}

// libComm is a communicator as the library tells it, with its operations.
type libComm struct {
	id, localRank, size int
	name                string
	group               []int
	ops                 []libOp
}

// libOp is an operation as the library tells it.
type libOp struct {
	class, status               int
	peer, tagWild, tag, length  int64
	actualPeer, actualTag, aLen int64
}

// serve reads the helper's lines to its end.
func (s *session) serve(out io.Reader) error {
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		kind, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		switch kind {
		case "sym", "type", "field":
			if s.asked++; s.asked > libraryQuestions {
				return fmt.Errorf("the message-queue library asked more than %d questions", libraryQuestions)
			}
			s.answer.WriteString(s.ask(kind, rest))
			s.answer.WriteByte('\n')
			if err := s.answer.Flush(); err != nil {
				return err
			}
		default:
			s.tell(kind, rest)
		}
	}
}

// ask answers one question; "-" is no answer.
func (s *session) ask(kind, rest string) string {
	switch kind {
	case "sym":
		if strings.ContainsAny(rest, " \n") {
			return "-"
		}
		s.types.asked(rest)
		if addr, _, ok := s.syms.Address(rest); ok {
			return strconv.FormatUint(addr, 16)
		}
	case "type":
		if id, size, ok := s.types.find(rest); ok {
			return fmt.Sprintf("%d %d", id, size)
		}
	case "field":
		idText, name, _ := strings.Cut(rest, " ")
		id, err := strconv.Atoi(idText)
		if err != nil {
			return "-"
		}
		if off, ok := s.types.field(id, name); ok {
			return strconv.FormatInt(off, 10)
		}
	}
	return "-"
}

// tell keeps a line of what the library found.
func (s *session) tell(kind, rest string) {
	f := strings.Fields(rest)
	num := func(i int) int64 {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return n
	}
	switch kind {
	case "error":
		s.failed = rest
	case "end":
		s.ended = true
	case "comm":
		name := ""
		if len(f) > 3 {
			name = strings.Join(f[3:], " ")
		}
		s.comms = append(s.comms, libComm{id: int(num(0)), localRank: int(num(1)), size: int(num(2)), name: name})
	case "group":
		if n := len(s.comms); n > 0 {
			for i := range f {
				s.comms[n-1].group = append(s.comms[n-1].group, int(num(i)))
			}
		}
	case "op":
		if n := len(s.comms); n > 0 {
			s.comms[n-1].ops = append(s.comms[n-1].ops, libOp{class: int(num(0)), status: int(num(1)), peer: num(2),
				tagWild: num(3), tag: num(4), length: num(5), actualPeer: num(6), actualTag: num(7), aLen: num(8)})
		}
	}
}

// The library's classes of operations and their states.
const (
	pendingSends = iota
	pendingReceives
	unexpectedMessages

	complete = 2
)

// queues is what the library told, as the wire gives it: MPI_COMM_WORLD
// (by its name) is communicator 0 and tells the rank and size; the
// others are numbered by their unique ids (Open MPI's context ids).
func (s *session) queues() wire.Queues {
	q := wire.Queues{Rank: -1}
	for i, c := range s.comms {
		comm := 1<<20 + i // apart from context ids
		if c.id > 0 {
			comm = c.id // one number on every rank, in Open MPI
		}
		if c.size <= 0 { // MPI_COMM_NULL
			continue
		}
		if c.name == "MPI_COMM_WORLD" {
			comm, q.Rank, q.Size = 0, c.localRank, c.size
		} else if len(c.group) > 0 {
			var b wire.Builder
			for _, r := range c.group {
				if r >= 0 {
					b.Add(r)
				}
			}
			if q.Comms == nil {
				q.Comms = map[int]wire.RankSet{}
			}
			q.Comms[comm] = b.Set()
		}
		for _, o := range c.ops {
			if o.status == complete {
				continue
			}
			op := wire.MPIOp{Peer: int(o.peer), Tag: int(o.tag), Comm: comm, CommSize: c.size, Bytes: o.length,
				Root: wire.NoRank, Request: true}
			switch o.class {
			case pendingSends:
				op.Call = wire.PostedSend
			case pendingReceives:
				op.Call = wire.PostedRecv
				if op.Peer < 0 {
					op.Peer = wire.AnySource
				}
			default:
				op.Call, op.Peer, op.Tag, op.Bytes, op.Request = wire.Unexpected, int(o.actualPeer), int(o.actualTag), o.aLen, false
			}
			if o.tagWild != 0 && o.class != unexpectedMessages {
				op.Tag = wire.AnyTag
			}
			q.Ops = append(q.Ops, op)
		}
	}
	return q
}
