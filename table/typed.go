package table

import (
	"context"
	"fmt"
	"reflect"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/structcodec"
	"github.com/deltakit/deltakit/value"
)

// The struct codec (Go structs ↔ Rows: plans, tags, converters) is
// table/internal/structcodec. This file holds the typed entry points
// (SchemaOf, Append, Overwrite) and the table-level names the rest of the
// package uses: planOf, bindStructEncoder, encodeRows, rowDecoder, and the
// views typeInfo, typeNode and structEncoder that the columnar write path
// (typedwrite.go) reads.

// SchemaOf returns the Delta schema of the Go struct type T (or *T):
// columns in field order, nullable unless tagged notnull. Use it to create
// a table for T:
//
//	sch, err := table.SchemaOf[Flight]()
//	tbl, err := table.Create(ctx, uri, sch, table.WithPartitionColumns("date"))
//
// Errors wrap ErrInvalidArgument and name the field of an unsupported Go
// type or a bad tag.
//
// # Typed rows: Go structs and Delta rows
//
// The rules below hold for SchemaOf and for every typed call (Append,
// Overwrite, ScanAs, RowsOf, ...).
//
// A struct type maps to a Delta struct, field by field, in declaration
// order. The column name and options come from the `delta` tag:
//
//	type Flight struct {
//		Date     time.Time          `delta:"date,timestamp_ntz"`
//		Delay    int64              `delta:"delay,notnull"`
//		Price    value.Decimal  `delta:"price,decimal(10,2)"`
//		Origin   *string            // column "Origin", nullable
//		Internal string             `delta:"-"` // not a column
//	}
//
// Tag name: the column name ("" keeps the Go field name; "-" skips the
// field). Tag options, comma separated:
//   - notnull: the column is NOT NULL (default: nullable). A nil pointer,
//     slice or map in such a field is an error when writing.
//   - timestamp (the default for time.Time), timestamp_ntz, date: the Delta
//     type of a time.Time field (also of the elements of a []time.Time or
//     the values of a map). timestamp and timestamp_ntz also apply to an
//     int64 or int field, which then holds microseconds since 1970-01-01
//     00:00:00 (UTC for timestamp; the wall clock for timestamp_ntz), the
//     values Delta stores.
//   - decimal(p,s): the Delta type of a value.Decimal field (required
//     for them).
//
// Go types: int64 and int → long; int32 → integer; int16 → short; int8 →
// byte; float32 → float; float64 → double; bool → boolean; string →
// string; []byte → binary; time.Time → timestamp; value.Date → date;
// value.Decimal → decimal(p,s) from the tag; a struct → struct; a slice
// []T → array<T>; a map[K]V → map<K,V>; a pointer *T → T, nullable. Named
// types with these underlying kinds work as their kind does. Unsigned
// integers, complex numbers, channels, functions, interfaces, arrays and
// unsafe pointers are refused with an error naming the field, as are
// recursive struct types. Unexported fields are ignored; the fields of an
// embedded struct without a tag are promoted, as encoding/json does.
//
// Null: a nil pointer, slice or map is written as null. Other fields are
// never null when written. Reading a null into a non-pointer field leaves
// its zero value.
func SchemaOf[T any]() (*schema.StructType, error) {
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	return info.schema(false), nil
}

// typeInfo is the codec's plan of a Go struct type, with the fields the
// columnar write path (typedwrite.go) reads.
type typeInfo struct {
	plan   *structcodec.Plan
	rt     reflect.Type
	fields []*fieldInfo
}

// fieldInfo is one column of a typeInfo.
type fieldInfo struct {
	node *typeNode
}

// nodeKind is the codec's Kind.
type nodeKind = structcodec.Kind

// The kinds of typeNode the columnar write path reads.
const (
	kInt, kFloat, kBool, kString, kBytes = structcodec.Int, structcodec.Float, structcodec.Bool, structcodec.String, structcodec.Bytes
	kTime, kDate, kMicros, kPtr          = structcodec.Time, structcodec.Date, structcodec.Micros, structcodec.Ptr
)

