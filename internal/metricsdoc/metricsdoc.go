// Package metricsdoc reads docs/metrics.md, compute's metrics contract: the
// table of series (name, type, labels, the role that exports it and whether
// it is always present) and the runbook sections of the alerts. The metrics
// end-to-end test checks the running managers against the table; the
// PrometheusRule test checks each alert has its section and each compute
// series an alert reads is in the table.
package metricsdoc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Roles of the "Exported by" column.
const (
	// RoleAll is every compute-manager and compute-quota.
	RoleAll = "all"
	// RoleManagement is compute-manager in the management role.
	RoleManagement = "management"
	// RoleCell is compute-manager in the cell role.
	RoleCell = "cell"
	// RoleQuota is compute-quota.
	RoleQuota = "quota"
)

// Series is one row of the series table.
type Series struct {
	// Name is the metric family name.
	Name string
	// Type is counter, gauge or histogram.
	Type string
	// Labels are the series' labels, in the table's order.
	Labels []string
	// Role is RoleAll, RoleManagement, RoleCell or RoleQuota.
	Role string
	// Always is set when the series exists from the manager's start.
	Always bool
}

// Doc is what docs/metrics.md documents.
type Doc struct {
	// Series are the rows of the series table, in order.
	Series []Series
	// Sections are the titles of the "###" sections (alert runbooks are
	// titled by the alert's name).
	Sections []string
}

// Path returns docs/metrics.md of this repository.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "metrics.md")
}

// Read parses docs/metrics.md.
func Read() (*Doc, error) {
	f, err := os.Open(Path())
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return Parse(f)
}

// Parse reads the series table (the one whose header starts with
// "| Series |") and the "###" section titles of r.
func Parse(r io.Reader) (*Doc, error) {
	d := &Doc{}
	inTable := false
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "### "):
			d.Sections = append(d.Sections, strings.TrimSpace(strings.TrimPrefix(line, "### ")))
		case strings.HasPrefix(line, "| Series |"):
			inTable = true
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "|"):
			s, err := parseRow(line)
			if err != nil {
				return nil, fmt.Errorf("docs/metrics.md:%d: %w", n, err)
			}
			d.Series = append(d.Series, s)
		default:
			inTable = false
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(d.Series) == 0 {
		return nil, fmt.Errorf("docs/metrics.md has no series table (a header starting with \"| Series |\")")
	}
	return d, nil
}

// parseRow reads "| `name` | type | `l1`, `l2` | role | present |".
func parseRow(line string) (Series, error) {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if len(cells) != 5 {
		return Series{}, fmt.Errorf("a series row has %d cells, want 5: %s", len(cells), line)
	}
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	s := Series{Name: strings.Trim(cells[0], "`"), Type: cells[1], Role: cells[3], Always: cells[4] == "always"}
	for l := range strings.SplitSeq(cells[2], ",") {
		if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
			s.Labels = append(s.Labels, l)
		}
	}
	switch {
	case !strings.HasPrefix(s.Name, "compute_"):
		return Series{}, fmt.Errorf("series %q is not named compute_*", s.Name)
	case s.Type != "counter" && s.Type != "gauge" && s.Type != "histogram":
		return Series{}, fmt.Errorf("series %s has type %q, want counter, gauge or histogram", s.Name, s.Type)
	case s.Role != RoleAll && s.Role != RoleManagement && s.Role != RoleCell && s.Role != RoleQuota:
		return Series{}, fmt.Errorf("series %s is exported by %q, want all, management, cell or quota", s.Name, s.Role)
	}
	return s, nil
}

// Find returns the series named name.
func (d *Doc) Find(name string) (Series, bool) {
	for _, s := range d.Series {
		if s.Name == name {
			return s, true
		}
	}
	return Series{}, false
}
