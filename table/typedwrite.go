package table

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"time"
	"unsafe"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// The columnar fast path of Append[T] and Overwrite[T]: when the table is
// unpartitioned and every data column is a top-level primitive
// (parquetio.CanWriteColumns), each column is copied straight from the
// struct fields into typed slices (the field offsets are computed once per
// call) and written with parquetio.Writer.WriteColumns, without boxing a
// value per cell or building rows. The files, stats and errors are those of
// the row path (encodeRows + AppendRows); typedwrite_test.go compares them.

// columnarRows is the input of a columnar write: Go structs (typedRows)
// or Arrow record batches (arrowRows).
type columnarRows interface {
	fileRows // write uses pw.WriteColumns
	// check validates the rows that can fail, as the row path would
	// before writing, and returns the validation size of all rows.
	check(ctx context.Context) (int64, error)
}

// writeBlocks writes rows [start, end) to pw in blocks of typedBlock rows
// (pages break at the rows the row path breaks them): fill(a, b) sets
// cols to the columns of rows [a, b).
func writeBlocks(ctx context.Context, pw *parquetio.Writer, start, end int, cols []parquetio.Column, fill func(a, b int) error) error {
	for a := start; a < end; a += typedBlock {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		b := min(end, a+typedBlock)
		if err := fill(a, b); err != nil {
			return err
		}
		if err := pw.WriteColumns(b-a, cols); err != nil {
			return err
		}
	}
	return nil
}

func (tr *typedRows) numRows() int { return tr.n }

func (tr *typedRows) rowSize(i int) int64 {
	row := tr.row(i)
	var s int64
	for _, r := range tr.cols {
		s += r.size(row)
	}
	return s
}

// typedRows is the input of a typed write taken by the fast path.
type typedRows struct {
	n      int
	data   unsafe.Pointer // first element of the []T or []*T (keeps it alive)
	stride uintptr        // bytes between elements
	ptrs   bool           // elements are *T
	rt     reflect.Type   // T
	cols   []*colReader   // per table column
}

// srcKind is the Go representation of a struct field.
type srcKind uint8

const (
	srcAbsent srcKind = iota // no field: the column is null
	srcInt                   // int
	srcInt64
	srcInt32
	srcInt16
	srcInt8
	srcFloat32
	srcFloat64
	srcBool
	srcString
	srcBytes
	srcTime // time.Time
)

// colReader reads one table column from the struct fields.
type colReader struct {
	name    string      // column name, for errors
	col     schema.Type // column type
	dst     string      // primitive name of the column type
	src     srcKind     // field representation
	off     uintptr     // field offset in the struct
	ptr     bool        // the field is a pointer: nil is null
	notNull bool        // the column is NOT NULL
	mayFail bool        // some Go values do not fit the column (range, NOT NULL)
	null    []bool      // scratch: null flags of a block
	buf     parquetio.Column
}

// typedBlock is the number of rows filled per WriteColumns call; a multiple
// of parquetio's batch, so pages break at the rows the row path breaks them.
const typedBlock = 2048

// newTypedRows returns the fast-path input for rows (a []T or []*T of the
// plan info, bound to target by enc), or nil when a column needs the row
// path.
func newTypedRows(rv reflect.Value, info *typeInfo, enc *structEncoder) *typedRows {
	target := enc.target
	if !parquetio.CanWriteColumns(target) {
		return nil
	}
	tr := &typedRows{n: rv.Len(), rt: info.rt, ptrs: rv.Type().Elem().Kind() == reflect.Pointer, stride: rv.Type().Elem().Size()}
	if tr.n > 0 {
		tr.data = rv.Index(0).Addr().UnsafePointer()
	}
	for i, tf := range target.Fields {
		r := &colReader{name: tf.Name, col: tf.Type, dst: primName(tf.Type), notNull: !tf.Nullable}
		tr.cols = append(tr.cols, r)
		if enc.src[i] < 0 {
			r.src = srcAbsent
			continue
		}
		n := info.fields[enc.src[i]].node
		if n.kind == kPtr {
			r.ptr, n = true, n.elem
		}
		rt := info.rt
		for _, j := range enc.index[i] {
			f := rt.Field(j)
			r.off += f.Offset
			rt = f.Type
		}
		if !r.bind(n) {
			return nil
		}
		r.mayFail = r.mayFail || (r.notNull && (r.ptr || r.src == srcBytes))
	}
	return tr
}

