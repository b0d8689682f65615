package analytics

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// seedDir holds the hand-made seed tables of the golden tests: one CSV per table (header = the schema's
// column names, lists as JSON arrays) and run.json (config keys overriding the default preset).
var seedDir = filepath.Join("..", "..", "testdata", "analytics", "seed")

// loadSeedRun writes the seed tables into a fresh local lake as run "seed", one partition per step.
func loadSeedRun(t testing.TB) *lake.Lake {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	cfg := config.Default()
	cfg.Sample.Corpus = ""
	raw, err := os.ReadFile(filepath.Join(seedDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Merge(raw); err != nil {
		t.Fatal(err)
	}
	laketest.NewRun(t, lk, "seed", cfg)
	writers := map[string]func() error{
		"samples":      func() error { return writeSeed[schemas.SampleRow](ctx, lk, "samples") },
		"candidates":   func() error { return writeSeed[schemas.CandidateRow](ctx, lk, "candidates") },
		"gate_results": func() error { return writeSeed[schemas.GateResultRow](ctx, lk, "gate_results") },
		"envs":         func() error { return writeSeed[schemas.EnvRow](ctx, lk, "envs") },
		"episodes":     func() error { return writeSeed[schemas.EpisodeRow](ctx, lk, "episodes") },
		"turns":        func() error { return writeSeed[schemas.TurnRow](ctx, lk, "turns") },
		"llm_calls":    func() error { return writeSeed[schemas.LLMCallRow](ctx, lk, "llm_calls") },
		"embeddings":   func() error { return writeSeed[schemas.EmbeddingRow](ctx, lk, "embeddings") },
	}
	for table, write := range writers {
		if err := write(); err != nil {
			t.Fatalf("seed %s: %v", table, err)
		}
	}
	return lk
}

// writeSeed reads seed/<table>.csv into rows of T and commits them, one partition per step.
func writeSeed[T schemas.Row](ctx context.Context, lk *lake.Lake, table string) error {
	rows, err := readCSVRows[T](filepath.Join(seedDir, table+".csv"))
	if err != nil {
		return err
	}
	byStep := map[int64][]T{}
	for _, r := range rows {
		step := reflect.ValueOf(r).FieldByName("Step").Int()
		byStep[step] = append(byStep[step], r)
	}
	for step, part := range byStep {
		if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "seed", Table: table, Step: step}, part, lake.WriteOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// readCSVRows decodes a CSV whose header names parquet columns into rows of T.
func readCSVRows[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var zero T
	typ := reflect.TypeOf(zero)
	fieldOf := map[string]int{}
	for i := 0; i < typ.NumField(); i++ {
		name := strings.Split(typ.Field(i).Tag.Get("parquet"), ",")[0]
		fieldOf[name] = i
	}
	header := records[0]
	var out []T
	for line, rec := range records[1:] {
		v := reflect.New(typ).Elem()
		for c, col := range header {
			i, ok := fieldOf[col]
			if !ok {
				return nil, fmt.Errorf("%s: unknown column %q", path, col)
			}
			if err := setField(v.Field(i), rec[c]); err != nil {
				return nil, fmt.Errorf("%s line %d column %s: %w", path, line+2, col, err)
			}
		}
		out = append(out, v.Interface().(T))
	}
	return out, nil
}

func setField(f reflect.Value, text string) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(text)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return err
		}
		f.SetFloat(x)
	case reflect.Slice:
		if text == "" {
			return nil
		}
		p := reflect.New(f.Type())
		if err := json.Unmarshal([]byte(text), p.Interface()); err != nil {
			return err
		}
		f.Set(p.Elem())
	default:
		return fmt.Errorf("unsupported kind %s", f.Kind())
	}
	return nil
}
