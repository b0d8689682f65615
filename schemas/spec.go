package schemas

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Row is implemented by every table's row type.
type Row interface {
	// Validate reports the first invalid field as "table.column: problem", or nil.
	Validate() error
}

// Spec describes one table: its name, schema version and row type.
type Spec struct {
	// Name is the table name, as used in lake paths and SQL views.
	Name string
	// Version is bumped on every incompatible change of the row type.
	Version int
	// PerRun is false only for tables that live outside runs (the corpus).
	PerRun  bool
	rowType reflect.Type
}

var registry = map[string]Spec{}

// register adds a table spec; it panics on a duplicate name, which is a programming error.
func register(name string, version int, perRun bool, row any) Spec {
	if _, dup := registry[name]; dup {
		panic("schemas: duplicate table " + name)
	}
	spec := Spec{Name: name, Version: version, PerRun: perRun, rowType: reflect.TypeOf(row)}
	registry[name] = spec
	return spec
}

// Lookup returns the Spec of a table by name and whether it exists.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Names returns every table name, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RunTables returns the names of the per-run tables, sorted.
func RunTables() []string {
	var names []string
	for _, n := range Names() {
		if registry[n].PerRun {
			names = append(names, n)
		}
	}
	return names
}

// RowType returns the Go type of the table's rows (the struct with the parquet tags).
func (s Spec) RowType() reflect.Type { return s.rowType }

// ParquetSchema returns the Parquet schema of the table's row type.
func (s Spec) ParquetSchema() *parquet.Schema {
	return parquet.SchemaOf(reflect.New(s.rowType).Elem().Interface())
}

// Arrow returns the table's Arrow schema, derived from the Parquet schema of its row type: strings are
// utf8, int32/int64/float32/float64/bool map one to one, lists map to arrow lists of their element, and
// optional Parquet fields are nullable.
func (s Spec) Arrow() *arrow.Schema {
	ps := s.ParquetSchema()
	fields := make([]arrow.Field, 0, len(ps.Fields()))
	for _, f := range ps.Fields() {
		fields = append(fields, arrowField(f))
	}
	return arrow.NewSchema(fields, &arrow.Metadata{})
}

func arrowField(f parquet.Field) arrow.Field {
	nullable := f.Optional()
	if isLogical[*format.ListType](f.Type()) {
		elem := f.Fields()[0].Fields()[0]
		return arrow.Field{Name: f.Name(), Type: arrow.ListOf(arrowLeaf(elem)), Nullable: true}
	}
	return arrow.Field{Name: f.Name(), Type: arrowLeaf(f), Nullable: nullable}
}

func arrowLeaf(f parquet.Field) arrow.DataType {
	t := f.Type()
	if isLogical[*format.StringType](t) {
		return arrow.BinaryTypes.String
	}
	switch t.Kind() {
	case parquet.Boolean:
		return arrow.FixedWidthTypes.Boolean
	case parquet.Int32:
		if lt := t.LogicalType(); lt != nil {
			if it, ok := lt.Value.(*format.IntType); ok && it.BitWidth == 8 && it.IsSigned {
				return arrow.PrimitiveTypes.Int8 // an int8 field (grpo_batches.loss_mask), which DuckDB reads as TINYINT
			}
		}
		return arrow.PrimitiveTypes.Int32
	case parquet.Int64:
		return arrow.PrimitiveTypes.Int64
	case parquet.Float:
		return arrow.PrimitiveTypes.Float32
	case parquet.Double:
		return arrow.PrimitiveTypes.Float64
	case parquet.ByteArray:
		return arrow.BinaryTypes.Binary
	}
	panic(fmt.Sprintf("schemas: no arrow type for parquet column %s (%v)", f.Name(), t))
}

// isLogical reports whether a Parquet type carries the logical type L.
func isLogical[L format.LogicalTypeValue](t parquet.Type) bool {
	lt := t.LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(L)
	return ok
}

// fieldError formats a validation error naming the table and column.
func fieldError(table, column, format string, args ...any) error {
	return fmt.Errorf("%s.%s: %s", table, column, fmt.Sprintf(format, args...))
}

// checks accumulates the first validation failure of a row.
type checks struct {
	table string
	err   error
}

func (c *checks) fail(column, format string, args ...any) {
	if c.err == nil {
		c.err = fieldError(c.table, column, format, args...)
	}
}

func (c *checks) required(column, value string) {
	if value == "" {
		c.fail(column, "required, got empty string")
	}
}

func (c *checks) utf8(column, value string) {
	if !utf8.ValidString(value) {
		c.fail(column, "not valid UTF-8")
	}
}

func (c *checks) nonNegative(column string, value int64) {
	if value < 0 {
		c.fail(column, "must be >= 0, got %d", value)
	}
}

func (c *checks) unit(column string, value float64) {
	if !(value >= 0 && value <= 1) {
		c.fail(column, "must be in [0, 1], got %v", value)
	}
}

func (c *checks) finite(column string, value float64) {
	if value != value || value > 1e308 || value < -1e308 {
		c.fail(column, "must be finite, got %v", value)
	}
}

// enum checks a typed enum column against its values.
func enum[T ~string](c *checks, column string, value T, values []T) {
	if !slices.Contains(values, value) {
		c.fail(column, "must be one of %s, got %q", JoinValues(values, "|"), value)
	}
}

func (c *checks) oneOf(column, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	c.fail(column, "must be one of %s, got %q", strings.Join(allowed, "|"), value)
}