// intSources are the representations of the integer kinds.
var intSources = map[reflect.Kind]srcKind{
	reflect.Int: srcInt, reflect.Int64: srcInt64, reflect.Int32: srcInt32, reflect.Int16: srcInt16, reflect.Int8: srcInt8,
}

// bind sets the field representation of node n for the column and reports
// whether the fast path can write it, with the conversions bindEncoder
// makes.
func (r *colReader) bind(n *typeNode) bool {
	switch n.kind {
	case kInt, kMicros:
		src, ok := intSources[n.rt.Kind()]
		if !ok {
			return false
		}
		r.src = src
		if n.kind == kMicros {
			// Only some int64 values are timestamps the row path accepts.
			r.mayFail = true
			return r.dst == schema.Timestamp || r.dst == schema.TimestampNTZ
		}
		switch r.dst {
		case schema.Long:
			return true
		case schema.Integer:
			r.mayFail = r.src == srcInt || r.src == srcInt64
		case schema.Short:
			r.mayFail = r.src != srcInt16 && r.src != srcInt8
		case schema.Byte:
			r.mayFail = r.src != srcInt8
		default:
			return false
		}
		return true
	case kDate:
		r.src = srcInt32
		return r.dst == schema.Date && n.rt.Kind() == reflect.Int32
	case kFloat:
		r.src = srcFloat64
		if n.rt.Kind() == reflect.Float32 {
			r.src = srcFloat32
		}
		return r.dst == schema.Float || r.dst == schema.Double
	case kBool:
		r.src = srcBool
		return r.dst == schema.Boolean
	case kString:
		r.src = srcString
		return r.dst == schema.String || r.dst == schema.Binary
	case kBytes:
		r.src = srcBytes
		return n.rt.Elem().Kind() == reflect.Uint8 && (r.dst == schema.String || r.dst == schema.Binary)
	case kTime:
		r.src = srcTime
		r.mayFail = r.dst != schema.Date
		return r.dst == schema.Timestamp || r.dst == schema.TimestampNTZ || r.dst == schema.Date
	}
	return false
}

// validationSize returns what fieldChecker and checkValue count for a non-null value of
// the column type: fixed for numbers, 0 for strings and binaries (their
// length + 4).
func validationSize(dst string) int64 {
	switch dst {
	case schema.Long, schema.Float, schema.Double, schema.Timestamp, schema.TimestampNTZ:
		return 8
	case schema.Integer, schema.Short, schema.Byte, schema.Date:
		return 4
	case schema.Boolean:
		return 1
	}
	return 0
}

// row returns the address of row i's struct, nil for a nil *T.
func (tr *typedRows) row(i int) unsafe.Pointer {
	p := unsafe.Add(tr.data, uintptr(i)*tr.stride)
	if tr.ptrs {
		return *(*unsafe.Pointer)(p)
	}
	return p
}

// field returns the address of r's field in the struct at row, nil when
// the field is a nil pointer.
func (r *colReader) field(row unsafe.Pointer) unsafe.Pointer {
	p := unsafe.Add(row, r.off)
	if r.ptr {
		return *(*unsafe.Pointer)(p)
	}
	return p
}

// isNull reports whether the value at field address p (from field) is null.
func (r *colReader) isNull(p unsafe.Pointer) bool {
	return p == nil || r.src == srcAbsent || (r.src == srcBytes && *(*[]byte)(p) == nil)
}

// size returns the validation size of the value in row.
func (r *colReader) size(row unsafe.Pointer) int64 {
	if r.src == srcAbsent {
		return 0
	}
	p := r.field(row)
	if p == nil {
		return 0
	}
	switch r.src {
	case srcString:
		return int64(len(*(*string)(p))) + 4
	case srcBytes:
		b := *(*[]byte)(p)
		if b == nil {
			return 0
		}
		return int64(len(b)) + 4
	}
	return validationSize(r.dst)
}

