package table

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
)

// HiveDefaultPartition is the directory value Spark and Hive use for a null
// partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// timestamp partition value layouts (spec "Partition Value Serialization").
const (
	partitionTimestampLayout = "2006-01-02 15:04:05.999999"
	partitionISOLayout       = "2006-01-02T15:04:05.999999Z07:00"
)

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// validatePartitionColumns checks that every partition column is a distinct
// top-level primitive column of sch and that not all columns are partition
// columns.
func validatePartitionColumns(sch *schema.StructType, cols []string) error {
	seen := map[string]bool{}
	for _, c := range cols {
		f := sch.Field(c)
		if f == nil {
			return fmt.Errorf("table: %w: partition column %q is not in the schema", ErrInvalidArgument, c)
		}
		if seen[c] {
			return fmt.Errorf("table: %w: partition column %q named twice", ErrInvalidArgument, c)
		}
		seen[c] = true
		switch f.Type.(type) {
		case *schema.PrimitiveType, *schema.DecimalType:
			if p, ok := f.Type.(*schema.PrimitiveType); ok && p.Name == schema.Variant {
				return fmt.Errorf("table: %w: partition column %q has type variant", ErrInvalidArgument, c)
			}
		default:
			return fmt.Errorf("table: %w: partition column %q has nested type %s", ErrInvalidArgument, c, f.Type)
		}
	}
	if len(cols) > 0 && len(cols) == len(sch.Fields) {
		return fmt.Errorf("table: %w: every column is a partition column; data files need at least one other", ErrInvalidArgument)
	}
	return nil
}

