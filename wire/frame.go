package wire

import "github.com/vmihailenco/msgpack/v5"

// EncodeMsgpack writes f as the array its struct tag asks for, as
// reflection would, field by field: every rank's server encodes its stack
// at every where, and by reflection that was most of the work of a
// where, once the command had reached the server.
func (f Frame) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeArrayLen(4); err != nil {
		return err
	}
	for _, s := range [...]string{f.Func, f.File} {
		if err := e.EncodeString(s); err != nil {
			return err
		}
	}
	if err := e.EncodeInt(int64(f.Line)); err != nil {
		return err
	}
	return e.EncodeString(f.From)
}

// EncodeMsgpack writes s as reflection would, a map of its one field,
// with each frame encoded by Frame.EncodeMsgpack: reflection would box
// every frame to call it.
func (s Stack) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeMapLen(1); err != nil {
		return err
	}
	if err := e.EncodeString("Frames"); err != nil {
		return err
	}
	if s.Frames == nil {
		return e.EncodeNil()
	}
	if err := e.EncodeArrayLen(len(s.Frames)); err != nil {
		return err
	}
	for _, f := range s.Frames {
		if err := f.EncodeMsgpack(e); err != nil {
			return err
		}
	}
	return nil
}