// check validates, before anything is written as the row path does, the
// rows that can fail (nil *T rows, nulls in NOT NULL columns, values out of
// the column's range) and returns the validation size of all rows.
func (tr *typedRows) check(ctx context.Context) (int64, error) {
	rows := make([]unsafe.Pointer, 0, typedBlock)
	var total int64
	for start := 0; start < tr.n; start += typedBlock {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		end := min(tr.n, start+typedBlock)
		rows = rows[:0]
		for i := start; i < end; i++ {
			p := tr.row(i)
			if p == nil {
				return 0, &RowError{Row: i, Err: fmt.Errorf("%w: nil *%s", ErrInvalidArgument, tr.rt)}
			}
			rows = append(rows, p)
		}
		for _, r := range tr.cols {
			s, bad, err := r.scan(rows)
			if err != nil {
				return 0, &RowError{Row: start + bad, Err: err}
			}
			total += s
		}
	}
	return total, nil
}

// scan returns the validation size of the column's values in rows (struct
// addresses, none nil), or the index of the first value the column cannot
// take and the error.
func (r *colReader) scan(rows []unsafe.Pointer) (int64, int, error) {
	switch {
	case r.src == srcAbsent:
		return 0, 0, nil
	case r.src == srcString && !r.ptr:
		var s int64
		for _, row := range rows {
			s += int64(len(*(*string)(unsafe.Add(row, r.off)))) + 4
		}
		return s, 0, nil
	case r.src == srcInt64 && !r.ptr && (r.dst == schema.Timestamp || r.dst == schema.TimestampNTZ):
		// Microseconds: only values near the ends of int64 are out of
		// range; check the extremes first.
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, row := range rows {
			x := *(*int64)(unsafe.Add(row, r.off))
			lo, hi = min(lo, x), max(hi, x)
		}
		if len(rows) == 0 || microsInRange(lo) && microsInRange(hi) {
			return 8 * int64(len(rows)), 0, nil
		}
	case !r.mayFail && !r.ptr && r.src != srcBytes:
		return validationSize(r.dst) * int64(len(rows)), 0, nil
	}
	if r.mayFail {
		if bad, err := r.fill(rows, true); err != nil {
			return 0, bad, err
		}
	}
	var s int64
	for _, row := range rows {
		s += r.size(row)
	}
	return s, 0, nil
}

// write writes rows [start, end) to pw.
func (tr *typedRows) write(ctx context.Context, pw *parquetio.Writer, start, end int) error {
	rows := make([]unsafe.Pointer, 0, typedBlock)
	cols := make([]parquetio.Column, len(tr.cols))
	return writeBlocks(ctx, pw, start, end, cols, func(a, b int) error {
		rows = rows[:0]
		for i := a; i < b; i++ {
			rows = append(rows, tr.row(i))
		}
		for c, r := range tr.cols {
			if bad, err := r.fill(rows, false); err != nil {
				return &RowError{Row: a + bad, Err: err}
			}
			cols[c] = r.buf
		}
		return nil
	})
}

// grow returns s with length n, reusing its array.
func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n, max(n, typedBlock))
	}
	return s[:n]
}

