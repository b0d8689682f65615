package grpo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// residentTrainer is the torch trainer under grpo.trainer_mode resident: one interpreter (one torchrun
// group) started on the first step and kept, model, reference model and optimizer in memory, each step's
// batch handed to it over a Unix socket (spade_trainer.train.serve documents the protocol). It writes a
// full checkpoint after every step whose number + 1 is a multiple of grpo.save_every and at Close; the
// steps between save their weights only, in the served dtype, and publish them.
//
// The trainer's state is as of a step (`at`). A fresh process loads the newest full checkpoint, so after a
// crash it is behind: Train first re-trains every step after it from the committed grpo_batches
// (TrainerOptions.Batches), unsaved and unpublished, which rebuilds the weights the uninterrupted run had
// bit for bit on a deterministic device, then trains the asked step. A failed request ends the process
// (its state may be half-updated); the next Train starts a new one from the last full checkpoint.
type residentTrainer struct {
	torch *torchTrainer

	mu   sync.Mutex
	proc *residentProcess
	// last is the step and rows of the newest update this trainer answered, for a repeated Train.
	last     int64
	lastRows []schemas.TrainMetricsRow
	// lastLines are the trainer's own lines of that update (its I/O and memory figures).
	lastLines []metricsLine
}

// residentProcess is one running interpreter and its connection.
type residentProcess struct {
	cmd    *exec.Cmd
	conn   net.Conn
	reader *bufio.Reader
	out    *tailWriter
	dir    string // batch files, the config and the extracted source
	clean  func() // removes dir when it is temporary, and the socket's directory
	exited chan struct{}
	// at is the step the process's state is as of; hasState is false for a fresh run (no checkpoint).
	at       int64
	hasState bool
}

// residentReply is one answer line of the trainer.
type residentReply struct {
	Ready    bool              `json:"ready"`
	OK       bool              `json:"ok"`
	Error    string            `json:"error"`
	Step     *int64            `json:"step"`
	FullStep *int64            `json:"full_step"`
	Rows     []json.RawMessage `json:"rows"`
}

// residentRequest is one request line.
type residentRequest struct {
	Op      string `json:"op"`
	Step    int64  `json:"step"`
	Batch   string `json:"batch"`
	Save    bool   `json:"save"`
	Publish bool   `json:"publish"`
	Full    bool   `json:"full"`
}

// fullCheckpointAfter reports whether the resident trainer writes a full checkpoint after step:
// (step + 1) mod save_every = 0.
func fullCheckpointAfter(step int64, saveEvery int) bool {
	return saveEvery > 0 && (step+1)%int64(saveEvery) == 0
}

// Train implements Trainer (see residentTrainer).
func (r *residentTrainer) Train(ctx context.Context, step int64, rows []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error) {
	if err := checkRows(step, rows); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		p, err := r.start(ctx)
		if err != nil {
			return nil, err
		}
		r.proc = p
	}
	p := r.proc
	if p.hasState && p.at >= step {
		if p.at == step && r.lastRows != nil && r.last == step {
			return r.lastRows, nil // the same step again (its metrics were not committed): nothing to train
		}
		return nil, fmt.Errorf("grpo: trainer: step %d: the resident trainer's state is already at step %d (a later update); use a new grpo.checkpoint_dir for a new run", step, p.at)
	}
	saveEvery := r.torch.opts.Config.GRPO.SaveEvery
	if p.hasState {
		for s := p.at + 1; s < step; s++ {
			if err := r.retrain(ctx, p, s, saveEvery); err != nil {
				r.stop()
				return nil, err
			}
		}
	}
	// Colocated, the servers are released now: Publish hands them the weights once they are back.
	publish := r.torch.opts.Config.GRPO.Placement != config.PlacementColocated
	lines, err := r.update(ctx, p, step, rows, true, publish, fullCheckpointAfter(step, saveEvery))
	if err != nil {
		r.stop()
		return nil, err
	}
	out, err := metricsRows(lines, step)
	if err != nil {
		return nil, err
	}
	r.last, r.lastRows, r.lastLines = step, out, lines
	return out, nil
}