// checkColumnNames refuses empty and duplicate (case-insensitive, as Spark
// compares them) top-level column names.
func checkColumnNames(sch *schema.StructType) error {
	if len(sch.Fields) == 0 {
		return fmt.Errorf("table: %w: schema has no columns", ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, f := range sch.Fields {
		if f.Name == "" {
			return fmt.Errorf("table: %w: empty column name", ErrInvalidArgument)
		}
		k := strings.ToLower(f.Name)
		if seen[k] {
			return fmt.Errorf("table: %w: column %q appears twice (names are case-insensitive)", ErrInvalidArgument, f.Name)
		}
		seen[k] = true
	}
	return nil
}

// SerializePartitionValue returns the partitionValues string of v for a
// partition column of type t (spec "Partition Value Serialization"), and
// false for null. Empty strings are null, as in Spark. Timestamps are written
// as ISO-8601 in UTC ("2024-01-02T03:04:05.123456Z"), timestamp_ntz as
// "2024-01-02 03:04:05.123456", dates as "2024-01-02", decimals in plain
// notation with the column's scale.
func SerializePartitionValue(t schema.Type, v any) (string, bool, error) {
	if v == nil {
		return "", false, nil
	}
	switch t := t.(type) {
	case *schema.DecimalType:
		d, err := toDecimal(v, t)
		if err != nil {
			return "", false, err
		}
		return d.String(), true, nil
	case *schema.PrimitiveType:
		switch t.Name {
		case schema.String:
			s, ok := v.(string)
			if !ok {
				return "", false, typeErr(v, t)
			}
			return s, s != "", nil
		case schema.Binary:
			switch b := v.(type) {
			case []byte:
				return string(b), len(b) > 0, nil
			case string:
				return b, b != "", nil
			}
		case schema.Boolean:
			if b, ok := v.(bool); ok {
				return strconv.FormatBool(b), true, nil
			}
		case schema.Long, schema.Integer, schema.Short, schema.Byte:
			if n, ok := toInt64(v); ok {
				return strconv.FormatInt(n, 10), true, nil
			}
		case schema.Float:
			if f, ok := toFloat64(v); ok {
				return formatPartitionFloat(f, 32), true, nil
			}
		case schema.Double:
			if f, ok := toFloat64(v); ok {
				return formatPartitionFloat(f, 64), true, nil
			}
		case schema.Date:
			switch d := v.(type) {
			case parquetio.Date:
				return d.String(), true, nil
			case time.Time:
				return parquetio.DateOf(d).String(), true, nil
			}
		case schema.Timestamp:
			if ts, ok := v.(time.Time); ok {
				return ts.UTC().Truncate(time.Microsecond).Format(partitionISOLayout), true, nil
			}
		case schema.TimestampNTZ:
			if ts, ok := v.(time.Time); ok {
				wall := time.Date(ts.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond(), time.UTC)
				return wall.Truncate(time.Microsecond).Format(partitionTimestampLayout), true, nil
			}
		}
	}
	return "", false, typeErr(v, t)
}

// formatPartitionFloat formats a float partition value so that Java's
// Double.parseDouble (Spark) and Go's strconv.ParseFloat both read it:
// shortest round-trip digits, and "Infinity"/"-Infinity"/"NaN" as Java
// spells them (Go would write "+Inf").
func formatPartitionFloat(f float64, bits int) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func typeErr(v any, t schema.Type) error {
	return fmt.Errorf("table: %w: value %v of Go type %T does not fit partition type %s", ErrSchemaMismatch, v, v, t)
}

// ParsePartitionValue parses a partitionValues string of a column of type t
// into the parquetio value model. The empty string is null and gives
// (nil, nil); a JSON null or an absent key is the caller's to map to ""
// (spec "Partition Value Serialization"). Timestamps accept both the
// "2006-01-02 15:04:05[.ffffff]" and the ISO-8601 forms. A string that does
// not parse as t is an error (strconv's, or one naming the value), as is a
// type that cannot be a partition column.
func ParsePartitionValue(t schema.Type, s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	switch t := t.(type) {
	case *schema.DecimalType:
		d, err := parquetio.ParseDecimal(s)
		if err != nil {
			return nil, err
		}
		r, ok := d.Rescale(int32(t.Scale))
		if !ok {
			return nil, fmt.Errorf("partition value %q does not fit %s", s, t)
		}
		return r, nil
	case *schema.PrimitiveType:
		switch t.Name {
		case schema.String:
			return s, nil
		case schema.Binary:
			return []byte(s), nil
		case schema.Boolean:
			return strconv.ParseBool(s)
		case schema.Long:
			return strconv.ParseInt(s, 10, 64)
		case schema.Integer:
			n, err := strconv.ParseInt(s, 10, 32)
			return int32(n), err
		case schema.Short:
			n, err := strconv.ParseInt(s, 10, 16)
			return int16(n), err
		case schema.Byte:
			n, err := strconv.ParseInt(s, 10, 8)
			return int8(n), err
		case schema.Float:
			f, err := strconv.ParseFloat(s, 32)
			return float32(f), err
		case schema.Double:
			return strconv.ParseFloat(s, 64)
		case schema.Date:
			d, err := time.Parse(time.DateOnly, s)
			if err != nil {
				return nil, err
			}
			return parquetio.DateOf(d), nil
		case schema.Timestamp, schema.TimestampNTZ:
			ts, err := parsePartitionTimestamp(s)
			if err != nil {
				return nil, err
			}
			return ts, nil
		}
	}
	return nil, fmt.Errorf("partition column type %s is not supported", t)
}

func parsePartitionTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{partitionTimestampLayout, time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999Z07:00"} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("partition value %q is not a timestamp", s)
}

// escapePathName escapes a partition value for a Hive-style directory name
// the way Spark does (ExternalCatalogUtils.escapePathName): control
// characters and "#%'*/:=?\{[]^ and DEL become %XX.
func escapePathName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// partitionDir returns the Hive-style relative directory of a file with
// these partition values ("a=1/b=__HIVE_DEFAULT_PARTITION__"), unencoded.
func partitionDir(cols []string, values map[string]string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v := values[c]
		if v == "" {
			v = HiveDefaultPartition
		} else {
			v = escapePathName(v)
		}
		parts[i] = escapePathName(c) + "=" + v
	}
	return strings.Join(parts, "/")
}

// encodeAddPath returns the add.path of a relative file path: every segment
// URI-encoded once (RFC 2396), so "%" from Hive escaping becomes "%25".
// Readers decode it exactly once.
func encodeAddPath(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// toInt64 returns a Go integer as an int64 (expr.Int64).
func toInt64(v any) (int64, bool) { return expr.Int64(v) }

// toFloat64 returns a Go float as a float64 (expr.Float64).
func toFloat64(v any) (float64, bool) { return expr.Float64(v) }

func toDecimal(v any, t *schema.DecimalType) (parquetio.Decimal, error) {
	var d parquetio.Decimal
	switch x := v.(type) {
	case parquetio.Decimal:
		d = x
	case string:
		var err error
		if d, err = parquetio.ParseDecimal(x); err != nil {
			return d, err
		}
	default:
		if n, ok := toInt64(v); ok {
			d = parquetio.NewDecimal(n, 0)
		} else {
			return d, typeErr(v, t)
		}
	}
	r, ok := d.Rescale(int32(t.Scale))
	if !ok {
		return d, fmt.Errorf("table: %w: decimal %s does not fit %s", ErrSchemaMismatch, d, t)
	}
	return r, nil
}
