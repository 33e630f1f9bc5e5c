package quota

import "time"

// RequeueAfter is how long to wait before looking at an Instance's quota
// again while it is not granted, anchored on the Instance's age (not on a
// condition's transition time, which stays put while a claim is pending):
// about 1 s in its first minute, so a grant landing right after creation is
// seen at once, 15 s until 5 minutes, 60 s until 10 minutes, then 300 s. The
// claim watch is the fast path; this schedule makes sure a missed grant event
// always heals, and a conflict while quota is pending waits this long instead
// of falling into exponential error backoff.
func RequeueAfter(age time.Duration) time.Duration {
	switch {
	case age < time.Minute:
		return time.Second
	case age < 5*time.Minute:
		return 15 * time.Second
	case age < 10*time.Minute:
		return time.Minute
	default:
		return 5 * time.Minute
	}
}
