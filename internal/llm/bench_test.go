package llm_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// BenchmarkChatThroughput measures chat calls per second with 256 in flight against the scripted server
// answering instantly with a short action (target: ≥ 2,000 calls/s on 2 cores). Client and server share
// the process, so the figure is a lower bound for the client alone.
func BenchmarkChatThroughput(b *testing.B) {
	srv := llmtest.NewServer(func(*llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "I will move north.\n<action>north</action>"}
	}, model)
	defer srv.Close()
	srv.KeepRequests(false)
	s := settings(srv.URL)
	s.MaxInFlight = 256
	s.Timeout = 30 * time.Second
	c, err := llm.New(context.Background(), s, nil)
	if err != nil {
		b.Fatal(err)
	}
	history := []llm.Message{{Role: "system", Content: "You are the Reasoning Agent. Answer with <action>…</action>."}}
	for i := range 4 {
		history = append(history, llm.Message{Role: "user", Content: fmt.Sprintf("Observation %d: you stand in a maze, walls to the east and west.", i)},
			llm.Message{Role: "assistant", Content: "<action>north</action>"})
	}
	history = append(history, llm.Message{Role: "user", Content: "Observation: a door."})
	work := make(chan int)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 256 {
		wg.Go(func() {
			for i := range work {
				comp, err := c.Chat(context.Background(), llm.Request{Role: schemas.RoleAgent, Step: 1, Key: fmt.Sprint(i), Messages: history})
				if err != nil || comp.Failed() {
					b.Errorf("call %d: %v %+v", i, err, comp)
				}
			}
		})
	}
	for i := range b.N {
		work <- i
		if i%4096 == 4095 {
			c.TakeCalls()
		}
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
