package wire

// VarQuery asks a rank's debugger for variables as its variable objects
// show them, with its pretty-printers: a C++ std::vector as its elements,
// a std::map as its pairs, a std::string as its text, a class as its
// members (not grouped by access). Without Expr, the selected frame's
// locals (Scope "locals") or arguments ("args"); with it, the members of
// Expr's value, reached through Path first (each step a member's Key),
// Count of them from From (0: up to MaxVarMembers); Count -1 asks for
// Expr's own value, as one VarObj (a watch that can be expanded).
type VarQuery struct {
	Scope string   `json:"scope,omitempty"`
	Expr  string   `json:"expr,omitempty"`
	Path  []string `json:"path,omitempty"`
	From  int      `json:"from,omitempty"`
	Count int      `json:"count,omitempty"`
}

// MaxVarMembers bounds the members one VarQuery lists.
const MaxVarMembers = 1000

// VarObj is one variable, or one member of a value: its name as shown
// ("m_x", "[3]"), the key that names it in a VarQuery's Path, an
// expression that reads it where the debugger can tell one, its value
// and type, and whether it has members: how many gdb counts (a C++
// class's access groups count as one each), -1 for some, as many as a
// pretty-printer gives, 0 for none.
type VarObj struct {
	Name    string `json:"name"`
	Key     string `json:"key,omitempty"`
	Expr    string `json:"expr,omitempty"`
	Value   string `json:"value"`
	Type    string `json:"type,omitempty"`
	Members int    `json:"members,omitempty"`
}
