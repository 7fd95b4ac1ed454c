package gdbmi

import (
	"regexp"
	"strings"
	"sync"
)

// gdb prints a C++ reference as its address, "@0x7ffe4a8: 42" with the
// value it refers to (a variable, a finish's return value, the latter
// with its type before it: "(Int_t &) @0x7ffe4a8: 42"), or as the address
// alone (MI's answer to an expression). Addresses differ from rank to
// rank, so ranks whose values are equal would not merge; gdb's CLI shows
// the value, and so does sdm.

// refValue is a reference's type and address before the value it refers to.
var refValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\([^@]*\) )?@0x[0-9a-f]+: `) })

// bareRef is a reference printed as its address alone.
var bareRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@(0x[0-9a-f]+)$`) })

// dereferenced is value without a reference's type and address before it.
func dereferenced(value string) string {
	return refValue().ReplaceAllString(value, "")
}

// referred is value, the value of expr, with a reference printed as its
// address alone replaced by the value it refers to: its type comes from
// whatis, which evaluates nothing (a call of a method that returns a
// reference runs once), and the value is read at the address. Should
// either fail, value stands.
func referred(run func(string) (Record, string, error), expr, value string) string {
	m := bareRef().FindStringSubmatch(value)
	if m == nil {
		return value
	}
	typ, err := console(run, "whatis "+expr)
	if err != nil {
		return value
	}
	t := strings.TrimSpace(strings.TrimPrefix(typ.Text, "type = "))
	if !strings.HasSuffix(t, "&") {
		return value
	}
	t = strings.TrimSpace(strings.TrimRight(t, "&"))
	r, _, err := run("-data-evaluate-expression " + Quote("*("+t+" *) "+m[1]))
	if err != nil {
		return value
	}
	return r.Results.S("value")
}
