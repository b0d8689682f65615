package grpo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// publisher is a trainer that can publish a saved step later: the resident trainer, which under
// grpo.placement colocated saves while the servers are released and publishes once they are back.
type publisher interface {
	Publish(ctx context.Context, step int64) error
}

// memoryRoute is one request of the colocated sequence and the server flag a 404 asks for.
type memoryRoute struct {
	path, body, flag string
}

// memoryRoutes returns the requests that release and take back a server's GPU memory under a publish
// mode: SGLang's /release_memory_occupation and /resume_memory_occupation (every region: weights and
// KV cache), vLLM's /sleep?level=1 (weights to host memory, KV cache dropped) and /wake_up, weights first
// and the KV cache after, as vLLM documents for reloading weights.
func memoryRoutes(mode config.Publish) (release []memoryRoute, resume []memoryRoute) {
	if mode == config.PublishVLLMReload {
		flag := "start vLLM with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1"
		return []memoryRoute{{"/sleep?level=1", "", flag}},
			[]memoryRoute{{"/wake_up?tags=weights", "", flag}, {"/wake_up?tags=kv_cache", "", flag}}
	}
	flag := "start SGLang with --enable-memory-saver"
	return []memoryRoute{{"/release_memory_occupation", "{}", flag}}, []memoryRoute{{"/resume_memory_occupation", "{}", flag}}
}

// postMemoryRoute sends one memory request to the server at base (an OpenAI root or the server root).
// A 404 names the flag the server needs; another failure its status and answer.
func postMemoryRoute(ctx context.Context, base string, r memoryRoute) error {
	root := strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+r.path, body)
	if err != nil {
		return err
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("grpo: placement colocated: POST %s%s: %w", root, r.path, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("grpo: placement colocated: %s does not serve POST %s (HTTP 404): %s, or set grpo.placement separate", root, r.path, r.flag)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("grpo: placement colocated: POST %s%s: HTTP %d: %s", root, r.path, resp.StatusCode, bytes.TrimSpace(answer))
	}
	return nil
}

// waitIdle waits until this process has no LLM call in flight, so no server is released under a call.
func waitIdle(ctx context.Context, env *stage.Env) error {
	for env.LLMLoad().Calls > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// trainColocated runs one update on the servers' GPUs: once no call of this process is in flight every
// server of grpo.publish_urls releases its memory, the trainer trains and saves, every server takes its
// memory back, and only then are the new weights published (loaded into every server). A server that
// does not serve the memory routes fails the step before the trainer starts. The servers are resumed
// whether the update succeeded or not.
func trainColocated(ctx context.Context, env *stage.Env, trainer Trainer, step int64, rows []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error) {
	cfg := env.Config
	pub, ok := trainer.(publisher)
	if !ok {
		return nil, errors.New("grpo: placement colocated needs the resident trainer (grpo.trainer_mode resident), which publishes after the servers are back")
	}
	if err := waitIdle(ctx, env); err != nil {
		return nil, err
	}
	servers := cfg.PublishURLs()
	release, resume := memoryRoutes(cfg.GRPO.Publish)
	resumeAll := func(upTo int) error {
		var errs []error
		for _, url := range servers[:upTo] {
			for _, r := range resume {
				if err := postMemoryRoute(context.WithoutCancel(ctx), url, r); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
		return errors.Join(errs...)
	}
	for i, url := range servers {
		for _, r := range release {
			if err := postMemoryRoute(ctx, url, r); err != nil {
				return nil, errors.Join(err, resumeAll(i))
			}
		}
	}
	env.Logger().Info("grpo: servers released their GPU memory", "step", step, "servers", len(servers))
	metrics, trainErr := trainer.Train(ctx, step, rows)
	if err := resumeAll(len(servers)); err != nil {
		return nil, errors.Join(trainErr, err)
	}
	if trainErr != nil {
		return nil, trainErr
	}
	if err := pub.Publish(ctx, step); err != nil {
		return nil, err
	}
	return metrics, nil
}
