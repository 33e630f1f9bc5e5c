package cmdutil

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/width"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Age renders the time since t for a table as kubectl does, a short
// relative age ("5m", "3d") on a terminal and in a pipe alike (-o json
// carries the timestamp); "<unknown>" for the zero time.
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// ShortDuration renders d the way kubectl renders ages ("45s", "3m20s").
func ShortDuration(d time.Duration) string {
	return duration.HumanDuration(d)
}

// Humanize turns a CamelCase condition reason into lower-case words:
// "ImageUnavailable" becomes "image unavailable".
func Humanize(reason string) string {
	var b strings.Builder
	runes := []rune(reason)
	for i, r := range runes {
		if unicode.IsUpper(r) && i > 0 {
			prevLower := unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1])
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if prevLower || (nextLower && unicode.IsUpper(runes[i-1])) {
				b.WriteByte(' ')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Plural returns "1 instance" or "3 instances".
func Plural(n int, singular, plural string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, singular)
	}
	return fmt.Sprintf("%d %s", n, plural)
}

// Truncate shortens s to at most width runes, marking the cut with "…".
// A width below one leaves s alone.
func Truncate(s string, width int) string {
	if width < 1 || DisplayWidth(s) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		w := runeWidth(r)
		if used+w > width-1 {
			break
		}
		b.WriteRune(r)
		used += w
	}
	return b.String() + "…"
}

// DisplayWidth returns how many terminal columns s takes: wide and
// full-width runes (CJK, most emoji) take two, combining marks and
// zero-width runes none, everything else one.
func DisplayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth returns the terminal columns of r.
func runeWidth(r rune) int {
	switch {
	case r == 0x200B || r == 0x200D || r == 0xFEFF || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r):
		return 0
	case r >= 0x1F300 && r <= 0x1FAFF:
		// Emoji pictographs render two columns wide in terminals.
		return 2
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// OneLine collapses whitespace runs, including newlines, into single
// spaces so a server message fits one table cell.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// IsCityCode reports whether s looks like a city code: three upper-case
// letters such as DFW.
func IsCityCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
