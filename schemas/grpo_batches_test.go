package schemas_test

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/spadekit/spade/schemas"
)

// grpoBatchRowV1 is the grpo_batches row as schema version 1 wrote it (no loss_mask, no pad).
type grpoBatchRowV1 struct {
	Step        int64        `parquet:"step"`
	Role        schemas.Role `parquet:"role"`
	Batch       int32        `parquet:"batch"`
	SampleID    string       `parquet:"sample_id"`
	EpisodeID   string       `parquet:"episode_id"`
	EnvID       string       `parquet:"env_id"`
	PromptIDs   []int32      `parquet:"prompt_ids,list"`
	ResponseIDs []int32      `parquet:"response_ids,list"`
	OldLogprobs []float32    `parquet:"old_logprobs,list"`
	Advantage   float64      `parquet:"advantage"`
	ISWeight    float64      `parquet:"is_weight"`
	ISCap       float64      `parquet:"is_cap"`
}

// TestGRPOBatchesV1RowsReadAsV2 checks that a version 1 file reads with the version 2 row type: an empty
// loss_mask (every response token trained) and pad false.
func TestGRPOBatchesV1RowsReadAsV2(t *testing.T) {
	var buf bytes.Buffer
	old := []grpoBatchRowV1{{Step: 3, Role: schemas.RoleAgent, SampleID: "c1#0", PromptIDs: []int32{1, 2}, ResponseIDs: []int32{3, 4},
		OldLogprobs: []float32{-0.5, -0.25}, Advantage: 1.5, ISWeight: 1}}
	if err := parquet.Write(&buf, old); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[schemas.GRPOBatchRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].SampleID != "c1#0" || len(rows[0].LossMask) != 0 || rows[0].Pad || rows[0].Advantage != 1.5 {
		t.Fatalf("read %+v", rows)
	}
	if err := rows[0].Validate(); err != nil || !rows[0].Trained(1) {
		t.Fatalf("a v1 row: %v, trained %v", err, rows[0].Trained(1))
	}
	// And a v2 row with a mask round-trips.
	buf.Reset()
	v2 := []schemas.GRPOBatchRow{{Step: 3, Role: schemas.RoleAgent, SampleID: "e1", PromptIDs: []int32{1}, ResponseIDs: []int32{3, 4, 5},
		OldLogprobs: []float32{-0.5, 0, -0.1}, LossMask: []int8{1, 0, 1}, Advantage: 1, ISWeight: 1}}
	if err := parquet.Write(&buf, v2); err != nil {
		t.Fatal(err)
	}
	back, err := parquet.Read[schemas.GRPOBatchRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(back) != 1 || len(back[0].LossMask) != 3 || back[0].LossMask[1] != 0 || back[0].Trained(1) || !back[0].Trained(2) {
		t.Fatalf("v2 round trip: %v %+v", err, back)
	}
	bad := v2[0]
	bad.LossMask = []int8{1, 0}
	if err := bad.Validate(); err == nil {
		t.Fatal("a mask of the wrong length validated")
	}
}

// trainMetricsRowV1 is the train_metrics row as schema version 1 wrote it (no left_out_* counts).
type trainMetricsRowV1 struct {
	Step           int64        `parquet:"step"`
	Role           schemas.Role `parquet:"role"`
	Loss           float64      `parquet:"loss"`
	Samples        int64        `parquet:"samples"`
	WeightsVersion string       `parquet:"weights_version"`
}

// TestTrainMetricsV1RowsReadAsV2 checks that a version 1 file reads with the left-out counts 0.
func TestTrainMetricsV1RowsReadAsV2(t *testing.T) {
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []trainMetricsRowV1{{Step: 2, Role: schemas.RoleAgent, Loss: 0.5, Samples: 7, WeightsVersion: "v2"}}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[schemas.TrainMetricsRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(rows) != 1 {
		t.Fatalf("read: %v %v", rows, err)
	}
	if r := rows[0]; r.Samples != 7 || r.Loss != 0.5 || r.LeftOutBrokenPrefix != 0 || r.LeftOutMissingTokens != 0 || r.LeftOutMissingCall != 0 || r.Validate() != nil {
		t.Fatalf("v1 row read as %+v (%v)", r, r.Validate())
	}
	bad := rows[0]
	bad.LeftOutMissingCall = -1
	if bad.Validate() == nil {
		t.Fatal("a negative left-out count validated")
	}
}
