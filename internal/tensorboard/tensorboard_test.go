package tensorboard

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
)

// event is one decoded tensorflow.Event.
type event struct {
	wall    float64
	step    int64
	version string
	values  map[string]float32
}

// readEvents decodes an event file by its framing and the Event protobuf, written out here by hand (no
// protowire), checking both CRCs of every record.
func readEvents(t *testing.T, path string) []event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	mask := func(p []byte) uint32 { c := crc32.Checksum(p, table); return ((c >> 15) | (c << 17)) + 0xa282ead8 }
	var out []event
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("truncated record header: %d bytes left", len(b))
		}
		n := binary.LittleEndian.Uint64(b[:8])
		if got, want := binary.LittleEndian.Uint32(b[8:12]), mask(b[:8]); got != want {
			t.Fatalf("length CRC %08x, want %08x", got, want)
		}
		if uint64(len(b)) < 12+n+4 {
			t.Fatalf("truncated record: length %d, %d bytes left", n, len(b))
		}
		data := b[12 : 12+n]
		if got, want := binary.LittleEndian.Uint32(b[12+n:16+n]), mask(data); got != want {
			t.Fatalf("data CRC %08x, want %08x", got, want)
		}
		out = append(out, decodeEvent(t, data))
		b = b[16+n:]
	}
	return out
}

// fields splits a protobuf message into (field number, wire type, value) triples: varints and fixed
// values as numbers, length-delimited ones as bytes.
type field struct {
	num, typ int
	u        uint64
	bytes    []byte
}

func fields(t *testing.T, b []byte) []field {
	t.Helper()
	varint := func() uint64 {
		var v uint64
		for shift := 0; ; shift += 7 {
			if len(b) == 0 || shift > 63 {
				t.Fatal("bad varint")
			}
			c := b[0]
			b = b[1:]
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return v
			}
		}
	}
	var out []field
	for len(b) > 0 {
		key := varint()
		f := field{num: int(key >> 3), typ: int(key & 7)}
		switch f.typ {
		case 0:
			f.u = varint()
		case 1:
			f.u, b = binary.LittleEndian.Uint64(b[:8]), b[8:]
		case 5:
			f.u, b = uint64(binary.LittleEndian.Uint32(b[:4])), b[4:]
		case 2:
			n := varint()
			f.bytes, b = b[:n], b[n:]
		default:
			t.Fatalf("unexpected wire type %d", f.typ)
		}
		out = append(out, f)
	}
	return out
}

func decodeEvent(t *testing.T, data []byte) event {
	e := event{values: map[string]float32{}}
	for _, f := range fields(t, data) {
		switch f.num {
		case 1:
			e.wall = math.Float64frombits(f.u)
		case 2:
			e.step = int64(f.u)
		case 3:
			e.version = string(f.bytes)
		case 5: // Summary
			for _, v := range fields(t, f.bytes) {
				if v.num != 1 {
					t.Fatalf("summary field %d", v.num)
				}
				var tag string
				var val float32
				for _, x := range fields(t, v.bytes) {
					switch x.num {
					case 1:
						tag = string(x.bytes)
					case 2:
						val = math.Float32frombits(uint32(x.u))
					}
				}
				if _, dup := e.values[tag]; dup {
					t.Fatalf("step %d: tag %s twice", e.step, tag)
				}
				e.values[tag] = val
			}
		default:
			t.Fatalf("unexpected Event field %d", f.num)
		}
	}
	return e
}

// expectedSQL gives, per figure, the values the lake holds, as (tag, step, value) rows written apart
// from figureSQL: the Agent's rates from episode_outcomes, train/ from train_metrics, the rest from the
// models the report charts.
const expectedSQL = `
select 'agent/solve_rate_unhinted' as tag, step, avg(success::double) as v from episode_outcomes where not hinted and counted group by step
union all select 'agent/solve_rate_hinted', step, avg(success::double) from episode_outcomes where hinted and counted group by step
union all select 'agent/return_unhinted', step, avg(episode_return) from episode_outcomes where not hinted and counted group by step
union all select 'agent/return_hinted', step, avg(episode_return) from episode_outcomes where hinted and counted group by step
union all select 'curriculum/regret', step, regret from regret_curve
union all select 'curriculum/regret_smoothed', step, regret_smoothed from regret_curve
union all select 'curriculum/band_share', window_start, band_share from learnable_band
union all select 'curriculum/vendi_per_n', window_index * getvariable('metrics_window'), vendi_per_n from vendi_by_window
union all select 'curriculum/mean_cosine_distance', window_index * getvariable('metrics_window'), mean_cosine_distance from vendi_by_window
union all select 'designer/reward', pool_step, avg(reward) from designer_rewards where final and variant = 'regret_anchor' group by pool_step
union all select 'gate/acceptance', step, acceptance from acceptance
union all select 'gate/attempt_acceptance', step, attempt_acceptance from acceptance
union all select 'gate/attempts_per_slot', step, attempts_per_slot from acceptance
union all select 'cost/agent_tokens', step, agent_tokens from cost
union all select 'cost/designer_tokens', step, designer_tokens from cost
union all select 'cost/agent_latency_ms', step, agent_latency_ms from cost
union all select 'cost/env_cpu_seconds', step, env_cpu_seconds from cost
union all select 'train/' || role || '/' || c.key, step, c.value from (
	select step, role, unnest(map_entries(map {'loss': loss, 'kl': kl, 'clip_frac': clip_frac, 'clip_frac_low': clip_frac_low,
		'clip_frac_high': clip_frac_high, 'ratio_mean': ratio_mean, 'ratio_max': ratio_max, 'is_weight_mean': is_weight_mean,
		'grad_norm': grad_norm, 'lr': lr, 'tokens': tokens::double, 'samples': samples::double, 'seconds': seconds,
		'left_out_broken_prefix': left_out_broken_prefix::double, 'left_out_missing_tokens': left_out_missing_tokens::double,
		'left_out_missing_call': left_out_missing_call::double, 'peak_memory_bytes': peak_memory_bytes::double,
		'tokens_per_second': tokens / seconds})) as c
	from train_metrics)
`

