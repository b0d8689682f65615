package cluster

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/spadekit/spade/internal/config"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// AfterAnnotation names, on a rendered Job, the Jobs (comma-separated names) that must succeed before
// it starts: Kubernetes has no dependencies between Jobs, so whatever applies them (a workflow engine,
// a script of `kubectl wait --for=condition=complete`) follows this annotation.
const AfterAnnotation = "spade.dev/after"

// K8sOptions configure RenderK8s.
type K8sOptions struct {
	// Run names the run; LakeURI is the lake the pods reach (s3://bucket/prefix).
	Run, LakeURI string
	// Shards is the number of indices of each fan-out stage's Job (steprun.FanOut); < 1 counts as 1.
	Shards int
	// Image is the container image with spade; Command the words that run spade in it (default spade).
	Image   string
	Command []string
	// Namespace is the Jobs' namespace ("" leaves it to kubectl).
	Namespace string
	// BackoffLimitPerIndex is how often a failed index is retried, alone (committed shards stay).
	BackoffLimitPerIndex int32
	// Env are the containers' environment variables (AWS_ENDPOINT_URL, OPENAI_BASE_URL, ...).
	Env []corev1.EnvVar
	// SecretEnv names secrets whose keys become environment variables (the lake's credentials).
	SecretEnv []string
}

// RenderK8s returns the Jobs of steprun.Plan for steps: one Indexed Job per stage and step, with as
// many completions as the stage's shards, the shard taken from JOB_COMPLETION_INDEX, a failed index
// retried alone (backoffLimitPerIndex), resources from the run's slurm.* settings (cpus, mem, a gpu gres
// as nvidia.com/gpu), and the Jobs it waits for in the AfterAnnotation. The Jobs come in plan order.
func RenderK8s(cfg *config.Config, stages []stage.Stage, steps []int64, opts K8sOptions) ([]batchv1.Job, error) {
	if opts.Image == "" {
		return nil, fmt.Errorf("k8s: no image: pass the image that has spade")
	}
	command := opts.Command
	if len(command) == 0 {
		command = []string{"spade"}
	}
	plan := steprun.Plan(cfg, stages, steps, opts.Shards)
	names := make([]string, len(plan))
	jobs := make([]batchv1.Job, 0, len(plan))
	for i, t := range plan {
		names[i] = JobName(opts.Run, t.Name(), t.Step)
		res, err := k8sResources(Resources(cfg, t.Name()))
		if err != nil {
			return nil, fmt.Errorf("k8s: %s: %w", t.Name(), err)
		}
		line := shellJoin(append(append([]string(nil), command...), "--lake", opts.LakeURI, "--run", opts.Run, string(t.Name()),
			"--step", strconv.FormatInt(t.Step, 10)))
		line += ` --shard "$JOB_COMPLETION_INDEX" --shards ` + strconv.Itoa(t.Shards)
		var after []string
		for _, j := range t.After {
			after = append(after, names[j])
		}
		n := int32(t.Shards)
		var envFrom []corev1.EnvFromSource
		for _, s := range opts.SecretEnv {
			envFrom = append(envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
		}
		job := batchv1.Job{
			TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: opts.Namespace,
				Labels: map[string]string{"spade.dev/run": opts.Run, "spade.dev/stage": string(t.Name()), "spade.dev/step": strconv.FormatInt(t.Step, 10)}},
			Spec: batchv1.JobSpec{
				CompletionMode:       ptr(batchv1.IndexedCompletion),
				Completions:          ptr(n),
				Parallelism:          ptr(n),
				BackoffLimitPerIndex: ptr(opts.BackoffLimitPerIndex),
				Template: corev1.PodTemplateSpec{
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{
							Name: "spade", Image: opts.Image,
							Command: []string{"sh", "-c"}, Args: []string{line},
							Env: opts.Env, EnvFrom: envFrom, Resources: res,
						}},
					},
				},
			},
		}
		if len(after) > 0 {
			job.Annotations = map[string]string{AfterAnnotation: strings.Join(after, ",")}
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// WriteYAML writes jobs as one YAML stream (documents separated by ---), in order.
func WriteYAML(jobs []batchv1.Job) ([]byte, error) {
	var b bytes.Buffer
	for i, j := range jobs {
		body, err := yaml.Marshal(j)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(body)
	}
	return b.Bytes(), nil
}

// JobName is the Job (and Slurm job) name of a stage of a step: RUN-STAGE-step-N.
func JobName(run string, name stage.Name, step int64) string {
	return strings.ToLower(fmt.Sprintf("%s-%s-step-%d", run, name, step))
}

// k8sResources maps a stage's Slurm resources onto container requests: cpus, mem (Slurm's K/M/G/T
// suffixes are binary, as Kubernetes' Ki/Mi/Gi/Ti; a bare number is megabytes) and a gpu gres
// ("gpu:8", "gpu:a100:8") as nvidia.com/gpu limits.
func k8sResources(job config.SlurmJob) (corev1.ResourceRequirements, error) {
	req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(max(job.CPUs, 1)), resource.DecimalSI)}
	if job.Mem != "" {
		m := strings.ToUpper(strings.TrimSpace(job.Mem))
		unit := "Mi"
		if u, ok := map[byte]string{'K': "Ki", 'M': "Mi", 'G': "Gi", 'T': "Ti"}[m[len(m)-1]]; ok {
			m, unit = m[:len(m)-1], u
		}
		q, err := resource.ParseQuantity(m + unit)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("mem %q is not a size (16G, 4096M)", job.Mem)
		}
		req[corev1.ResourceMemory] = q
	}
	out := corev1.ResourceRequirements{Requests: req}
	if g := job.Gres; strings.HasPrefix(g, "gpu") {
		f := strings.Split(g, ":")
		count := "1"
		if len(f) > 1 {
			count = f[len(f)-1]
		}
		q, err := resource.ParseQuantity(count)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("gres %q: want gpu:N", g)
		}
		out.Limits = corev1.ResourceList{"nvidia.com/gpu": q}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