// typeNode is the shape of one Go type (structcodec.Node): its kind, Go
// type and, for pointers, slices and maps, the element.
type typeNode struct {
	kind nodeKind
	rt   reflect.Type
	elem *typeNode
}

// planOf returns the codec's cached plan of struct type rt (or *struct).
func planOf(rt reflect.Type) (*typeInfo, error) {
	p, err := structcodec.PlanOf(rt)
	if err != nil {
		return nil, err
	}
	info := &typeInfo{plan: p, rt: p.Type(), fields: make([]*fieldInfo, len(p.Fields()))}
	for i, f := range p.Fields() {
		info.fields[i] = &fieldInfo{node: viewNode(f.Node)}
	}
	return info, nil
}

func viewNode(n *structcodec.Node) *typeNode {
	if n == nil {
		return nil
	}
	return &typeNode{kind: n.Kind, rt: n.Type, elem: viewNode(n.Elem)}
}

// schema returns the Delta struct of the plan. With mayBeNull false a field
// is nullable unless tagged notnull (the declared schema, SchemaOf); with
// mayBeNull true a field is nullable only when its Go value can be nil and
// it is not tagged notnull (what the data can hold, for schema merging).
func (info *typeInfo) schema(mayBeNull bool) *schema.StructType {
	if mayBeNull {
		return info.plan.DataSchema()
	}
	return info.plan.Schema()
}

// structEncoder is the codec's Encoder with the binding the columnar write
// path reads: per target field, the Go field (src, -1 when absent) and its
// reflect index path.
type structEncoder struct {
	*structcodec.Encoder
	target *schema.StructType
	src    []int
	index  [][]int
	rt     reflect.Type
}

// bindStructEncoder binds plan info to the target struct type (a table
// schema; path prefixes column names in errors). Every Go field must match
// a target field whose type it can be written as; target fields without a
// Go field must be nullable. Errors wrap ErrSchemaMismatch and name the
// field.
func bindStructEncoder(info *typeInfo, target *schema.StructType, path string) (*structEncoder, error) {
	e, err := structcodec.BindEncoder(info.plan, target, path)
	if err != nil {
		return nil, err
	}
	return &structEncoder{Encoder: e, target: e.Target(), src: e.Sources(), index: e.Indexes(), rt: e.Type()}, nil
}

// fieldByName finds the column for a name in a struct type: by exact name
// first, then case-insensitively (Spark's resolution, which the codec
// binds Go fields with).
func fieldByName(st *schema.StructType, name string) int { return structcodec.FieldByName(st, name) }

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func primName(t schema.Type) string {
	if p, ok := t.(*schema.PrimitiveType); ok {
		return p.Name
	}
	return ""
}

// encodeRows converts typed rows into Rows aligned with target. rows is a
// []T or []*T; a nil *T is an error. Errors name the row index and column.
func encodeRows(ctx context.Context, rv reflect.Value, enc *structEncoder) ([]value.Row, error) {
	n := rv.Len()
	k := len(enc.target.Fields)
	var backing []any
	out := make([]value.Row, n)
	ptr := rv.Type().Elem().Kind() == reflect.Pointer
	for i := range n {
		if j := i % cancelCheckRows; j == 0 {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			// The values of the next block of rows: allocated block by
			// block, so that a cancel is not stuck zeroing one huge array.
			backing = make([]any, min(cancelCheckRows, n-i)*k)
		}
		v := rv.Index(i)
		if ptr {
			if v.IsNil() {
				return nil, &RowError{Row: i, Err: fmt.Errorf("%w: nil *%s", ErrInvalidArgument, enc.rt)}
			}
			v = v.Elem()
		}
		j := i % cancelCheckRows
		row, err := enc.Encode(v, backing[j*k:(j+1)*k:(j+1)*k])
		if err != nil {
			return nil, &RowError{Row: i, Err: err}
		}
		out[i] = row
	}
	return out, nil
}

