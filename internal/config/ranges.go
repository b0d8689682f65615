package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// valueRange is the set of values a numeric key allows, declared once next to the field with a `range`
// struct tag and enforced by Validate for every key alike:
//
//	range:">=1"     at least 1          range:">0"      more than 0
//	range:"<=10"    at most 10          range:"<10"     less than 10
//	range:"[0,1]"   0 to 1, both in     range:"(0,1]"   more than 0, at most 1 (and [a,b), (a,b))
//
// A field without the tag takes any value of its type. Rules across keys stay in the families' validate.
type valueRange struct {
	lo, hi         float64
	hasLo, hasHi   bool
	loOpen, hiOpen bool
}

// parseRange reads a range tag; "" is the unbounded range.
func parseRange(tag string) (valueRange, error) {
	var r valueRange
	bound := func(s string) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("range tag %q: %q is not a finite number", tag, s)
		}
		return x, nil
	}
	var err error
	switch {
	case tag == "":
		return r, nil
	case strings.HasPrefix(tag, ">="), strings.HasPrefix(tag, ">"):
		r.hasLo, r.loOpen = true, !strings.HasPrefix(tag, ">=")
		r.lo, err = bound(strings.TrimLeft(tag, ">="))
	case strings.HasPrefix(tag, "<="), strings.HasPrefix(tag, "<"):
		r.hasHi, r.hiOpen = true, !strings.HasPrefix(tag, "<=")
		r.hi, err = bound(strings.TrimLeft(tag, "<="))
	case len(tag) >= 5 && strings.ContainsRune("[(", rune(tag[0])) && strings.ContainsRune("])", rune(tag[len(tag)-1])):
		lo, hi, ok := strings.Cut(tag[1:len(tag)-1], ",")
		if !ok {
			return r, fmt.Errorf("range tag %q: an interval is [lo,hi], (lo,hi], [lo,hi) or (lo,hi)", tag)
		}
		r.hasLo, r.hasHi, r.loOpen, r.hiOpen = true, true, tag[0] == '(', tag[len(tag)-1] == ')'
		if r.lo, err = bound(lo); err == nil {
			r.hi, err = bound(hi)
		}
		if err == nil && r.lo >= r.hi {
			err = fmt.Errorf("range tag %q: the interval is empty", tag)
		}
	default:
		return r, fmt.Errorf("range tag %q: want >=N, >N, <=N, <N or an interval such as [0,1] or (0,1]", tag)
	}
	return r, err
}

// contains reports whether x is in the range (NaN never is, unless the range is unbounded).
func (r valueRange) contains(x float64) bool {
	switch {
	case r.hasLo && r.loOpen && !(x > r.lo), r.hasLo && !r.loOpen && !(x >= r.lo):
		return false
	case r.hasHi && r.hiOpen && !(x < r.hi), r.hasHi && !r.hiOpen && !(x <= r.hi):
		return false
	}
	return true
}

// String is the range as users read it: ">= 1", "> 0", "[0, 1]", "(0, 1]"; "" for the unbounded range.
func (r valueRange) String() string {
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch {
	case r.hasLo && r.hasHi:
		open, close := "[", "]"
		if r.loOpen {
			open = "("
		}
		if r.hiOpen {
			close = ")"
		}
		return open + num(r.lo) + ", " + num(r.hi) + close
	case r.hasLo && r.loOpen:
		return "> " + num(r.lo)
	case r.hasLo:
		return ">= " + num(r.lo)
	case r.hasHi && r.hiOpen:
		return "< " + num(r.hi)
	case r.hasHi:
		return "<= " + num(r.hi)
	}
	return ""
}

// phrase is the range in an error: "in [0, 1]" for an interval, ">= 1" for a bound.
func (r valueRange) phrase() string {
	if r.hasLo && r.hasHi {
		return "in " + r.String()
	}
	return r.String()
}
