// Package schemas holds one file per table of the SPADE lake (docs/architecture.md, "Tables"): the row type
// with its Parquet tags, the table's Spec (name, version, Arrow schema) and validation of a row.
//
// Conventions shared by every table:
//   - Column names are snake_case and given by the `parquet` tag; a tag with ",optional" is nullable and
//     the Go field is a pointer; list columns are Go slices with ",list".
//   - Every table written per step carries an int64 `step` column equal to its partition's step, so a query
//     over many partitions never needs the path.
//   - Strings are UTF-8; an empty string means "none" for error and reference columns.
//
// A row type implements Row; Spec(name) returns the table's Spec, whose Arrow schema is derived from the
// Parquet schema of the row type, so the two cannot drift apart.
package schemas
