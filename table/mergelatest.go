package table

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/value"
)

// LatestPerKey returns a MERGE source holding, of s's rows, only the last
// one (in s's order, the arrival order) of every key: rows whose key
// columns are equal as MERGE's condition compares them (MergeOn(keys...):
// 1 and 1.0, -0 and 0, decimals of another scale) count as one key. It is
// how an upsert stream deduplicates a batch before its MERGE, since a
// target row matched by two source rows is ErrMergeMultipleMatches (as in
// Spark, where a foreachBatch upsert deduplicates the batch first). Rows
// with a null key column are all kept: a null key matches nothing, so each
// is inserted by a WHEN NOT MATCHED clause. The kept rows keep their
// relative order; dropped reports how many rows were dropped.
//
// keys are top-level or nested (dotted) column names of s's schema, each
// of a type a merge key can have; a missing column or an unsupported type
// is an error wrapping ErrInvalidArgument. The rows are not copied.
func (s *MergeSource) LatestPerKey(keys ...string) (out *MergeSource, dropped int, err error) {
	if s == nil || s.schema == nil {
		return nil, 0, bind.Invalidf("latest per key: no source")
	}
	if len(keys) == 0 {
		return nil, 0, bind.Invalidf("latest per key: no key column")
	}
	bd := bind.NewBinder(s.schema, nil, "none")
	cols := make([]*bind.BoundCol, len(keys))
	for i, k := range keys {
		c, err := bd.Column(expr.ColPath(strings.Split(k, ".")...))
		if err != nil {
			return nil, 0, fmt.Errorf("latest per key: key column %s: %w", k, err)
		}
		switch c.Kind {
		case expr.KindInt, expr.KindDate, expr.KindFloat32, expr.KindFloat64, expr.KindBool, expr.KindString, expr.KindBinary, expr.KindTimestamp, expr.KindTimestampNTZ, expr.KindDecimal:
		default:
			return nil, 0, bind.Invalidf("latest per key: column %s of type %s cannot be a merge key", c.Name, c.Type)
		}
		cols[i] = c
	}
	last := make(map[string]int, len(s.rows))
	keyOf := make([]string, len(s.rows)) // "" for a null key (a real key is never empty: "len:value...")
	var b strings.Builder
	for i, r := range s.rows {
		if len(r) != len(s.schema.Fields) {
			return nil, 0, &RowError{Row: i, Err: fmt.Errorf("%w: merge source row has %d values, the source schema has %d columns", ErrInvalidArgument, len(r), len(s.schema.Fields))}
		}
		b.Reset()
		null := false
		for _, c := range cols {
			v := c.Value(r)
			if v == nil {
				null = true
				break
			}
			ks, err := canonicalKey(c, v)
			if err != nil {
				return nil, 0, &RowError{Row: i, Err: fmt.Errorf("key column %s: %w", c.Name, err)}
			}
			b.WriteString(strconv.Itoa(len(ks)))
			b.WriteByte(':')
			b.WriteString(ks)
		}
		if null {
			continue
		}
		keyOf[i] = b.String()
		last[keyOf[i]] = i
	}
	rows := make([]value.Row, 0, len(last))
	for i, r := range s.rows {
		if keyOf[i] == "" || last[keyOf[i]] == i { // a null key is always kept
			rows = append(rows, r)
		}
	}
	return &MergeSource{schema: s.schema, rows: rows}, len(s.rows) - len(rows), nil
}

// Rows returns the source's rows (not copied: do not change them).
func (s *MergeSource) Rows() []Row {
	if s == nil {
		return nil
	}
	return s.rows
}
