package parquetio

import (
	"fmt"
	"math"
	"math/big"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// writePlan is the Parquet schema of a Delta schema plus what shredding rows
// into column values needs.
type writePlan struct {
	root             parquet.Node
	fields           []*wnode
	numCols          int
	flbaDecimalPaths [][]string
	stats            *statsBuilder
	rowShred         bool // shred every field value by value (tests)
}

// wnode shreds one value of a Delta type into leaf column values with
// repetition and definition levels.
type wnode struct {
	kind     asmKind
	path     string // logical path, for errors
	nullable bool
	def      int // definition level when this node is non-null

	// leaf
	col   int
	enc   leafEncoder
	fast  fastKind // column kind of a top-level primitive field, see shredBatch
	views []string // scratch of writeColumn: a Bytes column viewed as strings

	// struct
	fields []*wnode

	// list and map: the repeated group's repetition level, element or
	// key, and value
	rep       int
	elem, val *wnode

	cols []int // leaf columns below, which a null or empty value must touch

	stat       *colStats   // stats of this node when it is a stats leaf
	statsBelow []*colStats // stats leaves below this struct
}

// leafEncoder checks a Go value against the leaf's Delta type, records it in
// st (when non-nil) and returns the Parquet value and its approximate size.
type leafEncoder func(v any, st *colStats) (parquet.Value, int64, error)

type planWriter struct {
	cfg   writeConfig
	sel   *statsSelection
	col   int
	flba  [][]string
	stats *statsBuilder
}

func buildWritePlan(sch *schema.StructType, cfg writeConfig, sel *statsSelection) (*writePlan, error) {
	b := &planWriter{cfg: cfg, sel: sel, stats: &statsBuilder{prefix: cfg.stringPrefix}}
	root := &groupNode{}
	plan := &writePlan{}
	for _, f := range sch.Fields {
		node, wn, st, err := b.field(f, 0, 0, nil, f.Name, sel.child(f), false)
		if err != nil {
			return nil, err
		}
		root.fields = append(root.fields, &namedField{Node: node, name: f.PhysicalName(cfg.mappingMode)})
		if wn.kind == asmLeaf {
			wn.fast = fastKindOf(f.Type)
		}
		plan.fields = append(plan.fields, wn)
		if st != nil {
			b.stats.fields = append(b.stats.fields, st)
		}
	}
	plan.root = root
	plan.numCols = b.col
	plan.flbaDecimalPaths = b.flba
	plan.stats = b.stats
	plan.rowShred = cfg.rowShred
	return plan, nil
}

// field builds the node of struct field f whose parent is present at
// definition level def and repeats at rep. ppath is the parent's physical
// column path. It also returns f's stats tree node (nil when f gets no
// stats).
func (b *planWriter) field(f *schema.StructField, def, rep int, ppath []string, lpath string, sel *statsSelection, inRepeated bool) (parquet.Node, *wnode, *statNode, error) {
	name := f.PhysicalName(b.cfg.mappingMode)
	path := append(append([]string(nil), ppath...), name)
	node, wn, sn, err := b.typ(f.Type, f.Nullable, def, rep, path, lpath, sel, inRepeated)
	if err != nil {
		return nil, nil, nil, err
	}
	if b.cfg.mappingMode == "id" {
		if id, ok := f.FieldID(); ok {
			node = parquet.FieldID(node, int(id))
		}
	}
	if sn != nil {
		sn.name = name
	}
	return node, wn, sn, nil
}

func repetition(n parquet.Node, nullable bool) parquet.Node {
	if nullable {
		return parquet.Optional(n)
	}
	return parquet.Required(n)
}

// typ builds the node for a value of type t. sel says whether (and which
// parts of) the value get stats; inRepeated disables stats below lists and
// maps.
func (b *planWriter) typ(t schema.Type, nullable bool, def, rep int, path []string, lpath string, sel *statsSelection, inRepeated bool) (parquet.Node, *wnode, *statNode, error) {
	if nullable {
		def++
	}
	wn := &wnode{path: lpath, nullable: nullable, def: def}
	tracked := sel != nil && !inRepeated
	switch t := t.(type) {
	case *schema.StructType:
		wn.kind = asmStruct
		g := &groupNode{}
		var sn *statNode
		if tracked {
			sn = &statNode{}
		}
		for _, f := range t.Fields {
			var csel *statsSelection
			if tracked {
				csel = sel.child(f)
			}
			node, cw, csn, err := b.field(f, def, rep, path, lpath+"."+f.Name, csel, inRepeated)
			if err != nil {
				return nil, nil, nil, err
			}
			g.fields = append(g.fields, &namedField{Node: node, name: f.PhysicalName(b.cfg.mappingMode)})
			wn.fields = append(wn.fields, cw)
			wn.cols = append(wn.cols, cw.cols...)
			wn.statsBelow = append(wn.statsBelow, cw.statsBelow...)
			if cw.stat != nil {
				wn.statsBelow = append(wn.statsBelow, cw.stat)
			}
			if csn != nil {
				sn.children = append(sn.children, csn)
			}
		}
		if sn != nil && len(sn.children) == 0 {
			sn = nil
		}
		return repetition(g, nullable), wn, sn, nil

	case *schema.ArrayType:
		wn.kind = asmList
		wn.rep = rep + 1
		elem, ew, _, err := b.typ(t.ElementType, t.ContainsNull, def+1, rep+1, append(path, "list", "element"), lpath+".element", nil, true)
		if err != nil {
			return nil, nil, nil, err
		}
		wn.elem = ew
		wn.cols = ew.cols
		var sn *statNode
		if tracked {
			wn.stat = &colStats{kind: statNullOnly}
			sn = &statNode{stats: wn.stat}
		}
		return repetition(parquet.List(elem), nullable), wn, sn, nil

	case *schema.MapType:
		wn.kind = asmMap
		wn.rep = rep + 1
		kpath := append(append([]string(nil), path...), "key_value", "key")
		vpath := append(append([]string(nil), path...), "key_value", "value")
		key, kw, _, err := b.typ(t.KeyType, false, def+1, rep+1, kpath, lpath+".key", nil, true)
		if err != nil {
			return nil, nil, nil, err
		}
		val, vw, _, err := b.typ(t.ValueType, t.ValueContainsNull, def+1, rep+1, vpath, lpath+".value", nil, true)
		if err != nil {
			return nil, nil, nil, err
		}
		wn.elem, wn.val = kw, vw
		wn.cols = append(append([]int(nil), kw.cols...), vw.cols...)
		var sn *statNode
		if tracked {
			wn.stat = &colStats{kind: statNullOnly}
			sn = &statNode{stats: wn.stat}
		}
		return repetition(parquet.Map(key, val), nullable), wn, sn, nil

	default:
		wn.kind = asmLeaf
		leaf, enc, kind, err := b.leaf(t, path)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("parquetio: field %s: %w", lpath, err)
		}
		wn.col = b.col
		wn.cols = []int{b.col}
		b.col++
		wn.enc = enc
		var sn *statNode
		if tracked {
			wn.stat = &colStats{kind: kind}
			if d, ok := t.(*schema.DecimalType); ok {
				wn.stat.scale = int32(d.Scale)
			}
			sn = &statNode{stats: wn.stat}
		}
		return repetition(leaf, nullable), wn, sn, nil
	}
}

