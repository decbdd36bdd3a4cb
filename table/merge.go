package table

import (
	"errors"
	"reflect"
	"strings"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/value"
)

// This file holds MERGE's public API: the source, the builder of its
// clauses and the result. mergeexec.go runs it.

// ErrMergeMultipleMatches reports a MERGE in which one target row matched
// more than one source row while a WHEN MATCHED clause could modify it
// (Spark's "multiple source rows matched and attempted to modify the same
// target row"): the error names the key. Deduplicate the source first.
var ErrMergeMultipleMatches = errors.New("multiple source rows matched the same target row")

// MergeSource is the source of a MERGE: rows with their schema. Build one
// with MergeRows (untyped rows) or MergeStructs (Go structs).
type MergeSource struct {
	schema *schema.StructType
	rows   []value.Row
}

// MergeRows returns a MERGE source of untyped rows, each holding one value
// per field of sch in schema order, in the value model (package value) (as
// AppendRows takes them). The rows are not copied and must not change
// until the MERGE returns.
func MergeRows(sch *schema.StructType, rows []Row) *MergeSource {
	return &MergeSource{schema: sch, rows: rows}
}

// MergeStructs returns a MERGE source of Go structs (a []T of structs or
// struct pointers), with the schema SchemaOf[T] derives (fields, tags and
// types as for Append). Errors name the Go field or the row (a nil *T).
func MergeStructs[T any](rows []T) (*MergeSource, error) {
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	sch := info.schema(false)
	out, err := encodeStructs(info, sch, reflect.ValueOf(rows), "table: merge source: ")
	if err != nil {
		return nil, err
	}
	return &MergeSource{schema: sch, rows: out}, nil
}

// Schema returns the source's schema.
func (s *MergeSource) Schema() *schema.StructType {
	if s == nil {
		return nil
	}
	return s.schema
}

// Len returns the number of source rows.
func (s *MergeSource) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rows)
}

// Target names column name of the MERGE's target table, in its conditions
// and values: Col("target").Field(name). The SQL form is target.name
// (ParsePredicate parses it so).
func Target(name string) Column { return Col(mergeTargetAlias).Field(name) }

// Source names column name of the MERGE's source: Col("source").Field(name),
// source.name in SQL.
func Source(name string) Column { return Col(mergeSourceAlias).Field(name) }

const (
	mergeTargetAlias = "target"
	mergeSourceAlias = "source"
)

// MergeOn returns the usual MERGE condition, equality on key columns named
// alike in target and source: target.k1 = source.k1 AND target.k2 =
// source.k2 ...
func MergeOn(keys ...string) Expr {
	es := make([]Expr, len(keys))
	for i, k := range keys {
		es[i] = Target(k).Eq(Source(k))
	}
	if len(es) == 1 {
		return es[0]
	}
	return And(es...)
}

type mergeAction uint8

const (
	actUpdate mergeAction = iota
	actUpdateAll
	actDelete
	actInsert
	actInsertAll
)

// actionType is Spark's name of the action in commitInfo.
func (a mergeAction) actionType() string {
	switch a {
	case actUpdate, actUpdateAll:
		return "update"
	case actDelete:
		return "delete"
	}
	return "insert"
}

type mergeClause struct {
	action mergeAction
	cond   Expr // nil: always
	set    map[string]Value
}

// MergeBuilder describes a MERGE: its source, its condition and its
// clauses, in the order given. Build it with NewMerge and the When
// methods, then run it with Merge. Clauses of one kind are tried in order
// and the first whose condition holds acts on the row (a row no clause
// takes is left as it is, or not inserted); as in Spark SQL:
//
//	m := table.NewMerge(src, table.MergeOn("id")).
//		WhenMatched().If(table.Source("deleted").Eq(true)).Delete().
//		WhenMatched().UpdateAll().
//		WhenNotMatched().InsertAll()
//
// Conditions and values refer to columns as Target(name) and Source(name)
// (target.name and source.name in ParsePredicate's SQL); an unqualified
// Col(name) means the one of target or source that has it (an error when
// both have it). A builder is not safe for concurrent changes; once built
// it may be run more than once.
type MergeBuilder struct {
	src                           *MergeSource
	on                            Expr
	matched, notMatched, bySource []mergeClause
}

// NewMerge starts a MERGE of src into a table on condition on: a
// conjunction holding at least one equality of a target column with a
// source column (the join keys: MergeOn, or Target("id").Eq(Source("id"))),
// and possibly more conditions on both (every one must hold for a target
// row to match a source row). A row whose key is null matches nothing.
func NewMerge(src *MergeSource, on Expr) *MergeBuilder {
	return &MergeBuilder{src: src, on: on}
}

// MatchedClause is a WHEN MATCHED clause being built.
type MatchedClause struct {
	m    *MergeBuilder
	cond Expr
}

// NotMatchedClause is a WHEN NOT MATCHED [BY TARGET] clause being built.
type NotMatchedClause struct {
	m    *MergeBuilder
	cond Expr
}

// NotMatchedBySourceClause is a WHEN NOT MATCHED BY SOURCE clause being
// built.
type NotMatchedBySourceClause struct {
	m    *MergeBuilder
	cond Expr
}

// WhenMatched starts a clause for target rows that match a source row.
func (m *MergeBuilder) WhenMatched() *MatchedClause { return &MatchedClause{m: m} }

// WhenNotMatched starts a clause for source rows that match no target row.
func (m *MergeBuilder) WhenNotMatched() *NotMatchedClause { return &NotMatchedClause{m: m} }

