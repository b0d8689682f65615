package main

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/stages/cluster"
	steprun "github.com/spadekit/spade/stages/run"
)

// k8sRenderOptions are the options of `spade k8s render`.
type k8sRenderOptions struct {
	globalOptions
	Steps, Only, Image, Namespace, Command string
	Shards, BackoffLimitPerIndex           int
	// Env are --env NAME=VALUE; Secrets are --secret-env NAME.
	Env, Secrets []string
}

func newK8sCommand() *cli.Command {
	return &cli.Command{
		Name:  "k8s",
		Usage: "Kubernetes: render a run's steps as Indexed Jobs",
		Subcommands: []*cli.Command{{
			Name:  "render",
			Usage: "write the Indexed Jobs of --steps (one per stage and step) as YAML",
			Description: "One batch/v1 Job per due stage and step, in the order `spade run` runs them: completionMode\n" +
				"Indexed with as many completions as the stage has shards (--shards for gate, rollout and eval, 1 for\n" +
				"the others), the shard from JOB_COMPLETION_INDEX, backoffLimitPerIndex so a failed shard is retried\n" +
				"alone, resources from the run's slurm.* settings, and the annotation " + cluster.AfterAnnotation + " naming\n" +
				"the Jobs that must complete first (Kubernetes has no dependencies between Jobs: apply each once\n" +
				"those are complete, e.g. with kubectl wait --for=condition=complete job/NAME).\n\n" +
				"Example: spade --lake s3://spade-lake/prod --run r1 k8s render --steps 12 --shards 8 \\\n" +
				"           --image registry.example.com/spade:latest --env AWS_ENDPOINT_URL=http://minio:9000 --secret-env spade-s3",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "steps", Required: true, Usage: "steps to render: " + steprun.StepsGrammar},
				&cli.StringFlag{Name: "only", Usage: "comma-separated stages to render (default: every stage)"},
				&cli.IntFlag{Name: "shards", Value: 1, Usage: "indices of each gate, rollout and eval Job"},
				&cli.StringFlag{Name: "image", Required: true, Usage: "container image with spade"},
				&cli.StringFlag{Name: "command", Value: "spade", Usage: "the command that runs spade in the image, split at spaces"},
				&cli.StringFlag{Name: "namespace", Usage: "the Jobs' namespace (default: kubectl's)"},
				&cli.IntFlag{Name: "backoff-limit-per-index", Value: 3, Usage: "retries of a failed index (shard), alone"},
				&cli.StringSliceFlag{Name: "env", Usage: "NAME=VALUE environment variable of the containers (repeat)"},
				&cli.StringSliceFlag{Name: "secret-env", Usage: "secret whose keys become environment variables (repeat)"},
			},
			Action: func(c *cli.Context) error {
				return runK8sRender(c.Context, k8sRenderOptions{globalOptions: globalsFrom(c), Steps: c.String("steps"), Only: c.String("only"),
					Image: c.String("image"), Namespace: c.String("namespace"), Command: c.String("command"), Shards: c.Int("shards"),
					BackoffLimitPerIndex: c.Int("backoff-limit-per-index"), Env: c.StringSlice("env"), Secrets: c.StringSlice("secret-env")})
			},
		}},
	}
}

// runK8sRender writes the run's Indexed Jobs for opts.Steps to opts.Out.
func runK8sRender(ctx context.Context, opts k8sRenderOptions) error {
	steps, err := steprun.ParseSteps(opts.Steps)
	if err != nil {
		return asUsage(err)
	}
	if opts.Shards < 1 {
		return usageError("--shards must be >= 1, got %d", opts.Shards)
	}
	if opts.BackoffLimitPerIndex < 0 {
		return usageError("--backoff-limit-per-index must be >= 0, got %d", opts.BackoffLimitPerIndex)
	}
	var env []corev1.EnvVar
	for _, e := range opts.Env {
		name, value, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return usageError("--env %q: want NAME=VALUE", e)
		}
		env = append(env, corev1.EnvVar{Name: name, Value: value})
	}
	_, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	uri, err := nodeLakeURI(opts.LakeURI)
	if err != nil {
		return err
	}
	stages, err := onlyStages(opts.Only)
	if err != nil {
		return err
	}
	jobs, err := cluster.RenderK8s(cfg, stages, steps, cluster.K8sOptions{Run: run, LakeURI: uri, Shards: opts.Shards,
		Image: opts.Image, Command: config.SplitArgs(opts.Command), Namespace: opts.Namespace,
		BackoffLimitPerIndex: int32(opts.BackoffLimitPerIndex), Env: env, SecretEnv: opts.Secrets})
	if err != nil {
		return asUsage(err)
	}
	body, err := cluster.WriteYAML(jobs)
	if err != nil {
		return err
	}
	_, err = opts.Out.Write(body)
	return err
}
