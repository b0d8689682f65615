package gobuild

import (
	"slices"
	"testing"
)

// TestArgsCarryTags: the arguments name the package and the output, and carry -tags exactly when this
// test binary was built with a tag that Build passes on.
func TestArgsCarryTags(t *testing.T) {
	args := Args(SpadePackage, "/tmp/x")
	if args[0] != "build" || args[len(args)-1] != SpadePackage || args[len(args)-2] != "/tmp/x" {
		t.Fatalf("args = %v", args)
	}
	hasTags := slices.Contains(args, "-tags")
	if hasTags != (len(tags) > 0) {
		t.Fatalf("args %v: -tags present = %v, want %v (tags %v)", args, hasTags, len(tags) > 0, tags)
	}
}
