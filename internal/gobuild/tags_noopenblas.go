//go:build noopenblas

package gobuild

// tags are the build tags of this binary that Build passes on.
var tags = []string{"noopenblas"}
