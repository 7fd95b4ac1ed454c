package gdbmi

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// VarObjs implements backend.Ops: variables as gdb's variable objects
// show them, its pretty-printers on (launch): an editor expands a
// std::vector into its elements, a std::map into its pairs, a class into
// its members, as gdb itself sees them, where parsing printed values
// guessed. The variable objects live for one answer: the next may come
// after the program moved, so each answer creates what it lists from the
// expression down (the path of keys) and deletes it.
func (b *Backend) VarObjs(ctx context.Context, q wire.VarQuery) ([]wire.VarObj, error) {
	_, run, err := b.session(ctx, wire.OpVarObjs)
	if err != nil {
		return nil, err
	}
	var made []string
	defer func() {
		for _, name := range made {
			run("-var-delete " + name)
		}
	}()
	create := func(expr string) (Record, error) {
		r, _, err := run("-var-create - * " + Quote(expr))
		if err == nil {
			made = append(made, r.Results.S("name"))
		}
		return r, err
	}
	if q.Expr == "" {
		return frameVarObjs(run, create, q.Scope)
	}
	r, err := create(q.Expr)
	if err != nil {
		return nil, err
	}
	if q.Count < 0 {
		v := varObj(r.Results, q.Expr)
		v.Expr = q.Expr
		return []wire.VarObj{v}, nil
	}
	name := r.Results.S("name")
	for _, key := range q.Path {
		// A member's variable object exists once its parent's members
		// were listed: those of each step, as far as the key (whose
		// access group, public.m_x, is a step of its own).
		for _, step := range strings.Split(key, ".") {
			if _, _, err := run(fmt.Sprintf("-var-list-children %s 0 %d", name, keyIndex(step)+1)); err != nil {
				return nil, err
			}
			name += "." + step
		}
	}
	count := q.Count
	if count == 0 || count > wire.MaxVarMembers {
		count = wire.MaxVarMembers
	}
	return members(run, name, q.From, q.From+count)
}

// frameVarObjs lists the selected frame's locals or arguments.
func frameVarObjs(run func(string) (Record, string, error), create func(string) (Record, error), scope string) ([]wire.VarObj, error) {
	r, _, err := run("-stack-list-variables --no-values")
	if err != nil {
		return nil, err
	}
	var out []wire.VarObj
	for _, v := range r.Results.Get("variables").Items() {
		arg := v.S("arg") == "1"
		if arg != (scope == "args") {
			continue
		}
		name := v.S("name")
		c, err := create(name)
		if err != nil {
			out = append(out, wire.VarObj{Name: name, Value: "<" + err.Error() + ">"})
			continue
		}
		obj := varObj(c.Results, name)
		obj.Expr = name
		out = append(out, obj)
	}
	return out, nil
}

// members lists the members [from, to) of variable object name, those
// gdb groups by access (C++'s public, private, protected) in their
// place: their key is the group's and their own, "public.m_x".
func members(run func(string) (Record, string, error), name string, from, to int) ([]wire.VarObj, error) {
	r, _, err := run(fmt.Sprintf("-var-list-children --all-values %s %d %d", name, from, to))
	if err != nil {
		return nil, err
	}
	static := r.Results.S("displayhint") == "" && !strings.Contains(name, ".[")
	var out []wire.VarObj
	for _, c := range r.Results.Get("children").Items() {
		child := c.S("name")
		exp := c.S("exp")
		if c.S("type") == "" && (exp == "public" || exp == "private" || exp == "protected") {
			inner, err := members(run, child, 0, wire.MaxVarMembers)
			if err != nil {
				return nil, err
			}
			for _, m := range inner {
				m.Key = exp + "." + m.Key
				out = append(out, m)
			}
			continue
		}
		shown := exp
		if _, err := strconv.Atoi(exp); err == nil {
			shown = "[" + exp + "]" // an array's element, as editors show one
		}
		m := varObj(c, shown)
		m.Key = strings.TrimPrefix(child, name+".")
		if static {
			if p, _, err := run("-var-info-path-expression " + child); err == nil {
				m.Expr = p.Results.S("path_expr")
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// varObj reads a variable object's tuple (of -var-create, or a child's of
// -var-list-children), shown as name.
func varObj(v Value, name string) wire.VarObj {
	o := wire.VarObj{Name: name, Value: v.S("value"), Type: v.S("type"), Members: v.Int("numchild")}
	if v.S("dynamic") == "1" && o.Members == 0 {
		switch {
		case v.S("displayhint") == "string":
		case v.Has("has_more") && v.S("has_more") == "0":
		default:
			o.Members = -1 // a pretty-printer's: as many as it gives
		}
	}
	return o
}

// keyIndex is the position a key's member has among its parent's, where
// the key says it ("[3]" of a container, "3" of an array), so that a path
// through a long list lists no more than it needs; else the most listed.
func keyIndex(key string) int {
	if n, err := strconv.Atoi(strings.Trim(key, "[]")); err == nil && n >= 0 {
		return n
	}
	return wire.MaxVarMembers - 1
}
