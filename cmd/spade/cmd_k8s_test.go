package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/spadekit/spade/internal/lake/s3test"
)

// TestK8sRenderWritesIndexedJobs renders two steps of a run (a refresh step and the next) and parses the
// output back into batch/v1 Jobs with the Kubernetes types (unknown fields refused): one Job per due
// stage and step in run order, Indexed with the stage's shards as completions, the shard from
// JOB_COMPLETION_INDEX, the per-index retry limit, the run's resources (the trainer's GPUs on grpo),
// the environment and secret given, and the Jobs each must wait for.
func TestK8sRenderWritesIndexedJobs(t *testing.T) {
	dir := t.TempDir()
	if out, err := spadeCmd(t, "--lake", dir, "--run", "r1", "init", "--preset", "qwen3-4b-games",
		"--set", "grpo.trainer=torch", "--set", "grpo.trainer_gpus=4", "--set", "slurm.rollout.mem=16G").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := spadeCmd(t, "--lake", dir, "--run", "r1", "k8s", "render", "--steps", "0-1", "--shards", "8",
		"--image", "registry.example.com/spade:latest", "--env", "AWS_ENDPOINT_URL=http://minio.spade.svc:9000",
		"--secret-env", "spade-s3", "--namespace", "spade").Output()
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var jobs []batchv1.Job
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var j batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(doc), &j); err != nil {
			t.Fatalf("not a batch/v1 Job: %v\n%s", err, doc)
		}
		jobs = append(jobs, j)
	}
	want := []struct {
		name   string
		shards int32
		after  string
	}{
		{"r1-sample-step-0", 1, ""}, {"r1-generate-step-0", 1, "r1-sample-step-0"}, {"r1-gate-step-0", 8, "r1-generate-step-0"},
		{"r1-rollout-step-0", 8, "r1-gate-step-0"}, {"r1-regret-step-0", 1, "r1-rollout-step-0"},
		{"r1-grpo-step-0", 1, "r1-rollout-step-0,r1-regret-step-0"}, {"r1-rollout-step-1", 8, "r1-gate-step-0,r1-grpo-step-0"},
		{"r1-regret-step-1", 1, "r1-rollout-step-1"}, {"r1-grpo-step-1", 1, "r1-rollout-step-1,r1-regret-step-1"},
	}
	if len(jobs) != len(want) {
		t.Fatalf("%d Jobs, want %d:\n%s", len(jobs), len(want), out)
	}
	abs := dir
	for i, j := range jobs {
		w := want[i]
		stage := strings.Split(w.name, "-")[1]
		step := w.name[len(w.name)-1:]
		if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Name != w.name || j.Namespace != "spade" {
			t.Errorf("job %d: %s %s %s/%s, want batch/v1 Job spade/%s", i, j.APIVersion, j.Kind, j.Namespace, j.Name, w.name)
		}
		if j.Labels["spade.dev/run"] != "r1" || j.Labels["spade.dev/stage"] != stage || j.Labels["spade.dev/step"] != step {
			t.Errorf("%s: labels %v", w.name, j.Labels)
		}
		if got := j.Annotations["spade.dev/after"]; got != w.after {
			t.Errorf("%s: waits for %q, want %q", w.name, got, w.after)
		}
		s := j.Spec
		if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || *s.Completions != w.shards ||
			s.Parallelism == nil || *s.Parallelism != w.shards || s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 3 {
			t.Errorf("%s: spec %+v, want Indexed, %d completions and parallelism, backoffLimitPerIndex 3", w.name, s, w.shards)
		}
		pod := s.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
			t.Fatalf("%s: pod %+v", w.name, pod)
		}
		c := pod.Containers[0]
		wantArgs := fmt.Sprintf(`spade --lake %s --run r1 %s --step %s --shard "$JOB_COMPLETION_INDEX" --shards %d`, abs, stage, step, w.shards)
		if c.Image != "registry.example.com/spade:latest" || strings.Join(c.Command, " ") != "sh -c" || len(c.Args) != 1 || c.Args[0] != wantArgs {
			t.Errorf("%s: container %s %v %q, want args %q", w.name, c.Image, c.Command, c.Args, wantArgs)
		}
		if len(c.Env) != 1 || c.Env[0].Name != "AWS_ENDPOINT_URL" || c.Env[0].Value != "http://minio.spade.svc:9000" ||
			len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "spade-s3" {
			t.Errorf("%s: env %+v envFrom %+v", w.name, c.Env, c.EnvFrom)
		}
		cpu := map[string]int64{"sample": 1, "generate": 2, "gate": 8, "rollout": 8, "regret": 2, "grpo": 8}[stage]
		if got := c.Resources.Requests.Cpu().Value(); got != cpu {
			t.Errorf("%s: %d CPUs requested, want %d (the preset's slurm.%s.cpus)", w.name, got, cpu, stage)
		}
		mem := c.Resources.Requests.Memory()
		if stage == "rollout" && mem.Value() != 16<<30 {
			t.Errorf("%s: memory %s, want 16Gi (slurm.rollout.mem 16G)", w.name, mem)
		}
		if stage != "rollout" && !mem.IsZero() {
			t.Errorf("%s: memory %s requested, want none", w.name, mem)
		}
		gpus := c.Resources.Limits["nvidia.com/gpu"]
		if want := map[bool]int64{true: 4}[stage == "grpo"]; gpus.Value() != want {
			t.Errorf("%s: %d GPUs, want %d", w.name, gpus.Value(), want)
		}
	}
}

// TestManyMachinesShowsK8sRenderOutput: the Kubernetes example of docs/many-machines.md is what its
// `spade k8s render` command writes, for a run on an S3 lake of that name.
func TestManyMachinesShowsK8sRenderOutput(t *testing.T) {
	endpoint, _ := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s3test.Client(endpoint).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("spade-lake")}); err != nil {
		t.Fatal(err)
	}
	uri := "s3://spade-lake/prod"
	if out, err := spadeCmd(t, "--lake", uri, "--run", "r1", "init", "--preset", "qwen3-30b-a3b-games", "--set", "slurm.rollout.mem=16G").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	doc, err := os.ReadFile(repoFile("docs/many-machines.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## Kubernetes"):]
	cmdBlock := between(t, section, "```sh\n", "```")
	yamlBlock := between(t, section, "```yaml\n", "```")
	args := strings.Fields(strings.ReplaceAll(cmdBlock, "\\\n", " "))
	if args[0] != "spade" {
		t.Fatalf("the example command is not spade: %q", cmdBlock)
	}
	out, err := spadeCmd(t, args[1:]...).Output()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if string(out) != yamlBlock {
		t.Errorf("docs/many-machines.md shows:\n%s\nthe command writes:\n%s", yamlBlock, out)
	}
}

// between returns the text of s after the first start up to the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q", start)
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		t.Fatalf("no %q after %q", end, start)
	}
	return s[:j]
}
