package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Kind says what a Message is for.
type Kind uint8

// Message kinds. A link starts with one Hello from the dialer; after that
// commands travel down the tree and replies and events travel up.
const (
	KindHello   Kind = 1 // dialer introduces itself: Body is a Hello
	KindCommand Kind = 2 // Ranks, Op, Timeout and Body are set
	KindReply   Kind = 3 // answers command ID in Groups
	KindEvent   Kind = 4 // unsolicited news in Groups, Op names it
	// A local link's ping and its answer (NewLocalLink), which the link
	// itself sends and takes: its reader never returns them.
	KindPing Kind = 5
	KindPong Kind = 6
)

func (k Kind) String() string {
	switch k {
	case KindHello:
		return "hello"
	case KindCommand:
		return "command"
	case KindReply:
		return "reply"
	case KindEvent:
		return "event"
	case KindPing:
		return "ping"
	case KindPong:
		return "pong"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Status is the outcome a Group reports for its ranks.
type Status uint8

// Statuses. Everything but StatusOK carries a human-readable reason as its
// Body, so that identical failures merge like identical answers.
const (
	StatusOK      Status = 0 // Body is the op's answer
	StatusError   Status = 1 // the rank's debugger refused or failed
	StatusTimeout Status = 2 // no answer before the command's deadline
	StatusLost    Status = 3 // the link to the rank's server is gone
	StatusNoRank  Status = 4 // the rank does not exist in this job
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	case StatusTimeout:
		return "timeout"
	case StatusLost:
		return "lost"
	case StatusNoRank:
		return "no such rank"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Group is one distinct answer and the ranks that gave it.
type Group struct {
	Ranks  RankSet
	Status Status
	Body   []byte
}

// Message is the envelope of everything that crosses a link. On the wire
// it is a msgpack array of its fields in this order, with each group an
// array of its own (see EncodeMsgpack).
type Message struct {
	Kind    Kind
	ID      uint64        // command ID, echoed by its reply
	Op      string        // command or event name
	Ranks   RankSet       // command: the ranks it is addressed to
	Timeout time.Duration // command: how long the sender waits for all answers
	Body    []byte        // command and hello: op-specific msgpack
	Groups  []Group       // reply and event: the answers, one per distinct body
}

// Hello is the body of the first message on a link: who is dialing.
type Hello struct {
	Index int    // the dialer's index in the routing table; the master sends N
	Size  int    // N, the number of ranks of the job
	Host  string // the dialer's host name, which messages about it give
}

// ErrMessage is wrapped by every error about a malformed message.
var ErrMessage = errors.New("malformed message")

// Validate checks the fields a receiver relies on, so that a decoded
// message from a confused peer cannot push the node into a bad state.
func (m *Message) Validate() error {
	switch m.Kind {
	case KindHello, KindPing, KindPong:
	case KindCommand:
		if m.Op == "" {
			return fmt.Errorf("%w: command %d has no op", ErrMessage, m.ID)
		}
		if m.Timeout <= 0 {
			return fmt.Errorf("%w: command %d (%s) has no timeout", ErrMessage, m.ID, m.Op)
		}
	case KindReply, KindEvent:
		for _, g := range m.Groups {
			if g.Ranks.Empty() {
				return fmt.Errorf("%w: %s %d has a group without ranks", ErrMessage, m.Kind, m.ID)
			}
		}
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrMessage, m.Kind)
	}
	return nil
}

// Encode returns the msgpack form of v, for message bodies.
func Encode(v any) ([]byte, error) { return msgpack.Marshal(v) }

// MustEncode is Encode for values whose types cannot fail to encode (plain
// structs of strings and numbers); it panics otherwise, which is a bug.
func MustEncode(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("wire: encode %T: %v", v, err))
	}
	return b
}

// Decode reads a msgpack body into v. Every length in b is checked against
// b's size first, so a body from a peer cannot make us allocate more than
// it sent.
func Decode(b []byte, v any) error {
	if _, err := checkBounds(b); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: body: %v", ErrMessage, err)
	}
	return nil
}

