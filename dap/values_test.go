package dap

import (
	"reflect"
	"testing"
)

func TestMembersOfAggregates(t *testing.T) {
	for _, c := range []struct {
		value string
		want  []member
	}{
		{"{x = 1, y = {2, 3}}", []member{{"x", "1", "(s).x"}, {"y", "{2, 3}", "(s).y"}}},
		{"{1, 0 <repeats 15 times>, 7}", []member{{"[0]", "1", "(s)[0]"}, {"[1..15]", "0", ""}, {"[16]", "7", "(s)[16]"}}},
		{`{name = "a, b = {c}", c = 44 ','}`, []member{{"name", `"a, b = {c}"`, "(s).name"}, {"c", "44 ','", "(s).c"}}},
		{"{<std::_Vector_base<int, std::allocator<int> >> = {_M_impl = {x = 0}}, <No data fields>}",
			[]member{{"<std::_Vector_base<int, std::allocator<int> >>", "{_M_impl = {x = 0}}", ""}, {"[0]", "<No data fields>", "(s)[0]"}}},
		{"{}", nil},
		{"@0x7ffd5c10: {x = 1, y = 2.5}", []member{{"x", "1", "(s).x"}, {"y", "2.5", "(s).y"}}},
	} {
		got, ok := members("s", c.value)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("members(%q) = %q %v, want %q", c.value, got, ok, c.want)
		}
	}
	for _, v := range []string{"42", "{...}", "{a = {1}", "0x601040 <buf>", `{a = "}`} {
		if got, ok := members("s", v); ok {
			t.Errorf("members(%q) = %q, want no aggregate", v, got)
		}
	}
}

func TestPointsTo(t *testing.T) {
	for _, c := range []struct {
		typ, value string
		want       bool
	}{
		{"struct node *", "0x4052a0", true},
		{"int *", "0x0", false},
		{"char *", `0x402004 "hello"`, false},
		{"const char *", `0x402004 "hello"`, false},
		{"void *", "0x4052a0", false},
		{"int", "3", false},
	} {
		if got := pointsTo(c.typ, c.value); got != c.want {
			t.Errorf("pointsTo(%q, %q) = %v, want %v", c.typ, c.value, got, c.want)
		}
	}
}

// FuzzMembers: no value, however malformed, makes the parser panic or
// return members with text the value did not hold.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{"{x = 1, y = {2, 3}}", "{1, 0 <repeats 15 times>}", `{a = "x\"y", b = 'c'}`, "{", "}{", "{<a> = {}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, ok := members("p", s)
		if !ok {
			return
		}
		for _, m := range ms {
			if len(m.value) > len(s) {
				t.Fatalf("member %q longer than %q", m.value, s)
			}
		}
	})
}
