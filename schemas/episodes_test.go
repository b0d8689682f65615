package schemas_test

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/spadekit/spade/schemas"
)

// episodeRowV1 is the episodes row as schema version 1 wrote it (no neutralized_markers).
type episodeRowV1 struct {
	Step      int64           `parquet:"step"`
	EnvID     string          `parquet:"env_id"`
	EpisodeID string          `parquet:"episode_id"`
	Turns     int32           `parquet:"turns"`
	EndedBy   schemas.EndedBy `parquet:"ended_by"`
	Return    float64         `parquet:"return"`
}

// A version 1 episodes file reads with the version 2 row type, neutralized_markers 0; a count round-trips.
func TestEpisodesV1RowsReadAsV2(t *testing.T) {
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []episodeRowV1{{Step: 2, EnvID: "e", EpisodeID: "x", Turns: 3, EndedBy: schemas.EndedDone, Return: 1}}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[schemas.EpisodeRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(rows) != 1 || rows[0].EpisodeID != "x" || rows[0].Turns != 3 || rows[0].NeutralizedMarkers != 0 {
		t.Fatalf("read %v %+v", err, rows)
	}
	if err := rows[0].Validate(); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	v2 := rows[0]
	v2.NeutralizedMarkers = 5
	if err := parquet.Write(&buf, []schemas.EpisodeRow{v2}); err != nil {
		t.Fatal(err)
	}
	back, err := parquet.Read[schemas.EpisodeRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(back) != 1 || back[0].NeutralizedMarkers != 5 {
		t.Fatalf("v2 round trip: %v %+v", err, back)
	}
	v2.NeutralizedMarkers = -1
	if v2.Validate() == nil {
		t.Fatal("a negative count validated")
	}
}
