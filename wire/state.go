package wire

import "github.com/vmihailenco/msgpack/v5"

// EncodeMsgpack writes s as reflection would, a map of its fields with
// the empty ones of Value, Old and New left out: every rank's server
// encodes a state at every status, halt, step or stop, and reflection
// (its field table, the omitempty checks, the frame boxed to reach its
// encoder) was most of that work.
func (s State) EncodeMsgpack(e *msgpack.Encoder) error {
	optional := [...]struct{ name, value string }{{"Value", s.Value}, {"Old", s.Old}, {"New", s.New}}
	n := 6
	for _, o := range optional {
		if o.value != "" {
			n++
		}
	}
	if err := e.EncodeMapLen(n); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, value string }{{"State", s.State}, {"Reason", s.Reason}} {
		if err := encodeField(e, f.name, f.value); err != nil {
			return err
		}
	}
	if err := e.EncodeString("Frame"); err != nil {
		return err
	}
	if err := s.Frame.EncodeMsgpack(e); err != nil {
		return err
	}
	if err := encodeField(e, "Signal", s.Signal); err != nil {
		return err
	}
	for _, f := range [...]struct {
		name  string
		value int
	}{{"Breakpoint", s.Breakpoint}, {"Code", s.Code}} {
		if err := e.EncodeString(f.name); err != nil {
			return err
		}
		if err := e.EncodeInt(int64(f.value)); err != nil {
			return err
		}
	}
	for _, o := range optional {
		if o.value != "" {
			if err := encodeField(e, o.name, o.value); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodeField writes a map's string entry.
func encodeField(e *msgpack.Encoder, name, value string) error {
	if err := e.EncodeString(name); err != nil {
		return err
	}
	return e.EncodeString(value)
}
