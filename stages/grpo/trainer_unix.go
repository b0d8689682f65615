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
