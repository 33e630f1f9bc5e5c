package quota

import (
	"testing"
	"time"
)

func TestRequeueAfter(t *testing.T) {
	tests := map[string]struct {
		age  time.Duration
		want time.Duration
	}{
		"a brand new instance is looked at every second":          {age: 0, want: time.Second},
		"an instance with a skewed clock is treated as new":       {age: -time.Minute, want: time.Second},
		"just under a minute old is still polled every second":    {age: 59 * time.Second, want: time.Second},
		"at one minute the interval becomes 15 seconds":           {age: time.Minute, want: 15 * time.Second},
		"just under five minutes old is polled every 15 seconds":  {age: 5*time.Minute - time.Second, want: 15 * time.Second},
		"at five minutes the interval becomes a minute":           {age: 5 * time.Minute, want: time.Minute},
		"just under ten minutes old is polled every minute":       {age: 10*time.Minute - time.Second, want: time.Minute},
		"from ten minutes on the interval is five minutes":        {age: 10 * time.Minute, want: 5 * time.Minute},
		"a day-old pending instance is still polled every 5 mins": {age: 24 * time.Hour, want: 5 * time.Minute},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RequeueAfter(tc.age); got != tc.want {
				t.Errorf("RequeueAfter(%s) = %s, want %s", tc.age, got, tc.want)
			}
		})
	}
}
