//go:build !unix

package grpo

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist; cancelling kills the interpreter only.
func setProcessGroup(*exec.Cmd) {}
