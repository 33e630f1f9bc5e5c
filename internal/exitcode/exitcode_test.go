package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestOfMapsEveryErrorToItsCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", errors.New("boom"), Failure},
		{"usage", UsageErrorf("bad flag %q", "x"), Usage},
		{"pending", PendingErrorf("not yet"), Pending},
		{"fail", Failf("no"), Failure},
		{"wrapped usage", fmt.Errorf("ctx: %w", UsageErrorf("bad")), Usage},
		{"interrupted", fmt.Errorf("waiting: %w", ErrInterrupted), Interrupted},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestWithHintsKeepsTheCodeAndCopiesTheHints(t *testing.T) {
	if WithHints(nil, "x") != nil {
		t.Error("WithHints(nil) is not nil")
	}
	base := &Error{Code: Pending, Err: errors.New("later"), Hints: []string{"a"}}
	err := WithHints(base, "b")
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != Pending || len(ee.Hints) != 2 || ee.Hints[1] != "b" {
		t.Fatalf("WithHints = %#v", err)
	}
	if len(base.Hints) != 1 {
		t.Errorf("WithHints changed the original: %v", base.Hints)
	}
	plain := WithHints(errors.New("x"), "h")
	if !errors.As(plain, &ee) || ee.Code != Failure || ee.Error() != "x" {
		t.Errorf("WithHints(plain) = %#v", plain)
	}
}
