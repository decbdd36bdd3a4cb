package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
)

// This file holds column mapping (spec "Column Mapping"): the ids and
// physical names of new columns, the partitionValues keys of a mapped
// table, and the metadata-only RENAME COLUMN and DROP COLUMNS operations.
// Data files, stats and partitionValues of a mapped table use the physical
// names (parquetio.WithWriteColumnMapping, in Table.parquetOptions); the
// logical names appear only in the schema.

// PropColumnMappingMaxColumnID is the table property holding the highest
// column mapping id ever assigned (spec "Writer Requirements for Column
// Mapping"); deltakit keeps it and never reuses an id.
const PropColumnMappingMaxColumnID = "delta.columnMapping.maxColumnId"

// ErrColumnMappingRequired is returned (wrapped) by RenameColumn and
// DropColumn on a table without column mapping (delta.columnMapping.mode
// none): renaming or dropping a column there would need every data file
// rewritten, and Spark refuses it too.
var ErrColumnMappingRequired = errors.New("column mapping is required (delta.columnMapping.mode name or id)")

// ErrColumnMappingModeChange is returned (wrapped in a
// *ColumnMappingModeChangeError, which also matches ErrInvalidArgument) for
// a change of delta.columnMapping.mode that an existing table cannot take
// without rewriting its data files.
var ErrColumnMappingModeChange = errors.New("column mapping mode change not supported")

// ColumnMappingModeChangeError is a refused change of an existing table's
// delta.columnMapping.mode (by SetProperties, or by any commit whose new
// metaData changes the mode, such as a RESTORE to a version before column
// mapping was enabled). The one change an existing table takes is none to
// name (spec "Column Mapping": the upgrade keeps every column's name as
// its physical name, so the data files stay readable), as Spark allows
// (DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE otherwise). It matches
// ErrColumnMappingModeChange and ErrInvalidArgument with errors.Is.
type ColumnMappingModeChangeError struct {
	Table    string // the table's URI
	Version  int64  // the version the change was asked on
	From, To string // the modes, lower case: none, name or id
	Reason   string
}

// Error names the modes, the version and the reason; the table is named
// by the operation's error that wraps it.
func (e *ColumnMappingModeChangeError) Error() string {
	return fmt.Sprintf("%v: %s from %s to %s at version %d: %s",
		ErrColumnMappingModeChange, txlog.PropColumnMappingMode, e.From, e.To, e.Version, e.Reason)
}

// Unwrap returns ErrColumnMappingModeChange and ErrInvalidArgument.
func (e *ColumnMappingModeChangeError) Unwrap() []error {
	return []error{ErrColumnMappingModeChange, ErrInvalidArgument}
}

// checkMappingModeChange returns a *ColumnMappingModeChangeError when the
// metaData m, committed on top of t's snapshot, changes the column mapping
// mode other than from none to name, or changes it from none to name
// without every field (at any depth) having a column mapping id and its
// name as physical name (what SetProperties assigns, upgradeColumnMapping).
// The commit path calls it for every new metaData of an existing table.
func (t *Table) checkMappingModeChange(m *txlog.Metadata) error {
	from, to := mappingMode(t.snap.Metadata()), mappingMode(m)
	if from == to {
		return nil
	}
	refuse := func(reason string) error {
		return &ColumnMappingModeChangeError{Table: t.URI(), Version: t.Version(), From: from, To: to, Reason: reason}
	}
	switch {
	case from == "none" && to == "id":
		return refuse("the existing data files have no Parquet field ids; enable mode name instead")
	case to == "none":
		return refuse("the data files written since column mapping was enabled use physical names; a table cannot leave column mapping without a rewrite")
	case from != "none":
		return refuse("the data files are read by physical name in one mode and by field id in the other")
	}
	sch, err := schema.Parse(m.SchemaString)
	if err != nil {
		return fmt.Errorf("schema of the new metaData: %w", err)
	}
	var bad string
	walkFields(sch, func(f *schema.StructField) {
		_, hasID := f.FieldID()
		if pn, _ := f.Metadata[schema.MetaColumnMappingName].(string); bad == "" && (!hasID || pn != f.Name) {
			bad = f.Name
		}
	})
	if bad != "" {
		return refuse(fmt.Sprintf("field %q needs a column mapping id and its name as physical name (the existing data files use the names)", bad))
	}
	return nil
}

