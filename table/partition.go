package table

import (
	"encoding/json"
	"fmt"

	"net/url"

	"strings"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/value"
)

// HiveDefaultPartition is the directory value Spark and Hive use for a null
// partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

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
// notation with the column's scale (value.Codec.FormatPartition). v must be
// accepted by the column as in a write: a Go type that does not fit is
// ErrSchemaMismatch, a value out of the type's range ErrInvalidArgument.
func SerializePartitionValue(t schema.Type, v any) (string, bool, error) {
	if v == nil {
		return "", false, nil
	}
	c := value.CodecOf(t)
	if c == nil {
		return "", false, fmt.Errorf("table: %w: partition column type %s is not supported", ErrSchemaMismatch, t)
	}
	s, ok, err := c.FormatPartition(v)
	if err != nil {
		return "", false, fmt.Errorf("table: %w", valueError(err))
	}
	return s, ok, nil
}

// ParsePartitionValue parses a partitionValues string of a column of type t
// into the value model (value.Codec.ParsePartition). The empty string is
// null and gives (nil, nil); a JSON null or an absent key is the caller's
// to map to "" (spec "Partition Value Serialization"). Timestamps accept
// both the "2006-01-02 15:04:05[.ffffff]" and the ISO-8601 forms. A string
// that does not parse as t is a *value.Error wrapping value.ErrSyntax, as
// is a type that cannot be a partition column (value.ErrUnsupported).
func ParsePartitionValue(t schema.Type, s string) (any, error) { return scan.ParsePartitionValue(t, s) }

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
