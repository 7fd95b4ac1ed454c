package gdbmi

import "testing"

// A reference prints as the value it refers to, wherever gdb shows one.
func TestDereferenced(t *testing.T) {
	for in, want := range map[string]string{
		"@0x7fffffffe664: 41":                                "41",
		"(Int_t &) @0x7fffffffe664: 42":                      "42",
		"(Point &) @0x55: {x = 3, y = 2.5}":                  "{x = 3, y = 2.5}",
		"(std::string &&) @0x1f: \"abc\"":                    "\"abc\"",
		"0x555555556008 \"hello\"":                           "0x555555556008 \"hello\"",
		"{p = @0x7ffe: 1}":                                   "{p = @0x7ffe: 1}",
		"(int (&)(int)) @0x401136: {int (int)} 0x401136 <f>": "{int (int)} 0x401136 <f>",
	} {
		if got := dereferenced(in); got != want {
			t.Errorf("dereferenced(%q) = %q, want %q", in, got, want)
		}
	}
}
