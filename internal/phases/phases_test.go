package phases

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	step := func(name string, res Result, err error) Phase[*[]string] {
		return Phase[*[]string]{Name: name, Run: func(_ context.Context, ran *[]string) (Result, error) {
			*ran = append(*ran, name)
			return res, err
		}}
	}
	tests := map[string]struct {
		phases  []Phase[*[]string]
		wantRan []string
		want    Result
		wantErr string
	}{
		"every phase runs and the shortest wait wins": {
			phases:  []Phase[*[]string]{step("a", Result{RequeueAfter: time.Minute}, nil), step("b", Result{}, nil), step("c", Result{RequeueAfter: time.Second}, nil)},
			wantRan: []string{"a", "b", "c"}, want: Result{RequeueAfter: time.Second},
		},
		"a failing phase ends the run, its error named after it": {
			phases:  []Phase[*[]string]{step("read the namespace", Result{}, boom), step("b", Result{}, nil)},
			wantRan: []string{"read the namespace"}, wantErr: "read the namespace: boom",
		},
		"a stopping phase ends the run without error": {
			phases:  []Phase[*[]string]{step("a", Result{RequeueAfter: time.Minute}, nil), step("wait", Result{RequeueAfter: 5 * time.Second, Stop: true}, nil), step("c", Result{}, nil)},
			wantRan: []string{"a", "wait"}, want: Result{RequeueAfter: 5 * time.Second, Stop: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ran []string
			got, err := Run(context.Background(), &ran, tc.phases...)
			if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) || !errors.Is(err, err) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr != "" && !errors.Is(err, boom) {
				t.Errorf("the phase's error is not wrapped: %v", err)
			}
			if got != tc.want || len(ran) != len(tc.wantRan) {
				t.Errorf("got %+v after %v, want %+v after %v", got, ran, tc.want, tc.wantRan)
			}
		})
	}
}