// fill converts the column's values of rows (struct addresses, none nil)
// into r.buf. It returns the index in rows of the first value the column
// cannot take, and the error.
//
// With validate false the values were checked before (check): range checks
// are skipped.
func (r *colReader) fill(rows []unsafe.Pointer, validate bool) (int, error) {
	m := len(rows)
	// Keep the value slices of the last block for reuse.
	r.buf = parquetio.Column{Int64: r.buf.Int64[:0], Int32: r.buf.Int32[:0], Float32: r.buf.Float32[:0],
		Float64: r.buf.Float64[:0], Bool: r.buf.Bool[:0], String: r.buf.String[:0], Bytes: r.buf.Bytes[:0]}
	if r.src == srcAbsent {
		r.null = grow(r.null, m)
		for i := range r.null {
			r.null[i] = true
		}
		r.buf.Null = r.null
		return 0, nil
	}
	if !r.ptr {
		// The common shapes in tight loops of their own.
		switch {
		case r.src == srcInt64 && (r.dst == schema.Long || !validate && (r.dst == schema.Timestamp || r.dst == schema.TimestampNTZ)):
			r.buf.Int64 = grow(r.buf.Int64, m)
			loadFields(r.buf.Int64, rows, r.off)
			return 0, nil
		case r.src == srcString && (r.dst == schema.String || r.dst == schema.Binary):
			r.buf.String = grow(r.buf.String, m)
			loadFields(r.buf.String, rows, r.off)
			return 0, nil
		}
	}
	var nulls []bool
	if r.ptr || r.src == srcBytes {
		r.null = grow(r.null, m)
		clear(r.null)
		nulls = r.null
		r.buf.Null = nulls
	}
	switch r.dst {
	case schema.Long:
		r.buf.Int64 = grow(r.buf.Int64, m)
		return fillEach(r, rows, nulls, r.buf.Int64, func(p unsafe.Pointer) (int64, error) { return loadInt(r.src, p), nil })
	case schema.Integer, schema.Short, schema.Byte:
		r.buf.Int32 = grow(r.buf.Int32, m)
		return fillEach(r, rows, nulls, r.buf.Int32, r.narrowInt)
	case schema.Timestamp, schema.TimestampNTZ:
		r.buf.Int64 = grow(r.buf.Int64, m)
		return fillEach(r, rows, nulls, r.buf.Int64, func(p unsafe.Pointer) (int64, error) { return r.micros(p, validate) })
	case schema.Date:
		r.buf.Int32 = grow(r.buf.Int32, m)
		return fillEach(r, rows, nulls, r.buf.Int32, r.days)
	case schema.Double:
		r.buf.Float64 = grow(r.buf.Float64, m)
		return fillEach(r, rows, nulls, r.buf.Float64, func(p unsafe.Pointer) (float64, error) { return r.float(p), nil })
	case schema.Float:
		r.buf.Float32 = grow(r.buf.Float32, m)
		return fillEach(r, rows, nulls, r.buf.Float32, func(p unsafe.Pointer) (float32, error) { return float32(r.float(p)), nil })
	case schema.Boolean:
		r.buf.Bool = grow(r.buf.Bool, m)
		return fillEach(r, rows, nulls, r.buf.Bool, func(p unsafe.Pointer) (bool, error) { return *(*bool)(p), nil })
	case schema.String, schema.Binary:
		if r.src == srcBytes {
			r.buf.Bytes = grow(r.buf.Bytes, m)
			return fillEach(r, rows, nulls, r.buf.Bytes, func(p unsafe.Pointer) ([]byte, error) { return *(*[]byte)(p), nil })
		}
		r.buf.String = grow(r.buf.String, m)
		return fillEach(r, rows, nulls, r.buf.String, func(p unsafe.Pointer) (string, error) { return *(*string)(p), nil })
	}
	return 0, fmt.Errorf("column %q: %w: type %s on the columnar path", r.name, ErrSchemaMismatch, r.col)
}

// fillEach sets out[i] to conv of the field of rows[i] (struct addresses,
// none nil); when nulls is not nil, a null field marks nulls[i] and sets
// out[i] to the zero value. It returns the index of the first value conv
// refuses or the first null in a NOT NULL column, and the error.
func fillEach[E any](r *colReader, rows []unsafe.Pointer, nulls []bool, out []E, conv func(unsafe.Pointer) (E, error)) (int, error) {
	var zero E
	out = out[:len(rows)]
	for i, row := range rows {
		p := r.field(row)
		if nulls != nil && r.isNull(p) {
			if r.notNull {
				return i, fmt.Errorf("column %q: %w (null value)", r.name, errNotNull)
			}
			nulls[i] = true
			out[i] = zero
			continue
		}
		x, err := conv(p)
		if err != nil {
			return i, err
		}
		out[i] = x
	}
	return 0, nil
}

// narrowInt reads the integer field at p for an integer, short or byte
// column, range checked.
func (r *colReader) narrowInt(p unsafe.Pointer) (int32, error) {
	x := loadInt(r.src, p)
	lo, hi := intRange(r.dst)
	if x < lo || x > hi {
		return 0, fmt.Errorf("column %q: %w: %d does not fit %s", r.name, ErrInvalidArgument, x, r.dst)
	}
	return int32(x), nil
}

