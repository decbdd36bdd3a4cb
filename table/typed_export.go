package table

import (
	"context"
	"fmt"
	"reflect"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// RowsOf converts rows of the Go struct type T (or *T) into untyped Rows
// aligned with sch (usually a table's Schema()), field by field as Append
// matches them (the delta tag, exact then case-insensitive), without
// schema evolution: every field needs a column of a type it can be written
// as, and columns without a field must be nullable. It is the conversion
// Append uses, for callers that commit the rows themselves (the streaming
// sink's typed epochs). Errors wrap ErrSchemaMismatch or ErrInvalidArgument;
// a bad row is a *RowError naming its index.
func RowsOf[T any](sch *schema.StructType, rows []T) ([]Row, error) {
	if sch == nil {
		return nil, fmt.Errorf("table: %w: RowsOf needs a schema", ErrInvalidArgument)
	}
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if _, _, err := mergeSchemas(sch, info.schema(true), false); err != nil {
		return nil, err
	}
	return encodeStructs(info, sch, reflect.ValueOf(rows), "table: ")
}

// DataSchemaOf returns the Delta schema of the values of the Go struct type
// T (or *T) can hold: SchemaOf's columns, each nullable only when its Go
// value can be nil (a pointer, slice or map) and it is not tagged notnull.
// It is the schema Append and Overwrite merge into the table's (with
// WithSchemaEvolution, a NOT NULL column stays NOT NULL when its field can
// never be nil), for callers that commit rows of T themselves with
// WithRowSchema (the streaming sink's typed epochs). Errors are SchemaOf's.
func DataSchemaOf[T any]() (*schema.StructType, error) {
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	return info.schema(true), nil
}

// encodeStructs converts rows (a slice of info's struct type or pointers
// to it) into Rows aligned with sch: RowsOf and MergeStructs. An error of
// binding the fields to sch is returned as is, one of converting a row
// after prefix.
func encodeStructs(info *typeInfo, sch *schema.StructType, rows reflect.Value, prefix string) ([]value.Row, error) {
	enc, err := bindStructEncoder(info, sch, "")
	if err != nil {
		return nil, err
	}
	out, err := encodeRows(context.Background(), rows, enc)
	if err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	return out, nil
}

// WriteFilesOf writes rows of the Go struct type T (or *T) as data files
// of the draft's table (DraftAppend's or NewDraft's) and returns their add
// actions for Commit or CommitOn, as Draft.WriteFiles does for untyped
// rows. Fields map to the columns of the draft's schema (Draft.Schema: the
// table's, or the evolved one) as Append maps them, and the files, stats
// and errors are Append's: when the table is unpartitioned without CHECK
// constraints and every column is a top-level primitive, the columns are
// copied straight from the struct fields (Append's columnar path, no value
// boxed per cell); otherwise the rows are converted as RowsOf does and
// take WriteFiles' row path. A field without a column of the draft's
// schema, or of a Go type its column cannot hold, is an error wrapping
// ErrSchemaMismatch that names it; a bad row is a *RowError naming its
// index. Nothing is written on error. opts are WriteFiles' (WithRowSchema
// is ignored: the rows carry their own).
func WriteFilesOf[T any](ctx context.Context, d *Draft, rows []T, opts ...WriteOption) ([]*Add, error) {
	t := d.shadow
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	target := t.Schema()
	enc, err := bindStructEncoder(info, target, "")
	if err != nil {
		return nil, err
	}
	cfg := newWriteConfig(opts)
	cfg.rowSchema = nil
	adds, err := t.writePreparedFiles(ctx, cfg, func() (*prepared, error) {
		return t.prepareStructs(ctx, reflect.ValueOf(rows), info, enc, target, true)
	})
	d.recordKeys(adds)
	return adds, err
}