// retrain replays step s from its committed batches, neither saved nor published (a full checkpoint only
// when s is a checkpoint step). A step without committed rows trained nothing and is passed over.
func (r *residentTrainer) retrain(ctx context.Context, p *residentProcess, s int64, saveEvery int) error {
	if r.torch.opts.Batches == nil {
		return fmt.Errorf("grpo: trainer: step %d: the resident trainer resumed at step %d and needs the committed grpo_batches of the steps between, but has no lake to read them from", s, p.at)
	}
	rows, err := r.torch.opts.Batches(ctx, s)
	if err != nil {
		return fmt.Errorf("grpo: trainer: re-training step %d after a restart: %w", s, err)
	}
	if len(rows) == 0 {
		return nil
	}
	if err := checkRows(s, rows); err != nil {
		return err
	}
	_, err = r.update(ctx, p, s, rows, false, false, fullCheckpointAfter(s, saveEvery))
	return err
}

// update sends one train request and returns its metric lines; the process's step moves to step.
func (r *residentTrainer) update(ctx context.Context, p *residentProcess, step int64, rows []schemas.GRPOBatchRow, save, publish, full bool) ([]metricsLine, error) {
	batch := filepath.Join(p.dir, fmt.Sprintf("batch-step%06d.npz", step))
	if err := WriteBatchFile(batch, step, rows); err != nil {
		return nil, err
	}
	defer os.Remove(batch)
	reply, err := p.call(ctx, residentRequest{Op: "train", Step: step, Batch: batch, Save: save, Publish: publish, Full: full})
	if err != nil {
		return nil, fmt.Errorf("grpo: trainer: step %d: %w", step, err)
	}
	lines := make([]metricsLine, 0, len(reply.Rows))
	for _, raw := range reply.Rows {
		var m metricsLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("grpo: trainer: step %d: metrics %s: %w", step, raw, err)
		}
		lines = append(lines, m)
	}
	p.at, p.hasState = step, true
	return lines, nil
}

// start runs the interpreter in serve mode and waits until it has loaded its state.
func (r *residentTrainer) start(ctx context.Context) (*residentProcess, error) {
	t := r.torch
	settings, err := t.settings(0) // the step of each update comes with its request
	if err != nil {
		return nil, err
	}
	var dir string
	var cleanups []func()
	if t.opts.WorkDir == "" {
		if dir, err = os.MkdirTemp("", "spade-trainer-*"); err != nil {
			return nil, fmt.Errorf("grpo: trainer: %w", err)
		}
		cleanups = append(cleanups, func() { _ = os.RemoveAll(dir) })
	} else {
		dir = filepath.Join(t.opts.WorkDir, "resident")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("grpo: trainer: %w", err)
		}
	}
	clean := func() {
		for _, c := range cleanups {
			c()
		}
	}
	fail := func(err error) (*residentProcess, error) {
		clean()
		return nil, err
	}
	pyDir := filepath.Join(dir, "py")
	if err := extractTrainer(pyDir); err != nil {
		return fail(err)
	}
	configPath := filepath.Join(dir, "trainer.json")
	body, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.WriteFile(configPath, body, 0o644); err != nil {
		return fail(fmt.Errorf("grpo: trainer: %w", err))
	}
	// A short directory of its own: a Unix socket's path is limited to about 100 bytes.
	sockDir, err := os.MkdirTemp("", "spade-tr-")
	if err != nil {
		return fail(fmt.Errorf("grpo: trainer: %w", err))
	}
	cleanups = append(cleanups, func() { _ = os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fail(fmt.Errorf("grpo: trainer: socket: %w", err))
	}
	defer ln.Close()

	args := []string{"-m", trainerModule, "--config", configPath, "--serve", sock}
	if n := t.opts.Config.GRPO.TrainerGPUs; n > 1 {
		args = append([]string{"-m", "torch.distributed.run", "--standalone", "--nproc_per_node", strconv.Itoa(n)}, args...)
	}
	cmd := exec.Command(t.python, args...)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONSAFEPATH=1", "PYTHONPATH="+joinPath(pyDir, os.Getenv("PYTHONPATH")))
	startOwnGroup(cmd)
	out := &tailWriter{to: t.opts.Log, limit: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("grpo: trainer: cannot run %s (set grpo.python or SPADE_PYTHON to an interpreter with torch and numpy): %w", t.python, err))
	}
	p := &residentProcess{cmd: cmd, out: out, dir: dir, clean: clean, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	select {
	case c := <-accepted:
		p.conn, p.reader = c, bufio.NewReader(c)
	case <-p.exited:
		p.close()
		return nil, fmt.Errorf("grpo: trainer: %s exited before it connected: %s", t.python, strings.TrimSpace(out.tail()))
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("grpo: trainer: %w", ctx.Err())
	}
	ready, err := p.read(ctx)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("grpo: trainer: loading: %w", err)
	}
	if !ready.Ready {
		p.kill()
		return nil, fmt.Errorf("grpo: trainer: loading: %s", ready.Error)
	}
	if ready.Step != nil {
		p.at, p.hasState = *ready.Step, true
	}
	return p, nil
}

