package cmdutil

import (
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
)

// Dash returns s, or "-" for an empty cell, as kubectl's tables show
// what is not set.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// columnGap separates table columns on a terminal, as kubectl does.
const columnGap = "   "

// minFlexibleWidth is the narrowest a flexible column is cut to.
const minFlexibleWidth = 12

// Column is one column of a Table.
type Column struct {
	// Header is the column title, upper case by convention.
	Header string
	// Flexible columns (messages, reasons) are cut to make the table fit
	// the terminal width; the others are never cut.
	Flexible bool
}

// Table is rows of cells under column headers, rendered aligned with
// escape sequences neutralised: fitted to the width on a terminal,
// complete in a pipe.
type Table struct {
	// Columns are the headers.
	Columns []Column
	// Rows hold one cell per column.
	Rows [][]string
	// NoHeaders leaves the header line out (--no-headers).
	NoHeaders bool
}

// NewTable returns a table with the given headers; a header ending in "~"
// is flexible (the "~" is dropped).
func NewTable(headers ...string) *Table {
	t := &Table{}
	for _, h := range headers {
		c := Column{Header: h}
		if trimmed, ok := strings.CutSuffix(h, "~"); ok {
			c = Column{Header: trimmed, Flexible: true}
		}
		t.Columns = append(t.Columns, c)
	}
	return t
}

// AddRow appends a row; missing cells are empty.
func (t *Table) AddRow(cells ...string) {
	row := make([]string, len(t.Columns))
	copy(row, cells)
	t.Rows = append(t.Rows, row)
}

// Render writes the table to w with aligned columns, as kubectl does on
// a terminal and in a pipe alike. On a terminal of the given width (zero:
// unknown) flexible columns are cut to fit; in a pipe (terminal false)
// every value is complete. Scripts that want fields use -o json, -o
// jsonpath= or -o custom-columns=.
func (t *Table) Render(w io.Writer, terminal bool, width int) error {
	if !terminal {
		width = 0
	}
	var b strings.Builder
	t.renderAligned(&b, width)
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderTo writes the table to the output stream of s.
func (t *Table) RenderTo(s IOStreams) error {
	return t.Render(s.Out, s.OutTerminal, s.Width)
}

// renderAligned writes padded columns, cutting flexible columns so a row
// fits width.
func (t *Table) renderAligned(b *strings.Builder, width int) {
	rows := make([][]string, 0, len(t.Rows)+1)
	headers := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		headers[i] = c.Header
	}
	if !t.NoHeaders {
		rows = append(rows, headers)
	}
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = printers.EscapeTerminal(OneLine(c))
		}
		rows = append(rows, cells)
	}
	widths := make([]int, len(t.Columns))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], DisplayWidth(c))
		}
	}
	t.fit(widths, width)
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			c = Truncate(c, widths[i])
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-DisplayWidth(c)))
				line.WriteString(columnGap)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// fit shrinks the flexible columns, last first, until the table fits
// width.
func (t *Table) fit(widths []int, width int) {
	if width <= 0 {
		return
	}
	total := len(columnGap) * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for i := len(t.Columns) - 1; i >= 0 && total > width; i-- {
		if !t.Columns[i].Flexible {
			continue
		}
		floor := max(minFlexibleWidth, DisplayWidth(t.Columns[i].Header))
		cut := min(total-width, widths[i]-floor)
		if cut > 0 {
			widths[i] -= cut
			total -= cut
		}
	}
}
