package ingest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/internal/orderedjson"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// kindMask is the set of Delta types a text value can be read as.
type kindMask uint8

const (
	kLong kindMask = 1 << iota
	kDouble
	kBool
	kDate
	kTimestampNTZ
	kTimestamp
	kAll = kLong | kDouble | kBool | kDate | kTimestampNTZ | kTimestamp
)

// Layouts of timestamps without and with a zone.
var (
	ntzLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02T15:04"}
	tzLayouts  = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999 MST"}
)

func parseNTZ(s string) (time.Time, bool) {
	for _, l := range ntzLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func parseTZ(s string) (time.Time, bool) {
	for _, l := range tzLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// kindsOf returns the types the non-empty text s can be read as.
func kindsOf(s string) kindMask {
	var m kindMask
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		m |= kLong | kDouble
	} else if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !strings.ContainsAny(s, "xXpP_") {
		m |= kDouble
	}
	if strings.EqualFold(s, "true") || strings.EqualFold(s, "false") {
		m |= kBool
	}
	if len(s) == 10 {
		if _, err := time.Parse(time.DateOnly, s); err == nil {
			m |= kDate
		}
	}
	if len(s) > 10 {
		if _, ok := parseNTZ(s); ok {
			m |= kTimestampNTZ
		} else if _, ok := parseTZ(s); ok {
			m |= kTimestamp
		}
	}
	return m
}

// typeOfMask picks the narrowest type a column's values all fit; seen is
// false when the column held only nulls.
func typeOfMask(m kindMask, seen bool) schema.Type {
	if !seen {
		return schema.Primitive(schema.String)
	}
	for _, c := range []struct {
		k kindMask
		t string
	}{{kLong, schema.Long}, {kDouble, schema.Double}, {kBool, schema.Boolean}, {kDate, schema.Date}, {kTimestampNTZ, schema.TimestampNTZ}, {kTimestamp, schema.Timestamp}} {
		if m&c.k != 0 {
			return schema.Primitive(c.t)
		}
	}
	return schema.Primitive(schema.String)
}

// parseText converts the text of one value to Delta type t; "" is null.
// An error quotes the text.
func parseText(t schema.Type, s string) (any, error) {
	return parseShown(t, s, strconv.Quote)
}

// parseShown is parseText with show rendering the text in errors: quoted
// for text (a CSV field, a JSON string), as is for a JSON number, so that
// an error shows the value as the input holds it.
func parseShown(t schema.Type, s string, show func(string) string) (any, error) {
	if s == "" {
		return nil, nil
	}
	switch t := t.(type) {
	case *schema.DecimalType:
		return value.ParseDecimal(strings.TrimSpace(s))
	case *schema.PrimitiveType:
		switch t.Name {
		case schema.String:
			return s, nil
		case schema.Binary:
			// Binary text is base64 (standard alphabet, padded), as
			// deltactl cat writes it and Spark's JSON reader reads it.
			b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("%s is not base64 (a binary value is read as base64 text)", show(truncate(s, 64)))
			}
			return b, nil
		case schema.Long, schema.Integer, schema.Short, schema.Byte:
			bits := map[string]int{schema.Long: 64, schema.Integer: 32, schema.Short: 16, schema.Byte: 8}[t.Name]
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
			if err != nil {
				return nil, fmt.Errorf("%s is not a %s", show(s), t.Name)
			}
			switch bits {
			case 32:
				return int32(n), nil
			case 16:
				return int16(n), nil
			case 8:
				return int8(n), nil
			}
			return n, nil
		case schema.Double, schema.Float:
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, fmt.Errorf("%s is not a %s", show(s), t.Name)
			}
			if t.Name == schema.Float {
				return float32(f), nil
			}
			return f, nil
		case schema.Boolean:
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("%s is not a boolean", show(s))
			}
			return b, nil
		case schema.Date:
			d, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("%s is not a date (want yyyy-mm-dd)", show(s))
			}
			return value.DateOf(d), nil
		case schema.TimestampNTZ:
			if ts, ok := parseNTZ(strings.TrimSpace(s)); ok {
				return ts, nil
			}
			if d, err := time.Parse(time.DateOnly, strings.TrimSpace(s)); err == nil {
				return d, nil
			}
			return nil, fmt.Errorf("%s is not a timestamp without time zone", show(s))
		case schema.Timestamp:
			if ts, ok := parseTZ(strings.TrimSpace(s)); ok {
				return ts, nil
			}
			if ts, ok := parseNTZ(strings.TrimSpace(s)); ok {
				return ts, nil // no zone: UTC
			}
			if d, err := time.Parse(time.DateOnly, strings.TrimSpace(s)); err == nil {
				return d, nil
			}
			return nil, fmt.Errorf("%s is not a timestamp", show(s))
		}
	case *schema.StructType, *schema.ArrayType, *schema.MapType:
		v, err := decodeJSONText(s)
		if err != nil {
			return nil, fmt.Errorf("%s is not JSON for %s: %v", show(s), t, err)
		}
		return convertJSON(t, v)
	}
	return nil, fmt.Errorf("%w: cannot read text as %s", ErrUnsupported, t)
}