// flbaDecimalBytes returns the fewest bytes whose two's complement holds
// every unscaled value of the given precision (Spark's minBytesForPrecision).
func flbaDecimalBytes(precision int) int {
	limit := new(big.Int).Sub(pow10(precision), big.NewInt(1))
	n := 1
	for new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(limit) <= 0 {
		n++
	}
	return n
}

// leaf returns the Parquet leaf for primitive type t, its encoder and the
// kind of stats its values get.
func (b *planWriter) leaf(t schema.Type, path []string) (parquet.Node, leafEncoder, statKind, error) {
	// dict encodes n with RLE_DICTIONARY when the DictionaryMode covers
	// it (strings: whether it is a string or binary column), else PLAIN
	// (parquet-go's own default for BYTE_ARRAY is DELTA_LENGTH_BYTE_ARRAY).
	dict := func(n parquet.Node, strings bool) parquet.Node {
		if len(path) == 1 && b.cfg.plainFields[path[0]] {
			return parquet.Encoded(n, &parquet.Plain) // see Writer.open
		}
		if b.cfg.dictionary == DictionaryDefault || (strings && b.cfg.dictionary == DictionaryStrings) {
			return parquet.Encoded(n, &parquet.RLEDictionary)
		}
		return parquet.Encoded(n, &parquet.Plain)
	}
	if d, ok := t.(*schema.DecimalType); ok {
		if d.Precision < 1 || d.Precision > 38 || d.Scale < 0 || d.Scale > d.Precision {
			return nil, nil, 0, fmt.Errorf("unsupported %s", d)
		}
		switch {
		case d.Precision <= 9:
			return dict(parquet.Decimal(d.Scale, d.Precision, parquet.Int32Type), false), decimalEncoder(d, 0), statDecimal, nil
		case d.Precision <= 18:
			return dict(parquet.Decimal(d.Scale, d.Precision, parquet.Int64Type), false), decimalEncoder(d, 0), statDecimal, nil
		default:
			n := flbaDecimalBytes(d.Precision)
			b.flba = append(b.flba, append([]string(nil), path...))
			return parquet.Decimal(d.Scale, d.Precision, parquet.FixedLenByteArrayType(n)), decimalEncoder(d, n), statDecimal, nil
		}
	}
	p, ok := t.(*schema.PrimitiveType)
	if !ok {
		return nil, nil, 0, fmt.Errorf("unsupported type %s", t)
	}
	switch p.Name {
	case schema.Long:
		return dict(parquet.Leaf(parquet.Int64Type), false), encLong, statInt, nil
	case schema.Integer:
		return dict(parquet.Leaf(parquet.Int32Type), false), intEncoder(math.MinInt32, math.MaxInt32), statInt, nil
	case schema.Short:
		return dict(parquet.Int(16), false), intEncoder(math.MinInt16, math.MaxInt16), statInt, nil
	case schema.Byte:
		return dict(parquet.Int(8), false), intEncoder(math.MinInt8, math.MaxInt8), statInt, nil
	case schema.Float:
		return dict(parquet.Leaf(parquet.FloatType), false), encFloat, statFloat32, nil
	case schema.Double:
		return dict(parquet.Leaf(parquet.DoubleType), false), encDouble, statFloat64, nil
	case schema.Boolean:
		return parquet.Leaf(parquet.BooleanType), encBool, statNullOnly, nil
	case schema.String:
		return dict(parquet.String(), true), encString, statString, nil
	case schema.Binary:
		return dict(parquet.Leaf(parquet.ByteArrayType), true), encBinary, statNullOnly, nil
	case schema.Date:
		return dict(parquet.Date(), false), encDate, statDate, nil
	case schema.Timestamp:
		return parquet.TimestampAdjusted(parquet.Microsecond, true), encTimestamp, statTimestamp, nil
	case schema.TimestampNTZ:
		return parquet.TimestampAdjusted(parquet.Microsecond, false), encTimestampNTZ, statTimestampNTZ, nil
	}
	return nil, nil, 0, fmt.Errorf("unsupported type %s", p.Name)
}