// upgradeColumnMapping returns sch with every field, at any depth (struct
// fields, also inside arrays and maps), given a fresh column mapping id and
// its current name as physical name, and conf with
// delta.columnMapping.maxColumnId set: the metaData of enabling mode name
// on an existing table (spec "Column Mapping"; the data files, stats and
// partition values written without column mapping use the names, so they
// stay readable without a rewrite). Column mapping keys a field carried
// while the mode was none are replaced. Ids continue after a
// delta.columnMapping.maxColumnId the table has. Neither input is modified.
func upgradeColumnMapping(sch *schema.StructType, conf map[string]string) (*schema.StructType, map[string]string, error) {
	named := mapFields(sch, func(f *schema.StructField) *schema.StructField {
		nf := *f
		nf.Metadata = maps.Clone(f.Metadata)
		if nf.Metadata == nil {
			nf.Metadata = map[string]any{}
		}
		delete(nf.Metadata, schema.MetaColumnMappingID)
		nf.Metadata[schema.MetaColumnMappingName] = f.Name
		return &nf
	}).(*schema.StructType)
	return assignColumnMapping(named, conf)
}

// mappingMode returns the table's column mapping mode in lower case:
// "none", "name" or "id".
func mappingMode(m *txlog.Metadata) string {
	if m == nil {
		return "none"
	}
	return strings.ToLower(m.ColumnMappingMode())
}

// checkMappingMode refuses a delta.columnMapping.mode value other than
// none, name and id (case-insensitive).
func checkMappingMode(v string) error {
	switch strings.ToLower(v) {
	case "", "none", "name", "id":
		return nil
	}
	return fmt.Errorf("table: %w: %s=%q: must be none, name or id", ErrInvalidArgument, txlog.PropColumnMappingMode, v)
}

// assignColumnMapping returns sch with a column mapping id and physical
// name for every field that has none (at any depth: struct fields, also
// inside arrays and maps), and conf with delta.columnMapping.maxColumnId set
// to the highest id in use. New ids continue after the larger of that
// property and the highest id in sch; new physical names are "col-<uuid>",
// as Spark's. Under mode none it returns sch and conf as they are. Neither
// input is modified.
func assignColumnMapping(sch *schema.StructType, conf map[string]string) (*schema.StructType, map[string]string, error) {
	mode := strings.ToLower(conf[txlog.PropColumnMappingMode])
	if mode != "name" && mode != "id" {
		return sch, conf, nil
	}
	var maxID int64
	if v := conf[PropColumnMappingMaxColumnID]; v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("table: %w: %s=%q is not a column id", ErrInvalidArgument, PropColumnMappingMaxColumnID, v)
		}
		maxID = n
	}
	walkFields(sch, func(f *schema.StructField) {
		if id, ok := f.FieldID(); ok {
			maxID = max(maxID, id)
		}
	})
	out := mapFields(sch, func(f *schema.StructField) *schema.StructField {
		_, hasID := f.FieldID()
		name, _ := f.Metadata[schema.MetaColumnMappingName].(string)
		if hasID && name != "" {
			return f
		}
		nf := *f
		nf.Metadata = maps.Clone(f.Metadata)
		if nf.Metadata == nil {
			nf.Metadata = map[string]any{}
		}
		if !hasID {
			maxID++
			nf.Metadata[schema.MetaColumnMappingID] = maxID
		}
		if name == "" {
			nf.Metadata[schema.MetaColumnMappingName] = "col-" + uuid.NewString()
		}
		return &nf
	}).(*schema.StructType)
	nc := maps.Clone(conf)
	nc[PropColumnMappingMaxColumnID] = strconv.FormatInt(maxID, 10)
	return out, nc, nil
}

// mergeSchema is mergeSchemas of t's schema and in, with the column mapping
// ids and physical names of new columns assigned (assignColumnMapping) on a
// table with column mapping: data files of the merged schema use them, and
// the commit of the schema change (evolvedMetadata) keeps them.
func (t *Table) mergeSchema(in *schema.StructType, evolve bool) (*schema.StructType, bool, error) {
	merged, changed, err := mergeSchemas(t.Schema(), in, evolve)
	if err != nil || !changed {
		return merged, changed, err
	}
	merged, _, err = assignColumnMapping(merged, t.snap.Metadata().Configuration)
	return merged, changed, err
}

// withoutMapping returns metadata without the column mapping keys, at any
// depth of t: what a column keeps when it is added to a table (it gets the
// table's own id and physical name).
func withoutMapping(f *schema.StructField) *schema.StructField {
	strip := func(f *schema.StructField) *schema.StructField {
		if _, ok := f.Metadata[schema.MetaColumnMappingID]; !ok {
			if _, ok := f.Metadata[schema.MetaColumnMappingName]; !ok {
				return f
			}
		}
		nf := *f
		nf.Metadata = maps.Clone(f.Metadata)
		delete(nf.Metadata, schema.MetaColumnMappingID)
		delete(nf.Metadata, schema.MetaColumnMappingName)
		return &nf
	}
	nf := strip(f)
	if t := mapFields(f.Type, strip); t != f.Type {
		if nf == f {
			c := *f
			nf = &c
		}
		nf.Type = t
	}
	return nf
}

