package table

import (
	"context"
	"fmt"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// replaceWhere is the partition predicate of WithReplaceWhere.
type replaceWhere struct {
	expr Expr
}

// WithReplaceWhere makes OverwriteRows (and Overwrite) replace only the
// partitions matching pred instead of the whole table (Spark's
// replaceWhere). pred may reference partition columns only (Col("date").
// Eq(d), In, And, Or, Not, IsNull, ...); it is evaluated on the partition
// values of each live file, and every new row must satisfy it, else the
// write fails with ErrInvalidArgument before any file is written.
//
// The transaction reads the matching files with that predicate, so a
// concurrent commit that removes one of them makes the commit fail with
// txlog.ErrConcurrentDeleteRead, and one that adds files to a matching
// partition with txlog.ErrConcurrentAppend: two concurrent replaceWhere
// overwrites of the same partition never both succeed. Writes to other
// partitions do not conflict.
func WithReplaceWhere(pred Expr) WriteOption {
	return func(c *writeConfig) { c.replace = &replaceWhere{expr: pred} }
}

func (r *replaceWhere) String() string {
	if r.expr == nil {
		return "<nil>"
	}
	return r.expr.String()
}

// bind resolves the predicate against the table schema and returns it as a
// txlog partition predicate over serialized partition values. Columns that
// are not partition columns are refused.
func (r *replaceWhere) bind(sch *schema.StructType, partCols []string) (txlog.PartitionPredicate, error) {
	if len(partCols) == 0 {
		return nil, fmt.Errorf("table: %w: WithReplaceWhere needs a partitioned table", ErrInvalidArgument)
	}
	p, err := bind.NewBinder(sch, partCols, "none").Bind(r.expr, false)
	if err != nil {
		return nil, err
	}
	var bad error
	p.Columns(func(c *bind.BoundCol) {
		if bad == nil && (!c.Partition || len(c.Sub) > 0) {
			bad = fmt.Errorf("table: %w: replaceWhere predicate %s references %s, which is not a partition column",
				ErrInvalidArgument, r.expr, c.Name)
		}
	})
	if bad != nil {
		return nil, bad
	}
	type partCol struct {
		idx  int
		name string
		typ  schema.Type
	}
	cols := make([]partCol, len(partCols))
	for i, c := range partCols {
		j := sch.FieldIndex(c)
		if j < 0 {
			return nil, fmt.Errorf("table: %w: partition column %q is not in the schema", ErrSchemaMismatch, c)
		}
		cols[i] = partCol{idx: j, name: c, typ: sch.Fields[j].Type}
	}
	width := len(sch.Fields)
	return func(pv map[string]string) bool {
		row := make(value.Row, width)
		for _, c := range cols {
			v, err := ParsePartitionValue(c.typ, pv[c.name])
			if err != nil {
				// A value we cannot parse: treat the file as matching, so
				// that it is replaced (and conflicts) rather than kept.
				return true
			}
			row[c.idx] = v
		}
		return p.MatchRow(row)
	}, nil
}

// OverwriteRows replaces the table's data with rows and returns the table
// at the new version. Without WithReplaceWhere every live file is removed
// (the transaction reads the whole table, so any concurrent data change
// conflicts); with it, only the files of the matching partitions. Removes
// carry dataChange true, the deletion timestamp (ms), the partition values
// and size (extendedFileMetadata). Rows are validated and written as in
// AppendRows; the commit is operation "WRITE" with mode "Overwrite" (and
// "predicate" for replaceWhere). The schema is kept (merged with
// WithSchemaEvolution, never replaced). Overwriting a table with
// delta.appendOnly=true returns ErrAppendOnly.
func (t *Table) OverwriteRows(ctx context.Context, rows []Row, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("overwrite")
	}
	return t.writeRows(ctx, modeOverwrite, rows, opts)
}