func invalid(v any, want string) error {
	return fmt.Errorf("%w: %T (%v) for %s", ErrInvalidValue, v, v, want)
}

func encLong(v any, st *colStats) (parquet.Value, int64, error) {
	x, ok := value.ToInt64(v)
	if !ok {
		return parquet.Value{}, 0, invalid(v, "long")
	}
	if st != nil {
		st.observeInt(x)
	}
	return parquet.Int64Value(x), 8, nil
}

// intEncoder encodes integer, short and byte values as INT32 within [lo, hi].
func intEncoder(lo, hi int64) leafEncoder {
	return func(v any, st *colStats) (parquet.Value, int64, error) {
		x, ok := value.ToInt64ByType(v)
		if !ok || x < lo || x > hi {
			return parquet.Value{}, 0, invalid(v, fmt.Sprintf("an integer in [%d, %d]", lo, hi))
		}
		if st != nil {
			st.observeInt(x)
		}
		return parquet.Int32Value(int32(x)), 4, nil
	}
}

func encFloat(v any, st *colStats) (parquet.Value, int64, error) {
	x, ok := value.ToFloat64(v)
	if !ok {
		return parquet.Value{}, 0, invalid(v, "float")
	}
	if st != nil {
		st.observeFloat(float64(float32(x)))
	}
	return parquet.FloatValue(float32(x)), 4, nil
}

func encDouble(v any, st *colStats) (parquet.Value, int64, error) {
	x, ok := value.ToFloat64(v)
	if !ok {
		return parquet.Value{}, 0, invalid(v, "double")
	}
	if st != nil {
		st.observeFloat(x)
	}
	return parquet.DoubleValue(x), 8, nil
}