const (
	messageFields = 7
	groupFields   = 3
)

// EncodeMsgpack writes m field by field. Every message of every link goes
// through here, so it is written out by hand rather than left to
// reflection, which costs several times more.
func (m *Message) EncodeMsgpack(enc *msgpack.Encoder) error {
	enc.EncodeArrayLen(messageFields)
	enc.EncodeUint8(uint8(m.Kind))
	enc.EncodeUint64(m.ID)
	enc.EncodeString(m.Op)
	m.Ranks.EncodeMsgpack(enc)
	enc.EncodeInt64(int64(m.Timeout))
	enc.EncodeBytes(m.Body)
	enc.EncodeArrayLen(len(m.Groups))
	for i := range m.Groups {
		g := &m.Groups[i]
		enc.EncodeArrayLen(groupFields)
		g.Ranks.EncodeMsgpack(enc)
		enc.EncodeUint8(uint8(g.Status))
		if err := enc.EncodeBytes(g.Body); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (m *Message) DecodeMsgpack(dec *msgpack.Decoder) error {
	if err := arrayLen(dec, messageFields, "message"); err != nil {
		return err
	}
	kind, err := dec.DecodeUint8()
	if err != nil {
		return err
	}
	m.Kind = Kind(kind)
	if m.ID, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if m.Op, err = dec.DecodeString(); err != nil {
		return err
	}
	if err = m.Ranks.DecodeMsgpack(dec); err != nil {
		return err
	}
	timeout, err := dec.DecodeInt64()
	if err != nil {
		return err
	}
	m.Timeout = time.Duration(timeout)
	if m.Body, err = dec.DecodeBytes(); err != nil {
		return err
	}
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	// n comes from the peer: grow as groups arrive instead of trusting it.
	m.Groups = make([]Group, 0, min(max(n, 0), 64))
	for i := 0; i < n; i++ {
		var g Group
		if err := arrayLen(dec, groupFields, "group"); err != nil {
			return err
		}
		if err := g.Ranks.DecodeMsgpack(dec); err != nil {
			return err
		}
		status, err := dec.DecodeUint8()
		if err != nil {
			return err
		}
		g.Status = Status(status)
		if g.Body, err = dec.DecodeBytes(); err != nil {
			return err
		}
		m.Groups = append(m.Groups, g)
	}
	return nil
}

func arrayLen(dec *msgpack.Decoder, want int, what string) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%w: %s has %d fields, want %d", ErrMessage, what, n, want)
	}
	return nil
}

// EncodeMsgpack writes s as a flat array lo0, hi0, lo1, hi1, ...
func (s RankSet) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(2 * len(s.spans)); err != nil {
		return err
	}
	for _, sp := range s.spans {
		if err := enc.EncodeUint32(sp.lo); err != nil {
			return err
		}
		if err := enc.EncodeUint32(sp.hi); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote and accepts only the
// canonical form (sorted, disjoint, non-adjacent ranges), so that equal sets
// always have equal bytes and merging by body stays exact.
func (s *RankSet) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n <= 0 {
		*s = RankSet{}
		return nil
	}
	if n%2 != 0 {
		return fmt.Errorf("%w: rank set has odd length %d", ErrMessage, n)
	}
	// n comes from the peer: grow as elements arrive instead of trusting it.
	spans := make([]span, 0, min(n/2, 1024))
	for i := 0; i < n/2; i++ {
		lo, err := dec.DecodeUint32()
		if err != nil {
			return err
		}
		hi, err := dec.DecodeUint32()
		if err != nil {
			return err
		}
		if lo > hi || hi > MaxRank {
			return fmt.Errorf("%w: rank range %d-%d", ErrMessage, lo, hi)
		}
		if k := len(spans); k > 0 && uint64(lo) <= uint64(spans[k-1].hi)+1 {
			return fmt.Errorf("%w: rank ranges not in canonical order", ErrMessage)
		}
		spans = append(spans, span{lo, hi})
	}
	*s = RankSet{spans: spans}
	return nil
}
