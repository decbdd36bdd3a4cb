package ingest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// maxFooter bounds the footer ingest decodes (64 MiB).
const maxFooter = 64 << 20

// readFooter decodes the footer of the Parquet file at path.
func readFooter(path string) (md *format.FileMetaData, err error) {
	defer func() {
		if p := recover(); p != nil {
			md, err = nil, fmt.Errorf("%s: corrupt parquet footer: %v", path, p)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < 12 {
		return nil, fmt.Errorf("%s: %d bytes is too small for a parquet file", path, size)
	}
	var trailer [8]byte
	if _, err := f.ReadAt(trailer[:], size-8); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if string(trailer[4:]) != "PAR1" {
		return nil, fmt.Errorf("%s: not a parquet file (no PAR1 at the end)", path)
	}
	n := int64(binary.LittleEndian.Uint32(trailer[:4]))
	if n > size-12 || n > maxFooter {
		return nil, fmt.Errorf("%s: footer length %d is beyond the file size %d", path, n, size)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-8-n); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	md = &format.FileMetaData{}
	if err := thrift.Unmarshal(&thrift.CompactProtocol{}, buf, md); err != nil {
		return nil, fmt.Errorf("%s: corrupt parquet footer: %w", path, err)
	}
	return md, nil
}

func (s *Source) openParquet() error {
	for i, f := range s.files {
		md, err := readFooter(f)
		if err != nil {
			return err
		}
		sch, err := SchemaFromParquet(md.Schema)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if i == 0 {
			s.schema = sch
		} else if sch.String() != s.schema.String() {
			return fmt.Errorf("%w: %s has schema %s, %s has %s", ErrUnsupported, f, sch, s.files[0], s.schema)
		}
		s.rows = append(s.rows, md.NumRows)
	}
	return nil
}

func (s *Source) parquetRows(ctx context.Context, path string, skip int64) iter.Seq2[value.Row, error] {
	return fileRows(path, func(f *os.File, yield func(value.Row, error) bool) {
		st, err := f.Stat()
		if err != nil {
			yield(nil, err)
			return
		}
		var opts []parquetio.ReadOption
		if skip > 0 {
			opts = append(opts, parquetio.WithSkipRows(func(i int64) bool { return i < skip }))
		}
		parquetio.ReadReaderAt(ctx, f, st.Size(), path, s.schema, opts...)(yield)
	})
}

// fileRows is the rows rows yields from the file at path, which is opened
// when an iteration starts (an error opening it is yielded) and closed when
// the iteration ends.
func fileRows(path string, rows func(f *os.File, yield func(value.Row, error) bool)) iter.Seq2[value.Row, error] {
	return func(yield func(value.Row, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		rows(f, yield)
	}
}

// SchemaFromParquet returns the Delta schema of a Parquet file from its
// footer's schema elements: BOOLEAN boolean; INT32 integer (INT(8) byte,
// INT(16) short, unsigned INT(8|16) short|integer, UINT32 long, DATE
// date); INT64 long (TIMESTAMP timestamp, or timestamp_ntz when not
// isAdjustedToUTC); INT96 timestamp; FLOAT float; DOUBLE double;
// BYTE_ARRAY string when annotated STRING, ENUM or JSON, else binary;
// DECIMAL decimal(p,s); LIST array; MAP map; other groups struct. Optional
// fields are nullable. Errors wrap ErrUnsupported for types without a Delta
// counterpart (UINT64, TIME, INTERVAL, ...).
func SchemaFromParquet(elems []format.SchemaElement) (*schema.StructType, error) {
	if len(elems) == 0 {
		return nil, fmt.Errorf("%w: empty parquet schema", ErrUnsupported)
	}
	pos := 1
	root := &elems[0]
	st := &schema.StructType{}
	nroot, _ := root.NumChildren.Get()
	for range int(nroot) {
		f, err := parquetField(elems, &pos, 0)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, f)
	}
	return st, nil
}

func parquetField(elems []format.SchemaElement, pos *int, depth int) (*schema.StructField, error) {
	if depth > 100 {
		return nil, fmt.Errorf("%w: parquet schema nested too deep", ErrUnsupported)
	}
	if *pos >= len(elems) {
		return nil, fmt.Errorf("%w: parquet schema ends early", ErrUnsupported)
	}
	e := &elems[*pos]
	*pos++
	rep, _ := e.RepetitionType.Get()
	t, err := parquetType(elems, e, pos, depth)
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", e.Name, err)
	}
	if rep == format.Repeated {
		// A bare repeated field is a list of required elements.
		return schema.NewField(e.Name, &schema.ArrayType{ElementType: t}, false), nil
	}
	return schema.NewField(e.Name, t, rep != format.Required), nil
}

// children reads e's children as fields.
func children(elems []format.SchemaElement, e *format.SchemaElement, pos *int, depth int) ([]*schema.StructField, error) {
	var out []*schema.StructField
	n, _ := e.NumChildren.Get()
	for range int(n) {
		f, err := parquetField(elems, pos, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func parquetType(elems []format.SchemaElement, e *format.SchemaElement, pos *int, depth int) (schema.Type, error) {
	if n, _ := e.NumChildren.Get(); n > 0 {
		return groupType(elems, e, pos, depth)
	}
	phys, ok := e.Type.Get()
	if !ok {
		return nil, fmt.Errorf("%w: leaf without a physical type", ErrUnsupported)
	}
	lt := e.LogicalType
	if dec, ok := lt.Value.(*format.DecimalType); ok {
		return decimalType(int(dec.Precision), int(dec.Scale))
	}
	ct, hasCT := e.ConvertedType.Get()
	if hasCT && ct == deprecated.Decimal {
		p, _ := e.Precision.Get()
		sc, _ := e.Scale.Get()
		return decimalType(int(p), int(sc))
	}
	if !hasCT {
		ct = -1
	}
	var name string
	switch phys {
	case format.Boolean:
		name = schema.Boolean
	case format.Int32:
		name = int32Type(lt, ct)
	case format.Int64:
		name = int64Type(lt, ct)
	case format.Int96:
		name = schema.Timestamp
	case format.Float:
		name = schema.Float
	case format.Double:
		name = schema.Double
	case format.ByteArray, format.FixedLenByteArray:
		name = byteArrayType(lt, ct)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: parquet type %s (%s)", ErrUnsupported, phys, lt.String())
	}
	return schema.Primitive(name), nil
}

// groupType returns the Delta type of a Parquet group: a list, a map or a
// struct.
func groupType(elems []format.SchemaElement, e *format.SchemaElement, pos *int, depth int) (schema.Type, error) {
	ct, hasCT := e.ConvertedType.Get()
	lt := e.LogicalType
	kids, err := children(elems, e, pos, depth)
	if err != nil {
		return nil, err
	}
	isList := lt.Value != nil && isListLogical(lt) || hasCT && ct == deprecated.List
	isMap := lt.Value != nil && isMapLogical(lt) || hasCT && (ct == deprecated.Map || ct == deprecated.MapKeyValue)
	switch {
	case isList && len(kids) == 1:
		k := kids[0]
		// 3-level list: repeated group with one element field.
		if at, ok := k.Type.(*schema.ArrayType); ok && !k.Nullable {
			if st, ok := at.ElementType.(*schema.StructType); ok && len(st.Fields) == 1 {
				el := st.Fields[0]
				return &schema.ArrayType{ElementType: el.Type, ContainsNull: el.Nullable}, nil
			}
			return at, nil
		}
		return &schema.ArrayType{ElementType: k.Type, ContainsNull: k.Nullable}, nil
	case isMap && len(kids) == 1:
		if at, ok := kids[0].Type.(*schema.ArrayType); ok {
			if st, ok := at.ElementType.(*schema.StructType); ok && len(st.Fields) == 2 {
				return &schema.MapType{KeyType: st.Fields[0].Type, ValueType: st.Fields[1].Type, ValueContainsNull: st.Fields[1].Nullable}, nil
			}
		}
		return nil, fmt.Errorf("%w: malformed MAP group", ErrUnsupported)
	}
	return &schema.StructType{Fields: kids}, nil
}

// int32Type returns the Delta type name of an INT32 leaf with logical type
// lt and converted type ct (-1 for none), "" when it has none (time).
func int32Type(lt format.LogicalType, ct deprecated.ConvertedType) string {
	if it, ok := lt.Value.(*format.IntType); ok {
		switch {
		case it.IsSigned && it.BitWidth == 8:
			return schema.Byte
		case it.IsSigned && it.BitWidth == 16:
			return schema.Short
		case !it.IsSigned && it.BitWidth == 8:
			return schema.Short
		case !it.IsSigned && it.BitWidth == 16:
			return schema.Integer
		case !it.IsSigned && it.BitWidth == 32:
			return schema.Long
		}
		return schema.Integer
	}
	if _, ok := lt.Value.(*format.DateType); ok || ct == deprecated.Date {
		return schema.Date
	}
	switch ct {
	case deprecated.Int8:
		return schema.Byte
	case deprecated.Int16, deprecated.Uint8:
		return schema.Short
	case deprecated.Uint16:
		return schema.Integer
	case deprecated.Uint32:
		return schema.Long
	case deprecated.TimeMillis:
		return ""
	}
	if _, ok := lt.Value.(*format.TimeType); ok {
		return ""
	}
	return schema.Integer
}

// int64Type is int32Type for INT64 leaves ("" for unsigned 64-bit and
// time).
func int64Type(lt format.LogicalType, ct deprecated.ConvertedType) string {
	if ts, ok := lt.Value.(*format.TimestampType); ok {
		if ts.IsAdjustedToUTC {
			return schema.Timestamp
		}
		return schema.TimestampNTZ
	}
	if it, ok := lt.Value.(*format.IntType); ok && !it.IsSigned {
		return ""
	}
	switch ct {
	case deprecated.TimestampMillis, deprecated.TimestampMicros:
		return schema.Timestamp
	case deprecated.Uint64, deprecated.TimeMicros:
		return ""
	}
	if _, ok := lt.Value.(*format.TimeType); ok {
		return ""
	}
	return schema.Long
}

// byteArrayType is int32Type for BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY
// leaves: string when annotated as text, else binary.
func byteArrayType(lt format.LogicalType, ct deprecated.ConvertedType) string {
	switch lt.Value.(type) {
	case *format.StringType, *format.EnumType, *format.JsonType:
		return schema.String
	}
	if slices.Contains([]deprecated.ConvertedType{deprecated.UTF8, deprecated.Enum, deprecated.Json}, ct) {
		return schema.String
	}
	return schema.Binary
}

func isListLogical(lt format.LogicalType) bool {
	_, ok := lt.Value.(*format.ListType)
	return ok
}

func isMapLogical(lt format.LogicalType) bool {
	_, ok := lt.Value.(*format.MapType)
	return ok
}

func decimalType(p, s int) (schema.Type, error) {
	if p < 1 || p > 38 || s < 0 || s > p {
		return nil, fmt.Errorf("%w: decimal(%d,%d) is beyond Delta's decimal(38)", ErrUnsupported, p, s)
	}
	return &schema.DecimalType{Precision: p, Scale: s}, nil
}
