package table

import (
	"fmt"
	"maps"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// mergeSchemas returns the table schema after writing data of schema in to
// a table of schema cur, and whether it differs from cur. Columns match by
// name (exact, then case-insensitive). Without evolve, in must fit cur: no
// new columns, compatible types, every NOT NULL column of cur present. With
// evolve, new columns are appended as nullable and NOT NULL is relaxed where
// in is nullable (see WithSchemaEvolution). Errors wrap ErrSchemaMismatch
// and name the column.
func mergeSchemas(cur, in *schema.StructType, evolve bool) (*schema.StructType, bool, error) {
	if in == nil {
		return cur, false, nil
	}
	if err := checkColumnNames(in); err != nil {
		return nil, false, err
	}
	return mergeStruct(cur, in, evolve, "")
}

func mergeStruct(cur, in *schema.StructType, evolve bool, path string) (*schema.StructType, bool, error) {
	out := &schema.StructType{Fields: make([]*schema.StructField, 0, len(cur.Fields)+len(in.Fields))}
	changed := false
	used := make([]bool, len(in.Fields))
	for _, cf := range cur.Fields {
		col := joinPath(path, cf.Name)
		ii := fieldByName(in, cf.Name)
		if ii < 0 {
			if !cf.Nullable {
				return nil, false, fmt.Errorf("table: %w: NOT NULL column %q is missing from the input", ErrSchemaMismatch, col)
			}
			out.Fields = append(out.Fields, cf)
			continue
		}
		if used[ii] {
			return nil, false, fmt.Errorf("table: %w: input column %q matches two table columns", ErrSchemaMismatch, in.Fields[ii].Name)
		}
		used[ii] = true
		inf := in.Fields[ii]
		t, ch, err := mergeType(cf.Type, inf.Type, evolve, col)
		if err != nil {
			return nil, false, err
		}
		nullable := cf.Nullable
		if !nullable && inf.Nullable && evolve {
			nullable, ch = true, true
		}
		if ch {
			changed = true
			out.Fields = append(out.Fields, &schema.StructField{Name: cf.Name, Type: t, Nullable: nullable, Metadata: maps.Clone(cf.Metadata)})
		} else {
			out.Fields = append(out.Fields, cf)
		}
	}
	for i, inf := range in.Fields {
		if used[i] {
			continue
		}
		col := joinPath(path, inf.Name)
		if !evolve {
			return nil, false, fmt.Errorf("table: %w: column %q is not in the table schema (use table.WithSchemaEvolution to add it)", ErrSchemaMismatch, col)
		}
		if fieldByName(out, inf.Name) >= 0 {
			return nil, false, fmt.Errorf("table: %w: column %q differs from an existing column only in case", ErrSchemaMismatch, col)
		}
		if primName(inf.Type) == schema.Variant {
			return nil, false, fmt.Errorf("table: %w: cannot add variant column %q", ErrSchemaMismatch, col)
		}
		// A new column gets the table's own column mapping id and
		// physical name (evolvedMetadata), never the input's.
		nf := withoutMapping(inf)
		out.Fields = append(out.Fields, &schema.StructField{Name: nf.Name, Type: nf.Type, Nullable: true, Metadata: maps.Clone(nf.Metadata)})
		changed = true
	}
	return out, changed, nil
}

// mergeType merges an input type into a table column type.
func mergeType(cur, in schema.Type, evolve bool, col string) (schema.Type, bool, error) {
	switch c := cur.(type) {
	case *schema.StructType:
		if i, ok := in.(*schema.StructType); ok {
			return mergeStruct(c, i, evolve, col)
		}
	case *schema.ArrayType:
		if i, ok := in.(*schema.ArrayType); ok {
			et, ch, err := mergeType(c.ElementType, i.ElementType, evolve, col+".element")
			if err != nil {
				return nil, false, err
			}
			containsNull := c.ContainsNull
			if !containsNull && i.ContainsNull && evolve {
				containsNull, ch = true, true
			}
			if !ch {
				return cur, false, nil
			}
			return &schema.ArrayType{ElementType: et, ContainsNull: containsNull}, true, nil
		}
	case *schema.MapType:
		if i, ok := in.(*schema.MapType); ok {
			kt, kch, err := mergeType(c.KeyType, i.KeyType, evolve, col+".key")
			if err != nil {
				return nil, false, err
			}
			vt, vch, err := mergeType(c.ValueType, i.ValueType, evolve, col+".value")
			if err != nil {
				return nil, false, err
			}
			valueContainsNull := c.ValueContainsNull
			ch := kch || vch
			if !valueContainsNull && i.ValueContainsNull && evolve {
				valueContainsNull, ch = true, true
			}
			if !ch {
				return cur, false, nil
			}
			return &schema.MapType{KeyType: kt, ValueType: vt, ValueContainsNull: valueContainsNull}, true, nil
		}
	default:
		if assignable(cur, in) {
			return cur, false, nil
		}
	}
	return nil, false, fmt.Errorf("table: %w: column %q has type %s; the input has %s", ErrSchemaMismatch, col, cur, in)
}

// typeFamily groups the primitive types whose values the writer converts
// into each other (integers of any width into any integer or decimal
// column, float into double, time.Time into timestamp, timestamp_ntz and
// date, strings and bytes into string and binary).
func typeFamily(t schema.Type) string {
	if _, ok := t.(*schema.DecimalType); ok {
		return "decimal"
	}
	switch primName(t) {
	case schema.Long, schema.Integer, schema.Short, schema.Byte:
		return "int"
	case schema.Float, schema.Double:
		return "float"
	case schema.String, schema.Binary:
		return "bytes"
	case schema.Timestamp, schema.TimestampNTZ, schema.Date:
		return "time"
	case schema.Boolean:
		return "bool"
	}
	return ""
}

// assignable reports whether input of primitive type in may be written to a
// column of type cur (values are still checked one by one).
func assignable(cur, in schema.Type) bool {
	cf, inf := typeFamily(cur), typeFamily(in)
	if cf == "" || inf == "" {
		return false
	}
	return cf == inf || (cf == "decimal" && inf == "int")
}

// evolvedMetadata returns the metaData (and, when the new schema needs it,
// the protocol) that commits schema sch.
func (t *Table) evolvedMetadata(sch *schema.StructType) (*txlog.Metadata, *txlog.Protocol, error) {
	if err := checkColumnNames(sch); err != nil {
		return nil, nil, err
	}
	m := t.snap.Metadata().Clone()
	// Column mapping: new columns get fresh ids and physical names, and
	// delta.columnMapping.maxColumnId follows.
	sch, conf, err := assignColumnMapping(sch, m.Configuration)
	if err != nil {
		return nil, nil, err
	}
	m.Configuration = conf
	s, err := schema.Marshal(sch)
	if err != nil {
		return nil, nil, err
	}
	m.SchemaString = s
	var p *txlog.Protocol
	cur := t.snap.Protocol()
	if np := txlog.ProtocolFor(cur, sch, m.Configuration); np != cur {
		p = np
	}
	return m, p, nil
}

// ---- projection of untyped rows ----

// rowProj maps a row of one struct type to a row of another.
type rowProj func(value.Row) (value.Row, error)

// valueProj maps a non-nil value of one type to another.
type valueProj func(any) (any, error)

// structProjector returns the mapping of rows of in to rows of out (a
// merge of in into a table schema: every field of in has a field of out by
// name), or nil when rows of in are already rows of out.
func structProjector(in, out *schema.StructType) rowProj {
	src := make([]int, len(out.Fields))
	subs := make([]valueProj, len(out.Fields))
	identity := len(in.Fields) == len(out.Fields)
	for j, of := range out.Fields {
		i := fieldByName(in, of.Name)
		src[j] = i
		if i != j {
			identity = false
		}
		if i >= 0 {
			subs[j] = typeProjector(in.Fields[i].Type, of.Type)
			if subs[j] != nil {
				identity = false
			}
		}
	}
	if identity {
		return nil
	}
	width := len(in.Fields)
	return func(row value.Row) (value.Row, error) {
		if len(row) != width {
			return nil, fmt.Errorf("%w: row has %d values, the row schema has %d columns", ErrInvalidArgument, len(row), width)
		}
		o := make(value.Row, len(src))
		for j, i := range src {
			if i < 0 || row[i] == nil {
				continue
			}
			if subs[j] == nil {
				o[j] = row[i]
				continue
			}
			v, err := subs[j](row[i])
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", out.Fields[j].Name, err)
			}
			o[j] = v
		}
		return o, nil
	}
}

