package slurmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArrayThenDependentJob runs a two-task job array and a job that waits for it (afterok) on the
// cluster: both array tasks write their index, and the dependent job sees both files.
func TestArrayThenDependentJob(t *testing.T) {
	c := Start(t)
	dir := t.TempDir()
	out, err := c.Command("sbatch", "--parsable", "--array=0-1", "--cpus-per-task=1", "-o", filepath.Join(dir, "a-%a.out"),
		"--wrap", "echo $SLURM_ARRAY_TASK_ID > "+dir+"/task-$SLURM_ARRAY_TASK_ID").CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	array := strings.TrimSpace(string(out))
	out, err = c.Command("sbatch", "--parsable", "--dependency=afterok:"+array, "-o", filepath.Join(dir, "b.out"),
		"--wrap", "cat "+dir+"/task-0 "+dir+"/task-1 > "+dir+"/both").CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if body, err := os.ReadFile(filepath.Join(dir, "both")); err == nil && len(body) > 0 {
			if got := strings.Fields(string(body)); strings.Join(got, ",") != "0,1" {
				t.Fatalf("dependent job read %q, want the two tasks' indices", body)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	sq, _ := c.Command("squeue", "-t", "all").CombinedOutput()
	t.Fatalf("the dependent job did not finish in time\n%s\n%s", sq, c.Log())
}