// rowDecoder returns a function converting Rows aligned with sch (a read
// schema) into values of the Go struct type T (or *T); see
// structcodec.RowDecoder. Typed scans call it once per scan.
func rowDecoder[T any](sch *schema.StructType) (func(value.Row) (T, error), error) {
	return structcodec.RowDecoder[T](sch)
}

// ---- typed writes ----

// Append appends rows of the Go struct type T (or *T) to the table and
// returns the table at the new version. Columns are matched by name (the
// delta tag, exact then case-insensitive); table columns without a field
// are written as null and must be nullable; a field without a column is an
// error unless WithSchemaEvolution is given, which adds it. Go types are
// checked against the column types before anything is written: an integer
// field fits any integer column (range checked per value), a float field
// float or double, a time.Time timestamp, timestamp_ntz or date.
// Everything else is as AppendRows.
func Append[T any](ctx context.Context, t *Table, rows []T, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("append")
	}
	return writeTyped(ctx, t, rows, modeAppend, opts)
}

// Overwrite replaces the table's rows (or, with WithReplaceWhere, the rows of
// the matching partitions) with rows of the Go struct type T, as
// OverwriteRows does for untyped rows; columns match as in Append.
func Overwrite[T any](ctx context.Context, t *Table, rows []T, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("overwrite")
	}
	return writeTyped(ctx, t, rows, modeOverwrite, opts)
}

func writeTyped[T any](ctx context.Context, t *Table, rows []T, mode writeMode, opts []WriteOption) (*Table, error) {
	return writeTypedPath(ctx, t, rows, mode, opts, true)
}

// writeTypedPath is writeTyped; columnar false always takes the row path
// (encodeRows), which tests compare the columnar path with.
func writeTypedPath[T any](ctx context.Context, t *Table, rows []T, mode writeMode, opts []WriteOption, columnar bool) (*Table, error) {
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	cfg := newWriteConfig(opts)
	target, changed, err := t.mergeSchema(info.schema(true), cfg.evolve)
	if err != nil {
		// Prefer the error that names the Go field.
		if _, berr := bindStructEncoder(info, t.Schema(), ""); berr != nil {
			return nil, berr
		}
		return nil, err
	}
	enc, err := bindStructEncoder(info, target, "")
	if err != nil {
		return nil, err
	}
	p, err := t.prepareStructs(ctx, reflect.ValueOf(rows), info, enc, target, columnar)
	if err != nil {
		return nil, opError(ctx, mode.op(), t.URI(), err)
	}
	p.schemaChanged = changed
	return t.writeCommit(ctx, mode, p, cfg)
}

// columnarTable reports whether writes to t may take the columnar path
// (typed struct rows, Arrow batches): t is unpartitioned, since rows are
// split by partition values, and has no CHECK constraints or invariants,
// which are evaluated on rows. The input must fit the path as well.
func (t *Table) columnarTable() bool {
	return len(t.PartitionColumns()) == 0 && !hasConstraints(t.snap.Metadata())
}

// prepareStructs prepares struct rows rv (a []T or []*T) bound by enc to
// schema target: the columns copied straight from the fields when columnar
// allows it and the table takes the columnar path (columnarTable), else
// the rows converted for the row path.
func (t *Table) prepareStructs(ctx context.Context, rv reflect.Value, info *typeInfo, enc *structEncoder, target *schema.StructType, columnar bool) (*prepared, error) {
	if columnar && t.columnarTable() {
		if tr := newTypedRows(rv, info, enc); tr != nil {
			return &prepared{schema: target, typed: tr}, nil
		}
	}
	prows, err := encodeRows(ctx, rv, enc)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	return &prepared{schema: target, rows: prows}, nil
}