// ---- CSV ----

func (s *Source) csvReader(f io.Reader, path string) *csv.Reader {
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.ReuseRecord = true
	switch {
	case s.cfg.delimiter != 0:
		r.Comma = s.cfg.delimiter
	case strings.EqualFold(filepath.Ext(path), ".tsv"):
		r.Comma = '\t'
	}
	return r
}

func csvHeader(r *csv.Reader, path string) ([]string, error) {
	rec, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty CSV file (no header)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	names := make([]string, len(rec))
	seen := map[string]bool{}
	for i, h := range rec {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" {
			h = fmt.Sprintf("_c%d", i)
		}
		if seen[strings.ToLower(h)] {
			return nil, fmt.Errorf("%s: column %q appears twice in the header", path, h)
		}
		seen[strings.ToLower(h)] = true
		names[i] = h
	}
	r.FieldsPerRecord = len(names)
	return names, nil
}

func (s *Source) openCSV(ctx context.Context) error {
	var names []string
	var masks []kindMask
	var seen []bool
	for _, path := range s.files {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		r := s.csvReader(f, path)
		hdr, err := csvHeader(r, path)
		if err != nil {
			f.Close()
			return err
		}
		if names == nil {
			names = hdr
			masks = make([]kindMask, len(hdr))
			for i := range masks {
				masks[i] = kAll
			}
			seen = make([]bool, len(hdr))
		} else if strings.Join(hdr, "\x00") != strings.Join(names, "\x00") {
			f.Close()
			return fmt.Errorf("%w: %s has columns %v, %s has %v", ErrUnsupported, path, hdr, s.files[0], names)
		}
		var rows int64
		for {
			if rows%4096 == 0 && ctx.Err() != nil {
				f.Close()
				return ctx.Err()
			}
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", path, err)
			}
			rows++
			for i, v := range rec {
				if v == "" {
					continue
				}
				seen[i] = true
				if masks[i] != 0 {
					masks[i] &= kindsOf(v)
				}
			}
		}
		f.Close()
		s.rows = append(s.rows, rows)
	}
	st := &schema.StructType{}
	for i, n := range names {
		t := s.cfg.targetType(n)
		if t == nil {
			t = typeOfMask(masks[i], seen[i])
		}
		st.Fields = append(st.Fields, schema.NewField(n, t, true))
	}
	s.schema = st
	return nil
}

func (s *Source) csvRows(ctx context.Context, path string) iter.Seq2[value.Row, error] {
	return fileRows(path, func(f *os.File, yield func(value.Row, error) bool) {
		r := s.csvReader(f, path)
		if _, err := csvHeader(r, path); err != nil {
			yield(nil, err)
			return
		}
		fields := s.schema.Fields
		for n := 0; ; n++ {
			if n%4096 == 0 && ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("%s: %w", path, err))
				return
			}
			row := make(value.Row, len(fields))
			for i, v := range rec {
				x, err := parseText(fields[i].Type, v)
				if err != nil {
					line, _ := r.FieldPos(i)
					yield(nil, fmt.Errorf("%s:%d: column %s: %w", path, line, fields[i].Name, err))
					return
				}
				row[i] = x
			}
			if !yield(row, nil) {
				return
			}
		}
	})
}

