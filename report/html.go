package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"strings"

	"github.com/sdm-hpc/sdm/console"
)

//go:embed page.html
var pageText string

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"tree":     treeSVG,
	"classes":  func(raw json.RawMessage) []class { return stacksOf(raw).Classes },
	"diagnose": func(raw json.RawMessage) deadlock { return deadlockOf(raw) },
	"trace":    traceOf,
	"level":    levelText,
	"vars":     varsText,
	"program":  func(argv []string) string { return strings.Join(argv, " ") },
	"frame":    frameText,
	"queue": func(g group) string {
		var v struct {
			Text string `json:"text"`
		}
		json.Unmarshal(g.Value, &v)
		return v.Text
	},
}).Parse(pageText))

// page writes the report as one HTML page that needs nothing else: no
// script, no network; the stack trees are inline SVG.
func page(w io.Writer, r *Report) error {
	return pageTemplate.Execute(w, r)
}

// SVG layout of a stack tree: one row per node, indented by depth.
const (
	rowHeight = 20
	indent    = 18
	charWidth = 7.2
)

// treeSVG draws a stacks value's call tree: each frame on a row of its
// own under its caller, with its ranks, a bar as wide as its share of
// the ranks, and lines from callers to callees.
func treeSVG(raw json.RawMessage) template.HTML {
	s := stacksOf(raw)
	if len(s.Roots) == 0 {
		return ""
	}
	total := 0
	for _, r := range s.Roots {
		total = max(total, r.Count)
	}
	var rows, lines strings.Builder
	row, width := 0, 0.0
	var draw func(n console.TreeNode, depth int) int
	draw = func(n console.TreeNode, depth int) int {
		y := row*rowHeight + 14
		x := depth*indent + 8
		row++
		text := fmt.Sprintf("%s  [%s] (%d)", frameText(frameOf(n)), n.Ranks, n.Count)
		width = max(width, float64(x)+charWidth*float64(len(text))+60)
		bar := 40.0 * float64(n.Count) / float64(max(total, 1))
		fmt.Fprintf(&rows, `<rect x="%d" y="%d" width="%.1f" height="12" class="bar"/>`, x, y-10, bar)
		fmt.Fprintf(&rows, `<text x="%d" y="%d">%s</text>`+"\n", x+44, y, html.EscapeString(text))
		for _, c := range n.Children {
			cy := draw(c, depth+1)
			fmt.Fprintf(&lines, `<path d="M%d %d V%d H%d" class="edge"/>`, x+4, y+2, cy-4, x+indent)
		}
		return y
	}
	for _, r := range s.Roots {
		draw(r, 0)
	}
	return template.HTML(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%d" class="tree">%s%s</svg>`,
		width, row*rowHeight+8, lines.String(), rows.String()))
}