// WhenNotMatchedBySource starts a clause for target rows that match no
// source row. Such a clause makes the MERGE read every file of the table.
func (m *MergeBuilder) WhenNotMatchedBySource() *NotMatchedBySourceClause {
	return &NotMatchedBySourceClause{m: m}
}

// add appends a clause to list (m's matched, notMatched or bySource).
func (m *MergeBuilder) add(list *[]mergeClause, action mergeAction, cond Expr, set map[string]Value) *MergeBuilder {
	*list = append(*list, mergeClause{action: action, cond: cond, set: exprSet(set)})
	return m
}

// If adds a condition (on target and source columns) to the clause.
func (c *MatchedClause) If(cond Expr) *MatchedClause { c.cond = cond; return c }

// Update sets the target columns named by set's keys (target column names,
// "target." optional) to its values, which may refer to target and source
// columns (Target, Source), literals and arithmetic, as Update's SET does.
func (c *MatchedClause) Update(set map[string]Value) *MergeBuilder {
	return c.m.add(&c.m.matched, actUpdate, c.cond, set)
}

// UpdateAll sets every target column to the source column of the same
// name (UPDATE SET *). Without WithSchemaEvolution the source must have
// every target column; with it, source columns the target lacks are added
// to the table and target columns the source lacks keep their values.
func (c *MatchedClause) UpdateAll() *MergeBuilder {
	return c.m.add(&c.m.matched, actUpdateAll, c.cond, nil)
}

// Delete deletes the matched target row.
func (c *MatchedClause) Delete() *MergeBuilder {
	return c.m.add(&c.m.matched, actDelete, c.cond, nil)
}

// If adds a condition (on source columns) to the clause.
func (c *NotMatchedClause) If(cond Expr) *NotMatchedClause { c.cond = cond; return c }

// Insert inserts a target row whose columns named by values' keys get its
// values (on source columns, literals, arithmetic); other columns are null.
func (c *NotMatchedClause) Insert(values map[string]Value) *MergeBuilder {
	return c.m.add(&c.m.notMatched, actInsert, c.cond, values)
}

// InsertAll inserts the source row as a target row, columns matched by
// name (INSERT *); source columns and schema evolution as for UpdateAll
// (target columns the source lacks are null with WithSchemaEvolution).
func (c *NotMatchedClause) InsertAll() *MergeBuilder {
	return c.m.add(&c.m.notMatched, actInsertAll, c.cond, nil)
}

// If adds a condition (on target columns) to the clause.
func (c *NotMatchedBySourceClause) If(cond Expr) *NotMatchedBySourceClause { c.cond = cond; return c }

// Update sets target columns of the unmatched target row (values on target
// columns, literals, arithmetic).
func (c *NotMatchedBySourceClause) Update(set map[string]Value) *MergeBuilder {
	return c.m.add(&c.m.bySource, actUpdate, c.cond, set)
}

// Delete deletes the unmatched target row.
func (c *NotMatchedBySourceClause) Delete() *MergeBuilder {
	return c.m.add(&c.m.bySource, actDelete, c.cond, nil)
}

// MergeResult reports what a Merge did: the DMLResult counts
// (UpdatedRows, DeletedRows and CopiedRows over all clauses, files and
// deletion vectors) and the MERGE's own; the same figures are in
// commitInfo.operationMetrics under Spark's keys (Metrics).
type MergeResult struct {
	DMLResult
	// SourceRows and InsertedRows count source rows and inserted rows.
	SourceRows, InsertedRows int64
	// The updated and deleted rows by the kind of clause that acted.
	MatchedUpdatedRows, NotMatchedBySourceUpdatedRows int64
	MatchedDeletedRows, NotMatchedBySourceDeletedRows int64
}

// qualifyColumn resolves a MERGE column reference: target.x and source.x
// stay; an unqualified name is the one of target or source that has it.
func qualifyColumn(tgt, src *schema.StructType) func(expr.Column) (expr.Column, error) {
	return func(c expr.Column) (expr.Column, error) {
		path := c.Path()
		if len(path) == 0 {
			return c, bind.Invalidf("empty column reference")
		}
		if len(path) >= 2 && (strings.EqualFold(path[0], mergeTargetAlias) || strings.EqualFold(path[0], mergeSourceAlias)) {
			return expr.ColPath(append([]string{strings.ToLower(path[0])}, path[1:]...)...), nil
		}
		_, terr := bind.LookupField(tgt, path[0])
		_, serr := bind.LookupField(src, path[0])
		switch {
		case terr == nil && serr == nil:
			return c, bind.Invalidf("column %s is ambiguous in MERGE: both target and source have it (write target.%s or source.%s)", c, c, c)
		case terr == nil:
			return expr.ColPath(append([]string{mergeTargetAlias}, path...)...), nil
		case serr == nil:
			return expr.ColPath(append([]string{mergeSourceAlias}, path...)...), nil
		}
		return c, bind.Invalidf("MERGE: neither target nor source has a column %s", c)
	}
}

// mapExpr returns e with every column reference replaced by fn's
// (expr.MapColumns).
func mapExpr(e Expr, fn func(expr.Column) (expr.Column, error)) (Expr, error) {
	return expr.MapColumns(e, fn)
}

// mapValue returns v with every column reference replaced by fn's.
func mapValue(v Value, fn func(expr.Column) (expr.Column, error)) (Value, error) {
	return expr.MapValueColumns(v, fn)
}

// conjuncts flattens the top-level ANDs of e.
func conjuncts(e Expr) []Expr { return expr.Conjuncts(e) }

// exprColumns calls fn for every column reference of e.
func exprColumns(e Expr, fn func(expr.Column)) { expr.Columns(e, fn) }
