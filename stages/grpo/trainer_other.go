//go:build !unix

package grpo

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist; cancelling kills the interpreter only.
func setProcessGroup(*exec.Cmd) {}

// startOwnGroup is a no-op where process groups do not exist.
func startOwnGroup(*exec.Cmd) {}

// killGroup ends the interpreter (its children are not reached where process groups do not exist).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
