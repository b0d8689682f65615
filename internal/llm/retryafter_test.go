package llm

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryAfter reads both forms of the header (delay seconds and an HTTP date) and ignores the rest.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {" 120 ", 2 * time.Minute}, {"-1", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(tc.in, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
