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
