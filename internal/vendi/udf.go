package vendi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"
)

// The SQL functions registered on every DuckDB session (duck.OnOpen): each takes a list of vectors
// (DOUBLE[][]; FLOAT[][] casts implicitly), e.g. `select vendi(list(vector)) from embeddings group by step`.
const (
	// SQLVendi is vendi(vectors) → Score.
	SQLVendi = "vendi"
	// SQLVendiPerN is vendi_per_n(vectors) → ScorePerN.
	SQLVendiPerN = "vendi_per_n"
	// SQLMeanCosineDistance is mean_cosine_distance(vectors) → MeanCosineDistance.
	SQLMeanCosineDistance = "mean_cosine_distance"
)

// Register registers vendi, vendi_per_n and mean_cosine_distance on db. A NULL list gives NULL; vectors of
// different lengths, NULL vectors and zero vectors are errors of the query.
func Register(db *sql.DB) error {
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	for name, fn := range map[string]func([]float64, int, int) (float64, error){
		SQLVendi:              Score,
		SQLVendiPerN:          ScorePerN,
		SQLMeanCosineDistance: MeanCosineDistance,
	} {
		if err := duckdb.RegisterScalarUDF(conn, name, listUDF{name: name, fn: fn}); err != nil {
			return fmt.Errorf("vendi: register %s: %w", name, err)
		}
	}
	return nil
}

// listUDF adapts a function of an n×d matrix to a DuckDB scalar function of DOUBLE[][] returning DOUBLE.
type listUDF struct {
	name string
	fn   func([]float64, int, int) (float64, error)
}

// Config implements duckdb.ScalarFunc.
func (u listUDF) Config() duckdb.ScalarFuncConfig {
	double, _ := duckdb.NewTypeInfo(duckdb.TYPE_DOUBLE)
	vec, _ := duckdb.NewListInfo(double)
	vectors, _ := duckdb.NewListInfo(vec)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{vectors}, ResultTypeInfo: double}
}

// Executor implements duckdb.ScalarFunc.
func (u listUDF) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (any, error) {
		x, n, d, err := matrix(values[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.name, err)
		}
		score, err := u.fn(x, n, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.name, err)
		}
		return score, nil
	}}
}

// matrix flattens a DuckDB list of lists of doubles into a row-major n×d slice.
func matrix(v driver.Value) ([]float64, int, int, error) {
	rows, ok := v.([]any)
	if !ok {
		return nil, 0, 0, fmt.Errorf("want a list of vectors, got %T", v)
	}
	if len(rows) == 0 {
		return nil, 0, 0, nil
	}
	first, ok := rows[0].([]any)
	if !ok {
		return nil, 0, 0, fmt.Errorf("vector 0 is %T, want a list of doubles", rows[0])
	}
	d := len(first)
	x := make([]float64, 0, len(rows)*d)
	for i, r := range rows {
		vec, ok := r.([]any)
		if !ok {
			return nil, 0, 0, fmt.Errorf("vector %d is %T, want a list of doubles", i, r)
		}
		if len(vec) != d {
			return nil, 0, 0, fmt.Errorf("vector %d has %d values, vector 0 has %d", i, len(vec), d)
		}
		for j, e := range vec {
			f, ok := e.(float64)
			if !ok {
				return nil, 0, 0, fmt.Errorf("vector %d value %d is %T (NULL?), want a double", i, j, e)
			}
			x = append(x, f)
		}
	}
	return x, len(rows), d, nil
}