// lakeRun is a synthetic run with train_metrics and embeddings (every figure has values).
func lakeRun(t *testing.T, steps int) *analytics.Session {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.Small()
	o.Steps, o.Train = steps, true
	if err := synth.Write(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	if _, err := analytics.EnsureEmbeddings(ctx, lk, "r", analytics.EmbedderSpec{}); err != nil {
		t.Fatal(err)
	}
	s, err := analytics.OpenCached(ctx, lk, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type key struct {
	tag  string
	step int64
}

func expected(t *testing.T, s *analytics.Session) map[key]float64 {
	t.Helper()
	rows, err := s.DB.QueryContext(context.Background(), "select tag, step, v from ("+expectedSQL+") where v is not null")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[key]float64{}
	for rows.Next() {
		var k key
		var v float64
		if err := rows.Scan(&k.tag, &k.step, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// The exported file reads back by the TFRecord framing and the Event protobuf: the file_version event
// first, then one event per step, and every (tag, step) value the lake holds, no other.
func TestExportReadsBackAsTheLake(t *testing.T) {
	ctx := context.Background()
	s := lakeRun(t, 20)
	figures, err := Figures(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "r"), "spade")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(figures, timeNow()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "r", "events.out.tfevents.*"))
	if len(matches) != 1 {
		t.Fatalf("event files: %v", matches)
	}
	events := readEvents(t, matches[0])
	if len(events) < 2 || events[0].version != "brain.Event:2" || len(events[0].values) != 0 {
		t.Fatalf("first event %+v, want file_version brain.Event:2", events[0])
	}
	got := map[key]float32{}
	last := int64(-1)
	for _, e := range events[1:] {
		if e.step <= last || e.wall < 1e9 {
			t.Errorf("event step %d after %d, wall time %v", e.step, last, e.wall)
		}
		last = e.step
		for tag, v := range e.values {
			got[key{tag, e.step}] = v
		}
	}
	want := expected(t, s)
	tags := map[string]bool{}
	for k, v := range want {
		tags[k.tag] = true
		g, ok := got[k]
		if !ok {
			t.Errorf("%s at step %d: missing (lake %g)", k.tag, k.step, v)
			continue
		}
		if g != float32(v) {
			t.Errorf("%s at step %d: file %g, lake %g", k.tag, k.step, g, float32(v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s at step %d = %g: not a value of the lake", k.tag, k.step, v)
		}
	}
	names := make([]string, 0, len(tags))
	for tag := range tags {
		names = append(names, tag)
	}
	sort.Strings(names)
	// Every group has values in this run: the check above covered each of them.
	for _, tag := range []string{"agent/solve_rate_unhinted", "curriculum/band_share", "curriculum/vendi_per_n", "designer/reward",
		"gate/acceptance", "cost/agent_tokens", "train/agent/loss", "train/designer/grad_norm", "train/agent/tokens_per_second", "train/agent/lr"} {
		if !tags[tag] {
			t.Errorf("no values of %s (tags %v)", tag, names)
		}
	}
	t.Logf("%d values of %d tags over %d steps", len(got), len(names), len(events)-1)
}

// The live writer (spade run --tensorboard) writes, step after step, each value once it has settled: by
// the end the same values as the export, a window's only after its last step.
func TestLiveWritesSettledValuesOnce(t *testing.T) {
	ctx := context.Background()
	s := lakeRun(t, 12) // windows of 8: the second is partial and never settles
	dir := t.TempDir()
	live, err := NewLive(dir)
	if err != nil {
		t.Fatal(err)
	}
	for step := int64(0); step < 12; step++ {
		if _, err := live.Step(ctx, s, step); err != nil {
			t.Fatal(err)
		}
		// What a reader sees after each step: the file is flushed.
		events := readEvents(t, live.Path())
		for _, e := range events[1:] {
			if _, ok := e.values["curriculum/band_share"]; ok && e.step+8-1 > step {
				t.Errorf("after step %d: band share of the window at %d written before it settled", step, e.step)
			}
		}
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	want := expected(t, s)
	seen := map[key]bool{}
	for _, e := range readEvents(t, live.Path())[1:] {
		for tag, v := range e.values {
			k := key{tag, e.step}
			if seen[k] {
				t.Errorf("%s at %d written twice", tag, e.step)
			}
			seen[k] = true
			if float32(want[k]) != v {
				t.Errorf("%s at %d: %g, lake %g", tag, e.step, v, want[k])
			}
		}
	}
	for k := range want {
		if !seen[k] && !(k.tag == "curriculum/band_share" || k.tag == "curriculum/vendi_per_n" || k.tag == "curriculum/mean_cosine_distance") {
			t.Errorf("%s at %d never written", k.tag, k.step)
		}
	}
	if !seen[key{"curriculum/band_share", 0}] || seen[key{"curriculum/band_share", 8}] {
		t.Errorf("band share: the complete window 0 must be written, the partial window 8 not")
	}
}

// TensorBoard's own event reader, when Debian's python3 (or SPADE_TENSORBOARD_PYTHON) has the tensorboard
// package, reads every value too; without it the test skips and the files are read back only by the
// decoder above.
func TestTensorBoardReadsTheFile(t *testing.T) {
	python := "/usr/bin/python3"
	if p := os.Getenv("SPADE_TENSORBOARD_PYTHON"); p != "" {
		python = p
	}
	if err := exec.Command(python, "-c", "import tensorboard").Run(); err != nil {
		// Not a part spade needs (Debian packages no tensorboard): a skip, also under CI.
		t.Skipf("%s has no tensorboard package", python)
	}
	ctx := context.Background()
	s := lakeRun(t, 8)
	figures, err := Figures(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := Create(dir, "spade")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(figures, timeNow()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	script := `import sys
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
acc.Reload()
tags = acc.Tags()
n = 0
for tag in tags.get("scalars", []):
    for e in acc.Scalars(tag):
        print(tag, e.step, repr(e.value)); n += 1
for tag in tags.get("tensors", []):
    for e in acc.Tensors(tag):
        import tensorboard.util.tensor_util as tu
        print(tag, e.step, repr(float(tu.make_ndarray(e.tensor_proto)))); n += 1
`
	out, err := exec.Command(python, "-c", script, dir).Output()
	if err != nil {
		t.Fatalf("tensorboard's reader: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(figures) {
		t.Errorf("tensorboard read %d values, the file has %d", len(lines), len(figures))
	}
	want := map[string]float32{}
	for _, f := range figures {
		want[fmt.Sprintf("%s %d", f.Tag, f.Step)] = float32(f.Value)
	}
	for _, l := range lines {
		var tag string
		var step int64
		var v float64
		if _, err := fmt.Sscan(l, &tag, &step, &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if w, ok := want[fmt.Sprintf("%s %d", tag, step)]; !ok || float32(v) != w {
			t.Errorf("tensorboard read %s at %d = %g, file %g (%v)", tag, step, v, w, ok)
		}
	}
}

// ReadFile (what the CLI tests read files with) returns what the independent decoder reads.
func TestReadFileAgreesWithTheDecoder(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	in := []Scalar{{Tag: "a/x", Step: 0, Value: 0.25}, {Tag: "a/y", Step: 0, Value: -3}, {Tag: "a/x", Step: 7, Value: 6069949}}
	if err := w.Write(in, timeNow()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, w.Path())
	if len(got) != 3 || len(events) != 3 {
		t.Fatalf("ReadFile %v, decoder %d events", got, len(events))
	}
	for i, s := range got {
		if s.Tag != in[i].Tag || s.Step != in[i].Step || float32(s.Value) != float32(in[i].Value) {
			t.Errorf("value %d: %+v, want %+v", i, s, in[i])
		}
		var e event
		for _, ev := range events[1:] {
			if ev.step == s.Step {
				e = ev
			}
		}
		if e.values[s.Tag] != float32(s.Value) {
			t.Errorf("decoder %v, ReadFile %+v", e.values, s)
		}
	}
	// A flipped byte fails the CRC.
	b, _ := os.ReadFile(w.Path())
	b[len(b)-6] ^= 1
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, b, 0o644)
	if _, err := ReadFile(bad); err == nil {
		t.Error("a corrupt record read without an error")
	}
}
