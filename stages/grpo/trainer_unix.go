//go:build unix

package grpo

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup starts the trainer in its own process group, so that cancelling the context stops
// torchrun's workers too (SIGTERM to the group, then SIGKILL after a grace period).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
}

// startOwnGroup starts a command that outlives any one context in its own process group (killGroup).
func startOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup ends a started command's process group (torchrun and its workers) at once.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
