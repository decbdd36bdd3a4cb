package table

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Change data feed: the write side (spec "Add CDC File", "Change Data
// Files"). On a table with delta.enableChangeDataFeed=true, an operation
// that changes rows inside data files (DELETE or UPDATE by a data
// predicate, by deletion vectors or copy-on-write; MERGE) writes what
// changed to change data files under _change_data/, with the column
// _change_type, and lists them in cdc actions of its commit. A reader of
// the feed then takes that version's changes from the cdc files alone.
// Operations that only add whole files (appends) or remove whole files
// (overwrite, replaceWhere, a DELETE by partition values alone) write none:
// readers derive inserts from their adds and deletes from their removes,
// as Spark's table_changes does (Changes).

// Change types, the values of the _change_type column (spec "Change Data
// Files").
const (
	ChangeInsert          = "insert"
	ChangeDelete          = "delete"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

// Names of the change data feed's columns: _change_type is in change data
// files; Changes adds _commit_version and _commit_timestamp.
const (
	ChangeTypeColumn      = "_change_type"
	CommitVersionColumn   = "_commit_version"
	CommitTimestampColumn = "_commit_timestamp"
)

// changeDataDir is the directory of the change data files (Spark's
// CDCReader.CDC_LOCATION).
const changeDataDir = "_change_data/"

// changeRow is one row of change data: a full table row (every column of
// the table schema, in schema order, partition columns included) and what
// happened to it (ChangeDelete, ChangeUpdatePreimage, ...).
type changeRow struct {
	typ string
	row value.Row
}

// changeDataFeedEnabled reports whether writes to this table version must
// record their changes: delta.enableChangeDataFeed=true (Spark's
// CDCReader.isCDCEnabledOnTable reads the property alone).
func changeDataFeedEnabled(m *txlog.Metadata) bool {
	return m != nil && strings.EqualFold(m.Configuration[txlog.PropEnableChangeDataFeed], "true")
}

// cdfEnabled is changeDataFeedEnabled for t's metadata.
func (t *Table) cdfEnabled() bool { return changeDataFeedEnabled(t.snap.Metadata()) }

// writeChangeFiles writes rows as change data files of op: split by
// partition (the partition columns are not in the files, their values are
// in the cdc actions' partitionValues, as for add), each partition's rows
// in files of at most the target file size under
// _change_data/<partition dirs>/cdc-<n>-<uuid>-c000.<codec>.parquet, with
// the data columns of sch (the table schema after the operation: nil for
// the table's; MERGE's schema evolution passes the evolved one) and
// _change_type (string). It appends one cdc
// action (dataChange false) per file to op.cdcs and the keys to
// op.written, so that a commit that fails deletes them; on an error the
// files it wrote are deleted at once. rows must hold valid values of the
// columns of sch (rows read from the table, or validated new rows). No
// rows writes nothing.
func (t *Table) writeChangeFiles(ctx context.Context, op *operation, cfg writeConfig, sch *schema.StructType, rows []changeRow) error {
	if len(rows) == 0 {
		return nil
	}
	if sch == nil {
		sch = t.Schema()
	}
	partCols := t.PartitionColumns()
	pIdx, dIdx, fileSchema, missing := splitPartitionColumns(sch, partCols)
	if missing != "" {
		return fmt.Errorf("table: change data: partition column %q is not in the schema", missing)
	}
	fileSchema.Fields = append(fileSchema.Fields, schema.NewField(ChangeTypeColumn, schema.Primitive(schema.String), true))
	checkers := make([]func(any) (int64, error), len(dIdx))
	for c, j := range dIdx {
		checkers[c] = fieldChecker(sch.Fields[j])
	}

	type cgroup struct {
		values map[string]string
		rows   []value.Row
		sizes  []int64
	}
	groups := map[string]*cgroup{}
	var order []*cgroup
	var key strings.Builder
	for i, cr := range rows {
		if len(cr.row) != len(sch.Fields) {
			return fmt.Errorf("table: change data row %d has %d values, table schema has %d columns", i, len(cr.row), len(sch.Fields))
		}
		key.Reset()
		values := make(map[string]string, len(partCols))
		for k, j := range pIdx {
			s, _, err := SerializePartitionValue(sch.Fields[j].Type, cr.row[j])
			if err != nil {
				return fmt.Errorf("table: change data row %d: partition column %q: %w", i, sch.Fields[j].Name, err)
			}
			values[partCols[k]] = s
			key.WriteString(strconv.Itoa(len(s)))
			key.WriteByte(':')
			key.WriteString(s)
		}
		g := groups[key.String()]
		if g == nil {
			g = &cgroup{values: values}
			groups[key.String()] = g
			order = append(order, g)
		}
		out := make(value.Row, len(dIdx)+1)
		var size int64
		for c, j := range dIdx {
			out[c] = cr.row[j]
			n, err := checkers[c](cr.row[j])
			if err != nil {
				return fmt.Errorf("table: change data row %d: %w", i, err)
			}
			size += n
		}
		out[len(dIdx)] = cr.typ
		g.rows = append(g.rows, out)
		g.sizes = append(g.sizes, size+int64(len(cr.typ)))
	}
	fw := t.newFileWriter(cfg, fileSchema)
	fw.root, fw.prefix = changeDataDir, "cdc"
	for _, g := range order {
		adds, err := fw.writeGroup(ctx, g.values, g.rows, g.sizes)
		if err != nil {
			deleteFiles(t.store, fw.written(), t.cfg.logger)
			return fmt.Errorf("table: change data: %w", err)
		}
		for _, a := range adds {
			op.cdcs = append(op.cdcs, &txlog.AddCDCFile{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size})
		}
	}
	op.written = append(op.written, fw.written()...)
	return nil
}

// changeRows returns rows as change rows of type typ.
func changeRows(typ string, rows []value.Row) []changeRow {
	out := make([]changeRow, len(rows))
	for i, r := range rows {
		out[i] = changeRow{typ: typ, row: r}
	}
	return out
}