// ---- NDJSON ----

// object is a decoded JSON object with its keys in input order.
type object struct {
	keys []string
	vals map[string]any
}

// decodeJSON decodes one JSON value from dec, objects as *object and
// numbers as json.Number.
func decodeJSON(dec *json.Decoder, depth int) (any, error) {
	if depth > 100 {
		return nil, errors.New("JSON nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

func decodeJSONText(s string) (any, error) {
	if !json.Valid([]byte(s)) {
		// The decoder's token stream says only "EOF" for a cut line;
		// Unmarshal says what is wrong and where.
		var v any
		err := json.Unmarshal([]byte(s), &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
		}
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := decodeJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// jkind is the inferred kind of JSON values.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jLong
	jDouble
	jString // Delta string, or date/timestamp per mask
	jStruct
	jArray
	jMixed // values of different kinds: kept as JSON text in a string
)

type jtype struct {
	kind   jkind
	mask   kindMask // jString: date/timestamp kinds every value fits
	fields []string
	types  map[string]*jtype
	elem   *jtype
}

func inferJSON(v any) *jtype {
	switch x := v.(type) {
	case nil:
		return &jtype{kind: jNull}
	case bool:
		return &jtype{kind: jBool}
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return &jtype{kind: jLong}
		}
		return &jtype{kind: jDouble}
	case string:
		return &jtype{kind: jString, mask: kindsOf(x) & (kDate | kTimestampNTZ | kTimestamp)}
	case *object:
		t := &jtype{kind: jStruct, types: map[string]*jtype{}}
		for _, k := range x.keys {
			t.fields = append(t.fields, k)
			t.types[k] = inferJSON(x.vals[k])
		}
		return t
	case []any:
		t := &jtype{kind: jArray, elem: &jtype{kind: jNull}}
		for _, e := range x {
			t.elem = mergeJSON(t.elem, inferJSON(e))
		}
		return t
	}
	return &jtype{kind: jMixed}
}

func mergeJSON(a, b *jtype) *jtype {
	switch {
	case a.kind == jNull:
		return b
	case b.kind == jNull:
		return a
	case a.kind == jLong && b.kind == jDouble, a.kind == jDouble && b.kind == jLong:
		return &jtype{kind: jDouble}
	case a.kind != b.kind:
		return &jtype{kind: jMixed}
	}
	switch a.kind {
	case jString:
		return &jtype{kind: jString, mask: a.mask & b.mask}
	case jStruct:
		t := &jtype{kind: jStruct, fields: append([]string{}, a.fields...), types: map[string]*jtype{}}
		for k, v := range a.types {
			t.types[k] = v
		}
		for _, k := range b.fields {
			if old, ok := t.types[k]; ok {
				t.types[k] = mergeJSON(old, b.types[k])
			} else {
				t.fields = append(t.fields, k)
				t.types[k] = b.types[k]
			}
		}
		return t
	case jArray:
		return &jtype{kind: jArray, elem: mergeJSON(a.elem, b.elem)}
	}
	return a
}

func (t *jtype) delta() schema.Type {
	switch t.kind {
	case jBool:
		return schema.Primitive(schema.Boolean)
	case jLong:
		return schema.Primitive(schema.Long)
	case jDouble:
		return schema.Primitive(schema.Double)
	case jString:
		return typeOfMask(t.mask&(kDate|kTimestampNTZ|kTimestamp), t.mask != 0)
	case jStruct:
		st := &schema.StructType{}
		for _, k := range t.fields {
			st.Fields = append(st.Fields, schema.NewField(k, t.types[k].delta(), true))
		}
		return st
	case jArray:
		return &schema.ArrayType{ElementType: t.elem.delta(), ContainsNull: true}
	}
	return schema.Primitive(schema.String)
}

func (s *Source) openNDJSON(ctx context.Context) error {
	top := &jtype{kind: jStruct, types: map[string]*jtype{}}
	for _, path := range s.files {
		var rows int64
		err := eachLine(ctx, path, func(line int, v *object) error {
			rows++
			top = mergeJSON(top, inferJSON(v))
			return nil
		})
		if err != nil {
			return err
		}
		s.rows = append(s.rows, rows)
	}
	st := &schema.StructType{}
	for _, k := range top.fields {
		t := s.cfg.targetType(k)
		if t == nil {
			t = top.types[k].delta()
		}
		st.Fields = append(st.Fields, schema.NewField(k, t, true))
	}
	if len(st.Fields) == 0 {
		return fmt.Errorf("%w: no JSON object with fields in %s", ErrUnsupported, strings.Join(s.files, ", "))
	}
	s.schema = st
	return nil
}

// eachLine calls fn with each non-blank line of an NDJSON file, decoded.
func eachLine(ctx context.Context, path string, fn func(line int, v *object) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		v, err := decodeJSONText(text)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		o, ok := v.(*object)
		if !ok {
			return fmt.Errorf("%s:%d: not a JSON object", path, line)
		}
		if err := fn(line, o); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (s *Source) ndjsonRows(ctx context.Context, path string) iter.Seq2[value.Row, error] {
	return func(yield func(value.Row, error) bool) {
		stop := errors.New("stop")
		fields := s.schema.Fields
		err := eachLine(ctx, path, func(line int, o *object) error {
			row, col, err := objectRow(fields, o)
			if err != nil {
				return fmt.Errorf("%s:%d: column %s: %w", path, line, col, err)
			}
			if !yield(row, nil) {
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) {
			yield(nil, err)
		}
	}
}

// jsonText returns v as JSON text.
func jsonText(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case *object:
		_ = orderedjson.WriteObject(b, x.keys, func(b *strings.Builder, i int) error {
			writeJSON(b, x.vals[x.keys[i]])
			return nil
		})
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	default:
		vb, _ := json.Marshal(x)
		b.Write(vb)
	}
}

// convertJSON converts a decoded JSON value to Delta type t.
func convertJSON(t schema.Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t := t.(type) {
	case *schema.StructType:
		o, ok := v.(*object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", jsonText(v))
		}
		row := make(value.Row, len(t.Fields))
		for i, f := range t.Fields {
			x, err := convertJSON(f.Type, o.vals[f.Name])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			row[i] = x
		}
		return row, nil
	case *schema.ArrayType:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an array", jsonText(v))
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			x, err := convertJSON(t.ElementType, e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = x
		}
		return out, nil
	case *schema.MapType:
		o, ok := v.(*object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", jsonText(v))
		}
		out := make([]value.MapEntry, 0, len(o.keys))
		for _, k := range o.keys {
			key, err := parseText(t.KeyType, k)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			val, err := convertJSON(t.ValueType, o.vals[k])
			if err != nil {
				return nil, fmt.Errorf("value of %q: %w", k, err)
			}
			out = append(out, value.MapEntry{Key: key, Value: val})
		}
		return out, nil
	case *schema.PrimitiveType:
		switch x := v.(type) {
		case string:
			if t.Name == schema.String {
				return x, nil
			}
			if x == "" {
				return nil, nil
			}
			return parseText(t, x)
		case json.Number:
			if t.Name == schema.String {
				return x.String(), nil
			}
			return parseShown(t, x.String(), func(s string) string { return s })
		case bool:
			switch t.Name {
			case schema.Boolean:
				return x, nil
			case schema.String:
				return strconv.FormatBool(x), nil
			}
			return nil, fmt.Errorf("%v is not a %s", x, t.Name)
		default:
			if t.Name == schema.String {
				return jsonText(v), nil
			}
			return nil, fmt.Errorf("%s is not a %s", jsonText(v), t.Name)
		}
	case *schema.DecimalType:
		switch x := v.(type) {
		case json.Number:
			return value.ParseDecimal(x.String())
		case string:
			return value.ParseDecimal(strings.TrimSpace(x))
		}
		return nil, fmt.Errorf("%s is not a decimal", jsonText(v))
	}
	return nil, fmt.Errorf("%w: cannot read JSON as %s", ErrUnsupported, t)
}