// walkFields calls fn for every struct field of t, at any depth.
func walkFields(t schema.Type, fn func(*schema.StructField)) { schema.WalkFields(t, fn) }

// mapFields returns t with every struct field, at any depth, replaced by
// fn's result (children first); t itself when nothing changed.
func mapFields(t schema.Type, fn func(*schema.StructField) *schema.StructField) schema.Type {
	switch t := t.(type) {
	case *schema.StructType:
		var out []*schema.StructField
		for i, f := range t.Fields {
			nf := f
			if ct := mapFields(f.Type, fn); ct != f.Type {
				c := *f
				c.Type = ct
				nf = &c
			}
			nf = fn(nf)
			if nf != f && out == nil {
				out = slices.Clone(t.Fields[:i:i])
			}
			if out != nil {
				out = append(out, nf)
			}
		}
		if out == nil {
			return t
		}
		return &schema.StructType{Fields: out}
	case *schema.ArrayType:
		if et := mapFields(t.ElementType, fn); et != t.ElementType {
			return &schema.ArrayType{ElementType: et, ContainsNull: t.ContainsNull}
		}
	case *schema.MapType:
		kt, vt := mapFields(t.KeyType, fn), mapFields(t.ValueType, fn)
		if kt != t.KeyType || vt != t.ValueType {
			return &schema.MapType{KeyType: kt, ValueType: vt, ValueContainsNull: t.ValueContainsNull}
		}
	}
	return t
}

// partitionKeys returns the partitionValues key of each partition column
// (in partition column order): its physical name under column mapping,
// else its name.
func (t *Table) partitionKeys() []string {
	cols := t.PartitionColumns()
	mode := mappingMode(t.snap.Metadata())
	if mode == "none" {
		return cols
	}
	sch := t.Schema()
	keys := make([]string, len(cols))
	for i, c := range cols {
		keys[i] = c
		if f := sch.Field(c); f != nil {
			keys[i] = f.PhysicalName(mode)
		}
	}
	return keys
}

// logicalPartitions wraps pred, a predicate over partition values keyed
// by partition column names, to take partition values keyed as the table
// keys them (partitionKeys). Without column mapping it returns pred.
func (t *Table) logicalPartitions(pred txlog.PartitionPredicate) txlog.PartitionPredicate {
	cols, keys := t.PartitionColumns(), t.partitionKeys()
	if pred == nil || slices.Equal(cols, keys) {
		return pred
	}
	return func(pv map[string]string) bool {
		lv := make(map[string]string, len(cols))
		for i, c := range cols {
			v, ok := pv[keys[i]]
			if !ok {
				v, ok = pv[c]
			}
			if ok {
				lv[c] = v
			}
		}
		return pred(lv)
	}
}

// ---- RENAME COLUMN and DROP COLUMNS ----

// Operation names of the column operations (Spark's commitInfo.operation).
const (
	RenameColumnOperation = "RENAME COLUMN"
	DropColumnsOperation  = "DROP COLUMNS"
)