// micros reads the time.Time or microseconds field at p for a timestamp or
// timestamp_ntz column (microseconds range checked when validate is set).
func (r *colReader) micros(p unsafe.Pointer, validate bool) (int64, error) {
	if r.src != srcTime {
		us := loadInt(r.src, p)
		if validate && !microsInRange(us) {
			return 0, fmt.Errorf("column %q: %w", r.name, outOfRange(time.UnixMicro(us).UTC(), r.col))
		}
		return us, nil
	}
	t := *(*time.Time)(p)
	if !timestampInRange(t) {
		return 0, fmt.Errorf("column %q: %w", r.name, outOfRange(t, r.col))
	}
	if r.dst == schema.TimestampNTZ && t.Location() != time.UTC {
		t = expr.WallClockUTC(t)
	}
	return t.UnixMicro(), nil
}

// days reads the time.Time or int32 field at p for a date column.
func (r *colReader) days(p unsafe.Pointer) (int32, error) {
	if r.src == srcTime {
		return int32(value.DateOf(*(*time.Time)(p))), nil
	}
	return *(*int32)(p), nil
}

// float reads the float32 or float64 field at p.
func (r *colReader) float(p unsafe.Pointer) float64 {
	if r.src == srcFloat32 {
		return float64(*(*float32)(p))
	}
	return *(*float64)(p)
}

// loadFields sets out[i] to the E at offset off of struct rows[i].
func loadFields[E any](out []E, rows []unsafe.Pointer, off uintptr) {
	out = out[:len(rows)]
	for i, row := range rows {
		out[i] = *(*E)(unsafe.Add(row, off))
	}
}

// loadInt reads the integer field at p.
func loadInt(src srcKind, p unsafe.Pointer) int64 {
	switch src {
	case srcInt:
		return int64(*(*int)(p))
	case srcInt64:
		return *(*int64)(p)
	case srcInt32:
		return int64(*(*int32)(p))
	case srcInt16:
		return int64(*(*int16)(p))
	case srcInt8:
		return int64(*(*int8)(p))
	}
	return 0
}

// intRange returns the range of an integer column type.
func intRange(dst string) (lo, hi int64) {
	switch dst {
	case schema.Integer:
		return -1 << 31, 1<<31 - 1
	case schema.Short:
		return -1 << 15, 1<<15 - 1
	case schema.Byte:
		return -1 << 7, 1<<7 - 1
	}
	return -1 << 63, 1<<63 - 1
}

// microsInRange is timestampInRange for microseconds since the epoch:
// floor(us / 1e6) within [minTimestampUnix+86400, maxTimestampUnix-86400].
func microsInRange(us int64) bool {
	return us >= (minTimestampUnix+86400)*1e6 && us <= (maxTimestampUnix-86400+1)*1e6-1
}

// numRows returns the number of input rows.
func (p *prepared) numRows() int {
	if p.typed != nil {
		return p.typed.numRows()
	}
	return len(p.rows)
}

// writeTypedFiles is writeDataFiles for the columnar fast path (an
// unpartitioned table): it validates what can fail, then writes files of
// about cfg.targetFileSize, cut at the rows the row path cuts them.
func (t *Table) writeTypedFiles(ctx context.Context, p *prepared, cfg writeConfig, groupCheck func(map[string]string) error) (*writeResult, error) {
	tr := p.typed
	if len(t.PartitionColumns()) > 0 {
		return nil, fmt.Errorf("table: %w: the columnar write path is for unpartitioned tables", ErrInvalidArgument)
	}
	total, err := tr.check(ctx)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	values := map[string]string{}
	if groupCheck != nil && tr.numRows() > 0 {
		if err := groupCheck(values); err != nil {
			return nil, err
		}
	}
	if tr.numRows() == 0 {
		return &writeResult{}, nil
	}
	fw := t.newFileWriter(cfg, p.schema)
	adds, err := fw.writeRows(ctx, values, tr, total)
	if err != nil {
		deleteFiles(t.store, fw.written(), t.cfg.logger)
		return nil, err
	}
	return &writeResult{adds: adds, keys: fw.written()}, nil
}