func encBool(v any, st *colStats) (parquet.Value, int64, error) {
	x, ok := v.(bool)
	if !ok {
		return parquet.Value{}, 0, invalid(v, "boolean")
	}
	return parquet.BooleanValue(x), 1, nil
}

// stringBytes views s as bytes without copying; parquet-go copies values
// into its buffers and never writes to them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func encString(v any, st *colStats) (parquet.Value, int64, error) {
	var b []byte
	switch v := v.(type) {
	case string:
		b = stringBytes(v)
		if st != nil {
			st.observeString(v)
		}
	case []byte:
		b = v
		if st != nil {
			st.observeString(unsafe.String(unsafe.SliceData(v), len(v)))
		}
	default:
		return parquet.Value{}, 0, invalid(v, "string")
	}
	return parquet.ByteArrayValue(b), int64(len(b)) + 4, nil
}

func encBinary(v any, st *colStats) (parquet.Value, int64, error) {
	var b []byte
	switch v := v.(type) {
	case []byte:
		b = v
		if b == nil {
			b = []byte{}
		}
	case string:
		b = stringBytes(v)
	default:
		return parquet.Value{}, 0, invalid(v, "binary")
	}
	return parquet.ByteArrayValue(b), int64(len(b)) + 4, nil
}

func encDate(v any, st *colStats) (parquet.Value, int64, error) {
	var d value.Date
	switch v := v.(type) {
	case value.Date:
		d = v
	case time.Time:
		days := floorDiv(time.Date(v.Year(), v.Month(), v.Day(), 0, 0, 0, 0, time.UTC).Unix(), 86400)
		if days < math.MinInt32 || days > math.MaxInt32 {
			return parquet.Value{}, 0, invalid(v, "date")
		}
		d = value.Date(days)
	default:
		return parquet.Value{}, 0, invalid(v, "date")
	}
	if st != nil {
		st.observeInt(int64(d))
	}
	return parquet.Int32Value(int32(d)), 4, nil
}

// maxTimestampYear keeps microseconds since the epoch inside an int64.
const maxTimestampYear = 290000

func encTimestamp(v any, st *colStats) (parquet.Value, int64, error) {
	t, ok := v.(time.Time)
	if !ok || t.Year() > maxTimestampYear || t.Year() < -maxTimestampYear {
		return parquet.Value{}, 0, invalid(v, "timestamp")
	}
	us := t.UnixMicro()
	if st != nil {
		st.observeInt(us)
	}
	return parquet.Int64Value(us), 8, nil
}

func encTimestampNTZ(v any, st *colStats) (parquet.Value, int64, error) {
	t, ok := v.(time.Time)
	if !ok || t.Year() > maxTimestampYear || t.Year() < -maxTimestampYear {
		return parquet.Value{}, 0, invalid(v, "timestamp_ntz")
	}
	if t.Location() != time.UTC {
		y, mo, d := t.Date()
		h, mi, s := t.Clock()
		t = time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
	}
	us := t.UnixMicro()
	if st != nil {
		st.observeInt(us)
	}
	return parquet.Int64Value(us), 8, nil
}

// decimalEncoder encodes decimal(p,s) values as INT32/INT64 (flba == 0) or
// as flba-byte FIXED_LEN_BYTE_ARRAY.
func decimalEncoder(t *schema.DecimalType, flba int) leafEncoder {
	scale := int32(t.Scale)
	limit := pow10(t.Precision)
	want := t.String()
	return func(v any, st *colStats) (parquet.Value, int64, error) {
		var d value.Decimal
		switch v := v.(type) {
		case value.Decimal:
			d = v
		case *value.Decimal:
			if v == nil {
				return parquet.Value{}, 0, invalid(v, want)
			}
			d = *v
		case string:
			var err error
			if d, err = value.ParseDecimal(v); err != nil {
				return parquet.Value{}, 0, invalid(v, want)
			}
		default:
			// Go integers as value.Check accepts them (value.ToInt64).
			n, ok := value.ToInt64(v)
			if !ok {
				return parquet.Value{}, 0, invalid(v, want)
			}
			d = value.NewDecimal(n, 0)
		}
		r, ok := d.Rescale(scale)
		if !ok {
			return parquet.Value{}, 0, fmt.Errorf("%w: %s has more than %d digits after the point for %s", ErrInvalidValue, d, scale, want)
		}
		u := r.Unscaled
		if new(big.Int).Abs(u).Cmp(limit) >= 0 {
			return parquet.Value{}, 0, fmt.Errorf("%w: %s does not fit %s", ErrInvalidValue, d, want)
		}
		if st != nil {
			st.observeDecimal(u)
		}
		switch {
		case flba > 0:
			b, ok := twosComplementBytes(u, flba)
			if !ok {
				return parquet.Value{}, 0, fmt.Errorf("%w: %s does not fit %s", ErrInvalidValue, d, want)
			}
			return parquet.FixedLenByteArrayValue(b), int64(flba), nil
		case t.Precision <= 9:
			return parquet.Int32Value(int32(u.Int64())), 4, nil
		default:
			return parquet.Int64Value(u.Int64()), 8, nil
		}
	}
}