// RenameColumn renames column from (a dotted path names a nested struct
// field: "a.b") to the name to (a name, not a path: the field stays where it
// is), as Spark's ALTER TABLE RENAME COLUMN: a metadata-only commit, on
// tables with column mapping (mode name or id), where the data files keep
// the physical name. A renamed partition column stays a partition column
// under its new name. The commit's operation is "RENAME COLUMN" with
// parameters oldColumnPath and newColumnPath.
//
// Errors (nothing is committed): ErrColumnMappingRequired on a table without
// column mapping; ErrInvalidArgument for a column that does not exist, an
// empty or dotted new name, or a new name that another field of the same
// struct has (case-insensitive, as Spark compares names); ErrInvalidArgument
// when a CHECK constraint or a generated column refers to the column (Spark
// refuses these too); commit errors (a concurrent metadata change conflicts,
// *txlog.ConflictError).
func (t *Table) RenameColumn(ctx context.Context, from, to string) (*Table, error) {
	if t == nil {
		return nil, nilTableError("rename column")
	}
	nt, err := t.alterColumns(ctx, RenameColumnOperation, "rename column", func(m *txlog.Metadata, sch *schema.StructType) (*schema.StructType, map[string]string, error) {
		path, err := resolvePath(sch, from)
		if err != nil {
			return nil, nil, err
		}
		if to == "" || strings.Contains(to, ".") {
			return nil, nil, fmt.Errorf("%w: new column name %q must be one non-empty name (no dots)", ErrInvalidArgument, to)
		}
		parent := parentStruct(sch, path)
		for i, f := range parent.Fields {
			if i != path[len(path)-1] && strings.EqualFold(f.Name, to) {
				return nil, nil, fmt.Errorf("%w: cannot rename %s to %q: column %q already exists", ErrInvalidArgument, from, to, f.Name)
			}
		}
		if err := checkColumnUse(m, sch, path, "rename"); err != nil {
			return nil, nil, err
		}
		old := namesOf(sch, path)
		newPath := append(slices.Clone(old[:len(old)-1]), to)
		if len(path) == 1 {
			for i, c := range m.PartitionColumns {
				if c == old[0] {
					m.PartitionColumns[i] = to
				}
			}
		}
		out := replaceAt(sch, path, func(f *schema.StructField) *schema.StructField {
			nf := *f
			nf.Name = to
			return &nf
		})
		return out, map[string]string{"oldColumnPath": strings.Join(old, "."), "newColumnPath": strings.Join(newPath, ".")}, nil
	})
	return nt, err
}

// DropColumn drops columns (dotted paths name nested struct fields), as
// Spark's ALTER TABLE DROP COLUMNS: a metadata-only commit, on tables with
// column mapping (mode name or id); the data files keep the dropped
// column's values, which no reader sees any more (and a column added later
// gets a new physical name). The commit's operation is "DROP COLUMNS" with
// parameter columns (a JSON array of the paths).
//
// Errors (nothing is committed): ErrColumnMappingRequired on a table
// without column mapping; ErrInvalidArgument for no column, a column that
// does not exist or is named twice, a partition column, the last data
// column of the table or the last field of a struct, a column a CHECK
// constraint or generated column refers to; commit errors.
func (t *Table) DropColumn(ctx context.Context, columns ...string) (*Table, error) {
	if t == nil {
		return nil, nilTableError("drop columns")
	}
	return t.alterColumns(ctx, DropColumnsOperation, "drop columns", func(m *txlog.Metadata, sch *schema.StructType) (*schema.StructType, map[string]string, error) {
		if len(columns) == 0 {
			return nil, nil, fmt.Errorf("%w: no column to drop", ErrInvalidArgument)
		}
		out := sch
		var names []string
		for _, c := range columns {
			path, err := resolvePath(out, c)
			if err != nil {
				return nil, nil, err
			}
			full := strings.Join(namesOf(out, path), ".")
			if len(path) == 1 && slices.Contains(m.PartitionColumns, out.Fields[path[0]].Name) {
				return nil, nil, fmt.Errorf("%w: cannot drop partition column %q", ErrInvalidArgument, full)
			}
			if err := checkColumnUse(m, out, path, "drop"); err != nil {
				return nil, nil, err
			}
			if parent := parentStruct(out, path); len(parent.Fields) == 1 {
				return nil, nil, fmt.Errorf("%w: cannot drop %q: it is the only field of its struct", ErrInvalidArgument, full)
			}
			out = removeAt(out, path)
			names = append(names, full)
		}
		data := 0
		for _, f := range out.Fields {
			if !slices.Contains(m.PartitionColumns, f.Name) {
				data++
			}
		}
		if data == 0 {
			return nil, nil, fmt.Errorf("%w: cannot drop %v: the table would have no data column", ErrInvalidArgument, columns)
		}
		return out, map[string]string{"columns": jsonString(names)}, nil
	})
}

// alterColumns commits a metadata-only schema change through the one
// operation path: change returns the new schema and the operation
// parameters for the table's metadata m (a clone it may modify) and schema.
func (t *Table) alterColumns(ctx context.Context, name, verb string,
	change func(m *txlog.Metadata, sch *schema.StructType) (*schema.StructType, map[string]string, error)) (*Table, error) {
	fail := func(err error) (*Table, error) {
		return nil, fmt.Errorf("table: %s %s: %w", verb, t.URI(), err)
	}
	m := t.snap.Metadata().Clone()
	if mode := mappingMode(m); mode != "name" && mode != "id" {
		return fail(ErrColumnMappingRequired)
	}
	m.PartitionColumns = slices.Clone(m.PartitionColumns)
	op, err := t.beginAs(name, verb, false, writeConfig{})
	if err != nil {
		return nil, err
	}
	sch, params, err := change(m, t.Schema())
	if err != nil {
		return fail(err)
	}
	s, err := schema.Marshal(sch)
	if err != nil {
		return fail(err)
	}
	m.SchemaString = s
	op.metadata = m
	op.params = params
	return t.commitTable(ctx, op)
}