// typeProjector returns the mapping of values of in to values of out, nil
// when none is needed.
func typeProjector(in, out schema.Type) valueProj {
	switch o := out.(type) {
	case *schema.StructType:
		i, ok := in.(*schema.StructType)
		if !ok {
			return nil
		}
		p := structProjector(i, o)
		if p == nil {
			return nil
		}
		return func(v any) (any, error) {
			row, ok := v.(value.Row)
			if !ok {
				return v, nil // the validator reports the wrong type
			}
			return p(row)
		}
	case *schema.ArrayType:
		i, ok := in.(*schema.ArrayType)
		if !ok {
			return nil
		}
		p := typeProjector(i.ElementType, o.ElementType)
		if p == nil {
			return nil
		}
		return func(v any) (any, error) {
			list, ok := v.([]any)
			if !ok {
				return v, nil
			}
			res := make([]any, len(list))
			for k, e := range list {
				if e == nil {
					continue
				}
				x, err := p(e)
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", k, err)
				}
				res[k] = x
			}
			return res, nil
		}
	case *schema.MapType:
		i, ok := in.(*schema.MapType)
		if !ok {
			return nil
		}
		kp := typeProjector(i.KeyType, o.KeyType)
		vp := typeProjector(i.ValueType, o.ValueType)
		if kp == nil && vp == nil {
			return nil
		}
		return func(v any) (any, error) {
			entries, ok := v.([]value.MapEntry)
			if !ok {
				return v, nil
			}
			res := make([]value.MapEntry, len(entries))
			for k, e := range entries {
				res[k] = e
				var err error
				if kp != nil && e.Key != nil {
					if res[k].Key, err = kp(e.Key); err != nil {
						return nil, fmt.Errorf("key of entry %d: %w", k, err)
					}
				}
				if vp != nil && e.Value != nil {
					if res[k].Value, err = vp(e.Value); err != nil {
						return nil, fmt.Errorf("value of entry %d: %w", k, err)
					}
				}
			}
			return res, nil
		}
	}
	return nil
}
