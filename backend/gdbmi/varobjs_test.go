package gdbmi_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// varObjs asks for q on rank r.
func varObjs(r *rank, q wire.VarQuery) map[string]wire.VarObj {
	r.t.Helper()
	var vs []wire.VarObj
	r.must(wire.OpVarObjs, q, &vs)
	got := map[string]wire.VarObj{}
	for _, v := range vs {
		got[v.Name] = v
	}
	if len(got) != len(vs) {
		r.t.Errorf("%+v: names listed twice: %+v", q, vs)
	}
	return got
}

// C++ as gdb's pretty-printers show it: a vector's elements, a map's
// pairs, a string's text, a class's members without their access groups
// (a base class's with them), an array of three with three members, an
// empty vector with none; members reached through a path of keys.
func TestVarObjsOfCxx(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "domain"))
	r.must(wire.OpBreak, wire.Break{Location: "domain.cpp:" + strconv.Itoa(markedLine(t, filepath.Join("..", "..", "examples", "domain", "domain.cpp"), "the domain is filled here"))}, nil)
	r.must(wire.OpRun, nil, nil)
	r.event(wire.EventStopped)
	r.must(wire.OpFrame, wire.Count{N: 1}, nil) // main's
	locals := varObjs(r, wire.VarQuery{Scope: "locals"})
	if d := locals["domain"]; d.Members == 0 || d.Expr != "domain" || d.Type != "Domain" {
		t.Fatalf("locals: %+v", locals)
	}
	domain := varObjs(r, wire.VarQuery{Expr: "domain"})
	for _, name := range []string{"Mesh", "m_x", "m_empty", "names", "title", "corner", "corners", "owned"} {
		if _, ok := domain[name]; !ok {
			t.Errorf("domain has no member %s: %+v", name, domain)
		}
	}
	if _, ok := domain["public"]; ok {
		t.Errorf("an access group shown as a member: %+v", domain)
	}
	if title := domain["title"]; title.Value != `"lulesh"` || title.Members != 0 {
		t.Errorf("title %+v", title)
	}
	if c := domain["corner"]; c.Expr == "" || c.Members == 0 {
		t.Errorf("corner %+v, want members and an expression", c)
	}
	expand := func(name string) map[string]wire.VarObj {
		return varObjs(r, wire.VarQuery{Expr: "domain", Path: []string{domain[name].Key}})
	}
	if x := expand("m_x"); len(x) != 3 || x["[1]"].Value != "2.5" {
		t.Errorf("m_x: %+v, want its three elements", x)
	}
	if e := expand("m_empty"); len(e) != 0 {
		t.Errorf("an empty vector has members %+v", e)
	}
	if n := expand("names"); len(n) != 4 || n["[0]"].Value != `"x"` || n["[1]"].Value != "1" {
		t.Errorf("names: %+v, want two keys and their values", n)
	}
	if cs := expand("corners"); len(cs) != 3 {
		t.Errorf("corners: %+v, want three", cs)
	}
	if m := expand("Mesh"); m["cells"].Value != "216" {
		t.Errorf("the base class: %+v", m)
	}
	corner := domain["corners"]
	third := varObjs(r, wire.VarQuery{Expr: "domain", Path: []string{corner.Key, "2"}})
	if third["x"].Value != "5" || third["y"].Value != "6" {
		t.Errorf("corners[2]: %+v", third)
	}
	if self := varObjs(r, wire.VarQuery{Expr: "domain.m_x", Count: -1}); self["domain.m_x"].Members != -1 {
		t.Errorf("a watch of a vector: %+v, want it expandable", self)
	}
}

// Fortran: a derived type's members, an array's elements.
func TestVarObjsOfFortran(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "shapes"))
	r.must(wire.OpBreak, wire.Break{Location: "report"}, nil)
	r.must(wire.OpRun, nil, nil)
	r.event(wire.EventStopped)
	args := varObjs(r, wire.VarQuery{Scope: "args"})
	if args["p"].Members != 2 || args["g"].Members != 4 {
		t.Fatalf("report's arguments: %+v", args)
	}
	// bt shows a derived type and an array as gdb's bt does.
	var tr wire.Trace
	r.must(wire.OpBacktrace, wire.Backtrace{}, &tr)
	if len(tr.Levels) == 0 || fmt.Sprint(tr.Levels[0].Args) != "[{p  ... 0} {g  ... 1}]" {
		t.Errorf("bt: %+v", tr.Levels)
	}
	p := varObjs(r, wire.VarQuery{Expr: "p"})
	if p["x"].Value != "1.5" || p["y"].Value != "2.5" {
		t.Errorf("p: %+v", p)
	}
	g := varObjs(r, wire.VarQuery{Expr: "g"})
	if len(g) != 4 || g["[4]"].Value != "2" {
		t.Errorf("g: %+v", g)
	}
}
