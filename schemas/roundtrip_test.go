package schemas_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// rowType returns the Go row type of a table (through a zero row the spec's schema was made from).
func rowType(t *testing.T, spec schemas.Spec) reflect.Type {
	t.Helper()
	rt := spec.RowType()
	if rt.Kind() != reflect.Struct {
		t.Fatalf("%s: row type %v is not a struct", spec.Name, rt)
	}
	return rt
}

// column returns the struct field index of a parquet column.
func column(rt reflect.Type, name string) int {
	for i := 0; i < rt.NumField(); i++ {
		if tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("parquet"), ","); tag == name {
			return i
		}
	}
	return -1
}

var (
	oneOfRE  = regexp.MustCompile(`must be one of (\S+), got`)
	errColRE = regexp.MustCompile(`^([a-z_]+)\.([a-z_0-9]+): `)
)

// sampleRow fills a row of the table with values that differ by i and satisfy Validate: every field gets a
// distinct value of its type, then each column Validate complains about is set to a value its message
// allows (the first allowed enum value, a number in [0, 1], ...).
func sampleRow(t *testing.T, spec schemas.Spec, i int) schemas.Row {
	t.Helper()
	rt := rowType(t, spec)
	v := reflect.New(rt).Elem()
	for f := 0; f < rt.NumField(); f++ {
		fv := v.Field(f)
		name, _, _ := strings.Cut(rt.Field(f).Tag.Get("parquet"), ",")
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(fmt.Sprintf("%s-%d é", name, i))
		case reflect.Int32, reflect.Int64:
			fv.SetInt(int64(i + 1)) // equal across columns, so order constraints (a <= b) hold
		case reflect.Float32, reflect.Float64:
			fv.SetFloat(0.25 + float64(i%2)/2)
		case reflect.Bool:
			fv.SetBool(i%2 == 0)
		case reflect.Slice:
			n := 3
			s := reflect.MakeSlice(fv.Type(), n, n)
			for k := 0; k < n; k++ {
				switch e := s.Index(k); e.Kind() {
				case reflect.String:
					e.SetString(fmt.Sprintf("%s-%d-%d", name, i, k))
				case reflect.Int32, reflect.Int64:
					e.SetInt(int64(100*i + k))
				case reflect.Float32, reflect.Float64:
					e.SetFloat(-0.5 * float64(k+i))
				}
			}
			fv.Set(s)
		default:
			t.Fatalf("%s.%s: no sample value for kind %s", spec.Name, name, fv.Kind())
		}
	}
	tries := map[int]int{} // per column: how many fixes were tried
	for attempt := 0; attempt < 4*rt.NumField(); attempt++ {
		err := v.Interface().(schemas.Row).Validate()
		if err == nil {
			return v.Interface().(schemas.Row)
		}
		m := errColRE.FindStringSubmatch(err.Error())
		if m == nil || m[1] != spec.Name {
			t.Fatalf("validation error %q does not name the table %s and a column", err, spec.Name)
		}
		f := column(rt, m[2])
		if f < 0 {
			t.Fatalf("validation error %q names a column the row type does not have", err)
		}
		fv := v.Field(f)
		try := tries[f]
		tries[f]++
		switch fv.Kind() {
		case reflect.String:
			if e := oneOfRE.FindStringSubmatch(err.Error()); e != nil {
				allowed := strings.Split(e[1], "|")
				fv.SetString(allowed[i%len(allowed)])
			} else {
				fv.SetString([]string{strings.Repeat(fmt.Sprintf("%02x", i), 32), "x"}[try%2]) // a sha256, or any text
			}
		case reflect.Bool:
			fv.SetBool(!fv.Bool())
		case reflect.Float32, reflect.Float64:
			fv.SetFloat([]float64{0.5, 1, 0}[try%3])
		case reflect.Int32, reflect.Int64:
			fv.SetInt([]int64{1, 0, 3, 2}[try%4]) // 3 is the length of sample lists
		case reflect.Slice:
			fv.Set(reflect.Zero(fv.Type()))
		}
	}
	t.Fatalf("%s: could not make a valid sample row", spec.Name)
	return nil
}

func TestRoundTripThroughLakeAndDuckDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lk := laketest.Open(t, dir)
	cfg := config.Default()
	cfg.Sample.Corpus = "default"
	laketest.NewRun(t, lk, "r", cfg)
	const n = 5
	written := map[string][]schemas.Row{}
	for _, name := range schemas.Names() {
		spec, _ := schemas.Lookup(name)
		rows := make([]schemas.Row, n)
		for i := range rows {
			rows[i] = sampleRow(t, spec, i)
		}
		key := lake.PartitionKey{Run: "r", Table: name, Step: 1}
		switch {
		case name == lake.PoolsTable:
			key = lake.PoolKey("default")
		case !spec.PerRun:
			key = lake.PartitionKey{Corpus: "default", Table: name} // the corpus, or a benchmark's items
		}
		if _, err := laketest.Commit(ctx, lk, key, rows, lake.WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		written[name] = rows
	}
	sess, err := duck.OpenRuns(ctx, lk, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, name := range schemas.Names() {
		t.Run(name, func(t *testing.T) {
			spec, _ := schemas.Lookup(name)
			from := name
			if !spec.PerRun && name != schemas.CorpusSpec.Name { // a benchmark: no view, read its files
				files, err := lk.BenchFiles(ctx, "default")
				if err != nil {
					t.Fatal(err)
				}
				from = "read_parquet(['" + strings.Join(files, "', '") + "'], hive_partitioning = false)"
			}
			if spec.PerRun {
				from = "(select * exclude (run) from " + name + ")"
			}
			if name == lake.PoolsTable { // no view: a pool is read by name (sample.pool)
				files, err := lk.PoolFiles(ctx, "default")
				if err != nil || len(files) != 1 {
					t.Fatalf("pool files %v: %v", files, err)
				}
				from = "read_parquet('" + files[0] + "', hive_partitioning = false)"
			}
			// The Arrow schema is what DuckDB reports for the written file.
			desc, err := sess.DB.QueryContext(ctx, "select column_name, column_type from (describe select * from "+from+")")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for desc.Next() {
				var col, typ string
				if err := desc.Scan(&col, &typ); err != nil {
					t.Fatal(err)
				}
				got = append(got, col+" "+typ)
			}
			desc.Close()
			var want []string
			for _, f := range spec.Arrow().Fields() {
				want = append(want, f.Name+" "+duck.SQLType(f.Type))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("DuckDB describes %s as\n  %v\nthe Arrow schema says\n  %v", name, got, want)
			}
			// The values come back unchanged.
			rs, err := sess.DB.QueryContext(ctx, "select * from "+from)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			cols, _ := rs.Columns()
			rt := rowType(t, spec)
			r := 0
			for ; rs.Next(); r++ {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rs.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				if r >= n {
					t.Fatalf("DuckDB returned more than the %d rows written", n)
				}
				row := reflect.ValueOf(written[name][r])
				for c, col := range cols {
					f := column(rt, col)
					if f < 0 {
						t.Fatalf("DuckDB column %s is not a field of %v", col, rt)
					}
					if !sameValue(row.Field(f), vals[c]) {
						t.Errorf("row %d: %s.%s = %#v in DuckDB, %#v written", r, name, col, vals[c], row.Field(f).Interface())
					}
				}
			}
			if r != n {
				t.Fatalf("DuckDB returned %d rows, %d written", r, n)
			}
		})
	}
}

// sameValue compares a Go field with the value DuckDB returned for it (an empty list and NULL are the
// same: Parquet does not tell a nil slice from an empty one).
func sameValue(want reflect.Value, got any) bool {
	if want.Kind() == reflect.Slice {
		list, _ := got.([]any)
		if got != nil && list == nil {
			return false
		}
		if len(list) != want.Len() {
			return false
		}
		for i := range list {
			if !sameValue(want.Index(i), list[i]) {
				return false
			}
		}
		return true
	}
	if got == nil {
		return false
	}
	g := reflect.ValueOf(got)
	if want.Kind() == reflect.String && g.Kind() == reflect.String {
		return g.String() == want.String() // a typed enum column reads back as a plain string
	}
	if g.Type() != want.Type() {
		return false
	}
	return g.Interface() == want.Interface()
}

func TestValidationNamesTableAndColumn(t *testing.T) {
	for _, tc := range []struct {
		table, column string
		value         any
		want          string
	}{
		{"turns", "episode_id", "", "turns.episode_id: required"},
		{"turns", "reward", math.NaN(), "turns.reward: must be finite"},
		{"turns", "turn", int32(-1), "turns.turn: must be >= 0"},
		{"corpus", "text", "", "corpus.text: required"},
		{"corpus", "text", "bad \xff utf-8", "corpus.text: not valid UTF-8"},
		{"episodes", "ended_by", "crashed", "episodes.ended_by: must be one of done|env_truncated|max_turns|truncated|env_error|timeout|agent_error"},
		{"llm_calls", "role", "critic", "llm_calls.role: must be one of designer|agent|screen"},
		{"designer_rewards", "solve_rate", 1.5, "designer_rewards.solve_rate: must be in [0, 1]"},
		{"memory", "label", "meh", "memory.label: must be one of seed|too_easy|too_hard"},
		{"pools", "code", "", "pools.code: required"},
		{"pools", "skill", "juggling", "pools.skill: must be one of"},
		{"samples", "setting", "arcade", "samples.setting: must be one of games|tools"},
		{"train_metrics", "clip_frac", -0.1, "train_metrics.clip_frac: must be in [0, 1]"},
	} {
		spec, ok := schemas.Lookup(tc.table)
		if !ok {
			t.Fatalf("no table %s", tc.table)
		}
		row := reflect.New(spec.RowType()).Elem()
		row.Set(reflect.ValueOf(sampleRow(t, spec, 0)))
		f := column(spec.RowType(), tc.column)
		if f < 0 {
			t.Fatalf("no column %s.%s", tc.table, tc.column)
		}
		row.Field(f).Set(reflect.ValueOf(tc.value).Convert(row.Field(f).Type()))
		err := row.Interface().(schemas.Row).Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s.%s = %#v: Validate() = %v, want %q", tc.table, tc.column, tc.value, err, tc.want)
		}
	}
}

func TestEveryTableHasASpec(t *testing.T) {
	want := []string{"candidates", "corpus", "designer_rewards", "envs", "episodes", "gate_results", "grpo_batches",
		"llm_calls", "memory", "pools", "samples", "train_metrics", "turns"}
	have := map[string]bool{}
	for _, n := range schemas.Names() {
		have[n] = true
	}
	for _, n := range want {
		if !have[n] {
			t.Errorf("table %s of docs/architecture.md, \"Tables\", has no spec", n)
		}
	}
	for _, n := range schemas.RunTables() {
		if n == "corpus" || n == "pools" {
			t.Errorf("%s is listed as a per-run table; it is imported once per lake", n)
		}
	}
}