// resolvePath resolves a dotted column path (names compared as Spark does:
// exactly, else case-insensitively) to field indexes through structs.
func resolvePath(sch *schema.StructType, col string) ([]int, error) {
	if col == "" {
		return nil, fmt.Errorf("%w: empty column name", ErrInvalidArgument)
	}
	parts := strings.Split(col, ".")
	if sch.FieldIndex(col) >= 0 || fieldByName(sch, col) >= 0 {
		parts = []string{col} // a top-level name with a dot in it
	}
	var path []int
	cur := sch
	for i, p := range parts {
		if cur == nil {
			return nil, fmt.Errorf("%w: column %q: %q is not a struct", ErrInvalidArgument, col, strings.Join(parts[:i], "."))
		}
		j := fieldByName(cur, p)
		if j < 0 {
			return nil, fmt.Errorf("%w: column %q does not exist", ErrInvalidArgument, col)
		}
		path = append(path, j)
		cur, _ = cur.Fields[j].Type.(*schema.StructType)
	}
	return path, nil
}

// namesOf returns the field names along path.
func namesOf(sch *schema.StructType, path []int) []string {
	var out []string
	cur := sch
	for _, i := range path {
		f := cur.Fields[i]
		out = append(out, f.Name)
		cur, _ = f.Type.(*schema.StructType)
	}
	return out
}

// parentStruct returns the struct holding the field at path.
func parentStruct(sch *schema.StructType, path []int) *schema.StructType {
	cur := sch
	for _, i := range path[:len(path)-1] {
		cur = cur.Fields[i].Type.(*schema.StructType)
	}
	return cur
}

// replaceAt returns sch with the field at path replaced by fn's result.
func replaceAt(sch *schema.StructType, path []int, fn func(*schema.StructField) *schema.StructField) *schema.StructType {
	out := &schema.StructType{Fields: slices.Clone(sch.Fields)}
	f := sch.Fields[path[0]]
	if len(path) == 1 {
		out.Fields[path[0]] = fn(f)
		return out
	}
	nf := *f
	nf.Type = replaceAt(f.Type.(*schema.StructType), path[1:], fn)
	out.Fields[path[0]] = &nf
	return out
}

// removeAt returns sch without the field at path.
func removeAt(sch *schema.StructType, path []int) *schema.StructType {
	if len(path) == 1 {
		return &schema.StructType{Fields: slices.Delete(slices.Clone(sch.Fields), path[0], path[0]+1)}
	}
	return replaceAt(sch, path[:1], func(f *schema.StructField) *schema.StructField {
		nf := *f
		nf.Type = removeAt(f.Type.(*schema.StructType), path[1:])
		return &nf
	})
}

// checkColumnUse refuses to rename or drop the column at path (or a
// struct holding it, or a field below it) when a CHECK constraint or
// invariant refers to it, or a generated column's expression may (Spark
// refuses both: DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE and
// DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE).
func checkColumnUse(m *txlog.Metadata, sch *schema.StructType, path []int, verb string) error {
	name := strings.Join(namesOf(sch, path), ".")
	cs, err := tableConstraints(m, sch)
	if err != nil {
		return fmt.Errorf("%w: cannot %s %q: %v", ErrInvalidArgument, verb, name, err)
	}
	for _, c := range cs {
		for _, b := range c.cols {
			bp := append([]int{b.Top}, b.Sub...)
			n := min(len(bp), len(path))
			if slices.Equal(bp[:n], path[:n]) {
				return fmt.Errorf("%w: cannot %s column %q: %s %s (%s) refers to it; drop the constraint first",
					ErrInvalidArgument, verb, name, c.kind, c.name, c.expr)
			}
		}
	}
	var gen string
	walkFields(sch, func(f *schema.StructField) {
		if e, ok := f.Metadata["delta.generationExpression"].(string); ok && gen == "" &&
			strings.Contains(strings.ToLower(e), strings.ToLower(namesOf(sch, path)[len(path)-1])) {
			gen = f.Name + " = " + e
		}
	})
	if gen != "" {
		return fmt.Errorf("%w: cannot %s column %q: generated column %s may refer to it", ErrInvalidArgument, verb, name, gen)
	}
	return nil
}
