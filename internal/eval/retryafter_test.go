package eval

import (
	"testing"
	"time"
)

// TestHonouredRetryAfter: the part of a Retry-After that is waited is at
// most the attempt timeout and at most MaxRetryAfter.
func TestHonouredRetryAfter(t *testing.T) {
	for _, tc := range []struct{ ra, timeout, want time.Duration }{
		{999999999 * time.Second, time.Second, time.Second},
		{999999999 * time.Second, time.Hour, MaxRetryAfter},
		{3 * time.Second, time.Hour, 3 * time.Second},
		{-time.Second, time.Hour, 0},
	} {
		if got := (retryPolicy{timeout: tc.timeout}).honoured(tc.ra); got != tc.want {
			t.Errorf("honoured(%v) with timeout %v = %v, want %v", tc.ra, tc.timeout, got, tc.want)
		}
	}
}
