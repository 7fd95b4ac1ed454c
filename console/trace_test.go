package console

import (
	"strings"
	"testing"
)

func TestParseTrace(t *testing.T) {
	for _, c := range []struct {
		in        string
		loc, cond string
		exprs     []string
	}{
		{"compute", "compute", "", nil},
		{"solver.c:42,i,residual", "solver.c:42", "", []string{"i", "residual"}},
		{"solver.c:42, f(a, b), x[1,2] if i > 3 && j", "solver.c:42", "i > 3 && j", []string{"f(a, b)", "x[1,2]"}},
		{`main,"a,b",'c'`, "main", "", []string{`"a,b"`, `'c'`}},
	} {
		s, err := ParseTrace(c.in)
		if err != nil || s.Location != c.loc || s.Condition != c.cond || strings.Join(s.Trace, "|") != strings.Join(c.exprs, "|") {
			t.Errorf("ParseTrace(%q) = %+v, %v; want %q %q %q", c.in, s, err, c.loc, c.exprs, c.cond)
		}
	}
	for _, bad := range []string{"", ",x", "main,", "main,f(x", "main,x)", "main if ", `main,"open`, "two words"} {
		if s, err := ParseTrace(bad); err == nil {
			t.Errorf("ParseTrace(%q) = %+v, want an error", bad, s)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{"compute,value", "a.c:1,f(x,y) if i", `m,"\",",x`, "x if", "(,)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseTrace(in)
		if err != nil {
			return
		}
		if s.Location == "" {
			t.Errorf("ParseTrace(%q): no location and no error", in)
		}
		for _, e := range s.Trace {
			if strings.TrimSpace(e) == "" {
				t.Errorf("ParseTrace(%q): an empty expression", in)
			}
		}
	})
}