// call sends req and reads its answer; a refused request is an error with the trainer's message.
func (p *residentProcess) call(ctx context.Context, req residentRequest) (residentReply, error) {
	line, _ := json.Marshal(req)
	if _, err := p.conn.Write(append(line, '\n')); err != nil {
		return residentReply{}, p.deathError(err)
	}
	reply, err := p.read(ctx)
	if err != nil {
		return reply, err
	}
	if !reply.OK {
		return reply, errors.New(reply.Error)
	}
	return reply, nil
}

// read waits for one answer line; a cancelled ctx kills the process.
func (p *residentProcess) read(ctx context.Context) (residentReply, error) {
	type result struct {
		reply residentReply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		line, err := p.reader.ReadBytes('\n')
		if err != nil {
			done <- result{err: p.deathError(err)}
			return
		}
		var reply residentReply
		if err := json.Unmarshal(line, &reply); err != nil {
			done <- result{err: fmt.Errorf("answer %q: %w", bytes.TrimSpace(line), err)}
			return
		}
		done <- result{reply: reply}
	}()
	select {
	case res := <-done:
		return res.reply, res.err
	case <-ctx.Done():
		p.kill()
		<-done
		return residentReply{}, ctx.Err()
	}
}

// deathError describes a connection that broke: the process ended, with the end of its output.
func (p *residentProcess) deathError(err error) error {
	return fmt.Errorf("the trainer process ended (%v): %s", err, strings.TrimSpace(p.out.tail()))
}

// kill ends the process group at once and releases the process's files.
func (p *residentProcess) kill() {
	killGroup(p.cmd)
	p.close()
}

// close waits for the process to end and removes its temporary files.
func (p *residentProcess) close() {
	if p.conn != nil {
		_ = p.conn.Close()
	}
	<-p.exited
	p.clean()
}

// stop kills the running process after a failed request; the next Train starts a new one.
func (r *residentTrainer) stop() {
	if r.proc != nil {
		r.proc.kill()
		r.proc = nil
	}
}

// Publish hands the weights Train saved for step to the servers (grpo.publish), under grpo.placement
// colocated, where Train saves without publishing because the servers have released their memory.
func (r *residentTrainer) Publish(ctx context.Context, step int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return fmt.Errorf("grpo: trainer: publish of step %d: the trainer is not running", step)
	}
	if _, err := r.proc.call(ctx, residentRequest{Op: "publish", Step: step}); err != nil {
		r.stop()
		return fmt.Errorf("grpo: trainer: step %d: publish: %w", step, err)
	}
	return nil
}

// Close writes a full checkpoint of the trainer's state unless its newest step already has one, then ends
// the process. Closing a trainer that never started does nothing.
func (r *residentTrainer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.proc
	if p == nil {
		return nil
	}
	r.proc = nil
	_, err := p.call(context.Background(), residentRequest{Op: "save"})
	if err == nil {
		line, _ := json.Marshal(residentRequest{Op: "exit"})
		_, _ = p.conn.Write(append(line, '\n'))
	}
	_ = p.conn.Close() // the end of the stream also ends the process
	p.close()
	if err != nil {
		return fmt.Errorf("grpo: trainer: final checkpoint: %w", err)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("grpo: trainer: exited with status %d after its final checkpoint: %s", code, strings.TrimSpace(p.out.tail()))
	}
	return nil
}

// Kill ends the trainer process at once, without a checkpoint (tests: a crash between checkpoints).
func (r *residentTrainer) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
}