// nulls emits, for every leaf column below n, one entry with repetition
// level rep and definition level def.
func (n *wnode) nulls(rep, def int, cols [][]parquet.Value) {
	for _, c := range n.cols {
		cols[c] = append(cols[c], parquet.Value{}.Level(rep, def, c))
	}
}

// shred emits value v of node n; rep is the repetition level of its first
// entry and parentDef the definition level at which n's parent is present.
func (n *wnode) shred(v any, rep, parentDef int, cols [][]parquet.Value) (int64, error) {
	if v == nil {
		if !n.nullable {
			return 0, n.nullErr()
		}
		if n.stat != nil {
			n.stat.nulls++
		}
		for _, s := range n.statsBelow {
			s.nulls++
		}
		n.nulls(rep, parentDef, cols)
		return int64(len(n.cols)), nil
	}
	switch n.kind {
	case asmLeaf:
		pv, size, err := n.enc(v, n.stat)
		if err != nil {
			return 0, n.fieldErr(err)
		}
		cols[n.col] = append(cols[n.col], pv.Level(rep, n.def, n.col))
		return size, nil

	case asmStruct:
		row, ok := v.(value.Row)
		if !ok || len(row) != len(n.fields) {
			return 0, fmt.Errorf("%w: %T for struct %s with %d fields (want a Row of that length)", ErrInvalidValue, v, n.path, len(n.fields))
		}
		var size int64
		for i, f := range n.fields {
			s, err := f.shred(row[i], rep, n.def, cols)
			if err != nil {
				return 0, err
			}
			size += s
		}
		return size, nil

	case asmList:
		list, ok := v.([]any)
		if !ok {
			return 0, fmt.Errorf("%w: %T for array %s (want []any)", ErrInvalidValue, v, n.path)
		}
		return n.shredRepeated(len(list), rep, cols, func(i, r int) (int64, error) {
			return n.elem.shred(list[i], r, n.def+1, cols)
		})

	default: // asmMap
		m, ok := v.([]value.MapEntry)
		if !ok {
			return 0, fmt.Errorf("%w: %T for map %s (want []MapEntry)", ErrInvalidValue, v, n.path)
		}
		return n.shredRepeated(len(m), rep, cols, func(i, r int) (int64, error) {
			if m[i].Key == nil {
				return 0, fmt.Errorf("%w: null key in map %s", ErrInvalidValue, n.path)
			}
			s, err := n.elem.shred(m[i].Key, r, n.def+1, cols)
			if err != nil {
				return 0, err
			}
			t, err := n.val.shred(m[i].Value, r, n.def+1, cols)
			return s + t, err
		})
	}
}

// shredRepeated emits a non-null list or map of count items (an empty one
// as one entry at n's definition level), item(i, r) emitting item i at
// repetition level r: rep for the first, n.rep for the others.
func (n *wnode) shredRepeated(count, rep int, cols [][]parquet.Value, item func(i, r int) (int64, error)) (int64, error) {
	if n.stat != nil {
		n.stat.observeNonNull()
	}
	if count == 0 {
		n.nulls(rep, n.def, cols)
		return int64(len(n.cols)), nil
	}
	var size int64
	for i := range count {
		r := n.rep
		if i == 0 {
			r = rep
		}
		s, err := item(i, r)
		if err != nil {
			return 0, err
		}
		size += s
	}
	return size, nil
}
