package analytics

import (
	"math"
	"testing"
)

func TestTableValue(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{0.49999999999999994, "0.5"},
		{1.3333333333333333, "1.333"},
		{0.26524700000000007, "0.2652"},
		{302026.0, "302026"},
		{12.0, "12"},
		{0.000123456, "0.0001235"},
		{math.NaN(), "NaN"},
		{int64(7), "7"},
		{nil, "NULL"},
		{"x", "x"},
	} {
		if got := TableValue(tc.v); got != tc.want {
			t.Errorf("TableValue(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
