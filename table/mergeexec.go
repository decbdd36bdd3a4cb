package table

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/table/internal/rowtrack"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Merge runs the MERGE m into t (Spark's MERGE INTO) and returns the table
// at the new version, with what it did.
//
// Every target row that matches a source row (m's condition holds) is
// handed to the first WHEN MATCHED clause whose condition holds: updated
// or deleted; every source row that matches no target row to the first
// WHEN NOT MATCHED clause: inserted; every target row that matches no
// source row to the first WHEN NOT MATCHED BY SOURCE clause. A target row
// that matches more than one source row is ErrMergeMultipleMatches, naming
// the key, when a WHEN MATCHED clause exists (except a single unconditional
// Delete, as in Spark). Null keys never match.
//
// Before any file is read, the target's files are pruned by the source's
// keys: their range (min and max) against the files' stats, their values
// against partition values, and by the condition's other terms on target
// columns alone (without WHEN NOT MATCHED BY SOURCE clauses: those need
// every row). Files where nothing changes are not rewritten. Changed rows
// are removed as Delete removes them: by deletion vectors when the table
// has them enabled, else by rewriting their files (copy-on-write); updated
// and inserted rows go into new files, validated as appended rows are.
//
// With WithSchemaEvolution, source columns the target lacks are added to
// the table (top-level, nullable, at the end) when an UpdateAll or
// InsertAll clause exists, as Spark's schema.autoMerge does.
//
// The commit is operation "MERGE" with Spark's parameters (predicate,
// matchedPredicates, notMatchedPredicates, notMatchedBySourcePredicates:
// JSON arrays of {"actionType", "predicate"}) and metrics (numSourceRows,
// numTargetRowsInserted, numTargetRowsUpdated,
// numTargetRowsMatchedUpdated, numTargetRowsNotMatchedBySourceUpdated,
// numTargetRowsDeleted, numTargetRowsMatchedDeleted,
// numTargetRowsNotMatchedBySourceDeleted, numTargetRowsCopied,
// numOutputRows, numTargetFilesAdded, numTargetFilesRemoved,
// numTargetBytesAdded, numTargetBytesRemoved,
// numTargetDeletionVectorsAdded, numTargetDeletionVectorsRemoved,
// numTargetDeletionVectorsUpdated, numTargetChangeFilesAdded,
// executionTimeMs, scanTimeMs, rewriteTimeMs). It records what it read
// (the partitions its pruning keeps and their files; the whole table when
// the pruning is by stats only or there is a NOT MATCHED BY SOURCE
// clause), so a concurrent commit that added files there (not blindly, or
// any with delta.isolationLevel=Serializable) or removed a file read makes
// it fail with a *txlog.ConflictError; an insert-only MERGE whose keys
// include a partition column does not conflict with writes to other
// partitions.
//
// On a change data feed table (delta.enableChangeDataFeed=true) the MERGE
// also writes change data files, as Spark's does: deleted rows
// (_change_type "delete"), updated rows before and after
// ("update_preimage", "update_postimage") and inserted rows ("insert");
// a MERGE that changes no target row (inserts only) writes none, its
// inserts are read from its adds as an append's are.
//
// When nothing changes and WithTxn is not given, nothing is committed
// (Committed false). Options: WithTxn (a replayed version is skipped),
// WithSchemaEvolution, WithOperationParameters, and the file options.
//
// Errors, all before anything is written: a condition without a key
// equality, a key or column missing from the source or target, a type
// mismatch, an invalid clause (ErrInvalidArgument; key type mismatches
// also ErrSchemaMismatch), ErrAppendOnly when an update or delete clause
// meets a table with delta.appendOnly=true (an insert-only MERGE is
// allowed), txlog.ErrUnsupportedFeature; ErrMergeMultipleMatches; a row that fails
// validation is a *RowError. The table is unchanged after any error.
func (t *Table) Merge(ctx context.Context, m *MergeBuilder, opts ...WriteOption) (*Table, *MergeResult, error) {
	if t == nil {
		return nil, nil, nilTableError("merge")
	}
	if cfg := newWriteConfig(opts); cfg.conflictRetries > 0 {
		return retryConflicts(ctx, t, "merge into", cfg.conflictRetries, opts, func(t *Table, o []WriteOption) (*Table, *MergeResult, error) { return t.Merge(ctx, m, o...) })
	}
	nt, res, err := merge(ctx, t, m, newWriteConfig(opts))
	if err != nil {
		return nil, nil, opError(ctx, "merge into", t.URI(), err)
	}
	return nt, res, nil
}

// mergeKey is one equi-join key: target column = source column.
type mergeKey struct {
	t, s *bind.BoundCol // bound in the merge row schema
	name string         // target column name (top level)
	top  int            // target column index, -1 for a nested field
}

// boundMergeClause is a clause bound to the merge row schema.
type boundMergeClause struct {
	mergeClause
	cond *bind.Pred  // nil: always
	sets []setClause // target columns (new schema indexes) set by update/insert
	// keep[j] for UpdateAll: column j is absent from the source and keeps
	// its value (schema evolution).
	keep []bool
}

// MergeFileChanges are the changes of a MERGE to one target file, for the
// change data feed: the rows deleted, and the updated rows before and
// after (in one order).
type mergeFileChanges struct {
	add                 *txlog.Add
	deleted             []value.Row
	preimage, postimage []value.Row
}

// mergeChanges is what a MERGE changed, row by row: per touched target
// file, and the inserted rows. Rows are in the table schema after the
// merge (evolved, when it evolves).
type mergeChanges struct {
	files    []*mergeFileChanges
	inserted []value.Row
}

// changeRows returns the change data of a MERGE on a change data feed
// table, as Spark's MERGE writes it (MergeOutputGeneration with CDC on):
// deleted rows as ChangeDelete, updated rows as ChangeUpdatePreimage and
// ChangeUpdatePostimage, inserted rows as ChangeInsert, rows copied
// unchanged by copy-on-write not at all. A MERGE that changed no target row
// (inserts only) writes no change data files, as Spark's insert-only
// MERGE does not: a reader derives the inserts from the version's adds,
// as for an append. When any target row changed, the inserts go into the
// change data files too, since a reader of a version that has cdc files
// reads only them (spec "Change Data Files").
func (ch *mergeChanges) changeRows() []changeRow {
	if len(ch.files) == 0 {
		return nil
	}
	var out []changeRow
	for _, fc := range ch.files {
		out = append(out, changeRows(ChangeDelete, fc.deleted)...)
		for i := range fc.preimage {
			out = append(out, changeRow{typ: ChangeUpdatePreimage, row: fc.preimage[i]},
				changeRow{typ: ChangeUpdatePostimage, row: fc.postimage[i]})
		}
	}
	return append(out, changeRows(ChangeInsert, ch.inserted)...)
}

// mergeExec is one MERGE bound to a table snapshot.
type mergeExec struct {
	t                             *Table
	b                             *MergeBuilder
	cfg                           writeConfig
	src                           *MergeSource
	oldSch                        *schema.StructType
	sch                           *schema.StructType // the target schema after the merge
	evolved                       bool
	rowSch                        *schema.StructType // struct<target: sch, source: src.schema>
	keys                          []mergeKey
	residual                      *bind.Pred // the condition's terms beyond the keys (nil: none)
	targetOnly                    []Expr     // residual terms on target columns alone, unqualified
	onText                        string
	matched, notMatched, bySource []*boundMergeClause
	checkDup                      bool
	// starProj maps a source row to a row of sch (UpdateAll/InsertAll).
	starProj rowProj
	inSource []bool // by sch column: the source has it
}

func merge(ctx context.Context, t *Table, m *MergeBuilder, cfg writeConfig) (*Table, *MergeResult, error) {
	if m == nil || m.src == nil || m.src.schema == nil {
		return nil, nil, bind.Invalidf("merge into %s: no source", t.URI())
	}
	if len(m.matched)+len(m.notMatched)+len(m.bySource) == 0 {
		return nil, nil, bind.Invalidf("merge into %s: no WHEN clause", t.URI())
	}
	removes := len(m.matched)+len(m.bySource) > 0
	op, err := t.beginAs("MERGE", "merge into", removes, cfg)
	if err != nil {
		return nil, nil, err
	}
	e := &mergeExec{t: t, b: m, cfg: cfg, src: m.src}
	if err := e.bind(); err != nil {
		return nil, nil, fmt.Errorf("table: merge into %s: %w", t.URI(), err)
	}
	if op.skip {
		return t, &MergeResult{DMLResult: DMLResult{Version: t.Version()}}, nil
	}
	if e.evolved {
		if op.metadata, op.protocol, err = t.evolvedMetadata(e.sch); err != nil {
			return nil, nil, err
		}
	}
	return e.run(ctx, op)
}

// bind resolves the condition and the clauses against the target and
// source schemas.
func (e *mergeExec) bind() error {
	tgt, src := e.t.Schema(), e.src.schema
	e.oldSch, e.sch = tgt, tgt
	for i, r := range e.src.rows {
		if len(r) != len(src.Fields) {
			return &RowError{Row: i, Err: fmt.Errorf("%w: merge source row has %d values, the source schema has %d columns", ErrInvalidArgument, len(r), len(src.Fields))}
		}
	}
	star := false
	for _, c := range slices.Concat(e.b.matched, e.b.notMatched) {
		star = star || c.action == actUpdateAll || c.action == actInsertAll
	}
	if star && e.cfg.evolve {
		// Spark's autoMerge: source columns the target lacks are added.
		ns := &schema.StructType{Fields: slices.Clone(tgt.Fields)}
		for _, f := range src.Fields {
			if fieldByName(tgt, f.Name) < 0 {
				// The new column gets the table's own id and physical name
				// under column mapping, never the source's.
				nf := *withoutMapping(f)
				nf.Nullable = true
				ns.Fields = append(ns.Fields, &nf)
			}
		}
		if len(ns.Fields) > len(tgt.Fields) {
			mapped, _, err := assignColumnMapping(ns, e.t.snap.Metadata().Configuration)
			if err != nil {
				return err
			}
			e.sch, e.evolved = mapped, true
		}
	}
	e.rowSch = &schema.StructType{Fields: []*schema.StructField{
		schema.NewField(mergeTargetAlias, e.sch, true),
		schema.NewField(mergeSourceAlias, src, true),
	}}
	if e.b.on == nil {
		return bind.Invalidf("MERGE needs a condition (e.g. MergeOn(\"id\"))")
	}
	qualify := qualifyColumn(e.sch, src)
	on, err := mapExpr(e.b.on, qualify)
	if err != nil {
		return err
	}
	e.onText = on.String()
	bd := bind.NewBinder(e.rowSch, nil, "none")
	var rest []Expr
	for _, c := range conjuncts(on) {
		if k, ok, err := e.keyOf(bd, c); err != nil {
			return err
		} else if ok {
			e.keys = append(e.keys, k)
			continue
		}
		rest = append(rest, c)
		onlyTarget := true
		exprColumns(c, func(col expr.Column) { onlyTarget = onlyTarget && col.Name(0) == mergeTargetAlias })
		if onlyTarget {
			u, _ := mapExpr(c, func(col expr.Column) (expr.Column, error) { return expr.ColPath(col.Path()[1:]...), nil })
			e.targetOnly = append(e.targetOnly, u)
		}
	}
	if len(e.keys) == 0 {
		return bind.Invalidf("MERGE condition %s has no equality of a target column with a source column (target.k = source.k)", e.onText)
	}
	if len(rest) > 0 {
		if e.residual, err = bd.Bind(And(rest...), false); err != nil {
			return err
		}
	}
	if star {
		if err := e.bindStar(); err != nil {
			return err
		}
	}
	for _, g := range []struct {
		in   []mergeClause
		out  *[]*boundMergeClause
		kind string
	}{{e.b.matched, &e.matched, "WHEN MATCHED"}, {e.b.notMatched, &e.notMatched, "WHEN NOT MATCHED"}, {e.b.bySource, &e.bySource, "WHEN NOT MATCHED BY SOURCE"}} {
		for _, c := range g.in {
			bc, err := e.bindClause(bd, c, qualify)
			if err != nil {
				return fmt.Errorf("%s clause: %w", g.kind, err)
			}
			*g.out = append(*g.out, bc)
		}
	}
	e.checkDup = len(e.matched) > 0 && !(len(e.matched) == 1 && e.matched[0].action == actDelete && e.matched[0].cond == nil)
	return nil
}

// keyOf reports whether conjunct c is a join key target.x = source.y.
func (e *mergeExec) keyOf(bd *bind.Binder, c Expr) (mergeKey, bool, error) {
	ce, ok := c.(*expr.Comparison)
	if !ok || ce.Op != expr.OpEq {
		return mergeKey{}, false, nil
	}
	oc, ok := ce.Value.(expr.Column)
	if !ok || ce.Col.Name(0) == oc.Name(0) {
		return mergeKey{}, false, nil
	}
	tc, sc := ce.Col, oc
	if tc.Name(0) == mergeSourceAlias {
		tc, sc = sc, tc
	}
	tb, err := bd.Column(tc)
	if err != nil {
		return mergeKey{}, false, fmt.Errorf("merge key %s: the target has no such column: %w", tc, err)
	}
	sb, err := bd.Column(sc)
	if err != nil {
		return mergeKey{}, false, fmt.Errorf("merge key %s: the source has no such column: %w", sc, err)
	}
	if tb.Kind != sb.Kind || tb.Kind == expr.KindUnsupported {
		return mergeKey{}, false, fmt.Errorf("%w: %w: merge key %s has type %s, %s has type %s", ErrInvalidArgument, ErrSchemaMismatch, tc, tb.Type, sc, sb.Type)
	}
	k := mergeKey{t: tb, s: sb, name: e.sch.Fields[tb.Sub[0]].Name, top: -1}
	if len(tb.Sub) == 1 {
		k.top = tb.Sub[0]
	}
	return k, true, nil
}

// bindStar prepares UpdateAll and InsertAll: the projection of source rows
// onto the target schema, checked like a write with a row schema.
func (e *mergeExec) bindStar() error {
	src := e.src.schema
	common := &schema.StructType{}
	e.inSource = make([]bool, len(e.sch.Fields))
	for j, f := range e.sch.Fields {
		i := fieldByName(src, f.Name)
		if i < 0 {
			if !e.cfg.evolve {
				return bind.Invalidf("UpdateAll/InsertAll: the source has no column %s of the target (WithSchemaEvolution keeps or nulls it)", f.Name)
			}
			continue
		}
		e.inSource[j] = true
		common.Fields = append(common.Fields, src.Fields[i])
	}
	if _, _, err := mergeSchemas(e.sch, common, false); err != nil {
		return err
	}
	e.starProj = structProjector(src, e.sch)
	if e.starProj == nil {
		e.starProj = func(r value.Row) (value.Row, error) { return slices.Clone(r), nil }
	}
	return nil
}

func (e *mergeExec) bindClause(bd *bind.Binder, c mergeClause, qualify func(expr.Column) (expr.Column, error)) (*boundMergeClause, error) {
	bc := &boundMergeClause{mergeClause: c}
	if c.cond != nil {
		q, err := mapExpr(c.cond, qualify)
		if err != nil {
			return nil, err
		}
		bc.mergeClause.cond = q
		if bc.cond, err = bd.Bind(q, false); err != nil {
			return nil, err
		}
	}
	switch c.action {
	case actUpdateAll:
		bc.keep = make([]bool, len(e.sch.Fields))
		for j := range bc.keep {
			bc.keep[j] = !e.inSource[j]
		}
	case actUpdate, actInsert:
		if len(c.set) == 0 {
			return nil, bind.Invalidf("%s needs at least one column", c.action.actionType())
		}
		tb := bind.NewBinder(e.sch, e.t.PartitionColumns(), "none")
		seen := map[int]bool{}
		for name, v := range c.set {
			col := strings.TrimPrefix(name, mergeTargetAlias+".")
			target, err := tb.Column(expr.Col(col))
			if err != nil {
				return nil, err
			}
			if seen[target.Top] {
				return nil, bind.Invalidf("column %s is set twice", target.Name)
			}
			seen[target.Top] = true
			if v == nil {
				return nil, bind.Invalidf("SET %s: nil Value (use Lit(nil) for NULL)", name)
			}
			qv, err := mapValue(v, qualify)
			if err != nil {
				return nil, err
			}
			val, err := bindValue(e.rowSch, nil, qv, target)
			if err != nil {
				return nil, err
			}
			if val.typ == nil && !e.sch.Fields[target.Top].Nullable {
				return nil, bind.Invalidf("SET %s = NULL: column %s is NOT NULL", name, target.Name)
			}
			bc.sets = append(bc.sets, setClause{top: target.Top, val: val})
		}
		slices.SortFunc(bc.sets, func(a, b setClause) int { return a.top - b.top })
	}
	return bc, nil
}

// keyString encodes the key values of a merge row (target side when
// target, else source) as a map key; ok is false when one is null.
func (e *mergeExec) keyString(row value.Row, target bool) (string, bool, error) {
	b, ok, err := e.appendKey(nil, row, target)
	return string(b), ok, err
}

// appendKey appends keyString's encoding of row's key to buf: for each key
// its canonical text's length, ':' and the text. It is called for every
// target row read, so integer and date keys (the usual ones) are appended
// without allocating; a lookup as m[string(buf)] allocates nothing either.
func (e *mergeExec) appendKey(buf []byte, row value.Row, target bool) ([]byte, bool, error) {
	for _, k := range e.keys {
		c := k.s
		if target {
			c = k.t
		}
		v := c.Value(row)
		if v == nil {
			return buf, false, nil
		}
		var n int64
		fast := true
		switch x := v.(type) {
		case int64:
			n, fast = x, c.Kind == expr.KindInt
		case int32:
			n, fast = int64(x), c.Kind == expr.KindInt
		case value.Date:
			n, fast = int64(x), c.Kind == expr.KindDate
		default:
			fast = false
		}
		if fast {
			// canonicalKey's text of an integer or a date: its decimal digits.
			var digits [20]byte
			d := strconv.AppendInt(digits[:0], n, 10)
			buf = strconv.AppendInt(buf, int64(len(d)), 10)
			buf = append(buf, ':')
			buf = append(buf, d...)
			continue
		}
		s, err := canonicalKey(c, v)
		if err != nil {
			return buf, false, err
		}
		buf = strconv.AppendInt(buf, int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
	}
	return buf, true, nil
}

// canonicalKey renders a non-null key value so that values SQL equality
// finds equal render alike.
func canonicalKey(c *bind.BoundCol, v any) (string, error) {
	x, err := bind.ConvertLiteral(c, v)
	if err != nil {
		return "", err
	}
	switch c.Kind {
	case expr.KindInt, expr.KindDate:
		return strconv.FormatInt(x.(int64), 10), nil
	case expr.KindFloat32, expr.KindFloat64:
		f := x.(float64)
		if f == 0 {
			f = 0 // -0 = 0
		}
		if math.IsNaN(f) {
			return "NaN", nil
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case expr.KindBool:
		return strconv.FormatBool(x.(bool)), nil
	case expr.KindString:
		return x.(string), nil
	case expr.KindBinary:
		return string(x.([]byte)), nil
	case expr.KindTimestamp, expr.KindTimestampNTZ:
		return x.(time.Time).UTC().Format(time.RFC3339Nano), nil
	case expr.KindDecimal:
		s := x.(value.Decimal).String()
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
		return s, nil
	}
	return "", bind.Invalidf("column %s of type %s cannot be a merge key", c.Name, c.Type)
}

// keyText names a source row's key in errors: (id=3, day=DATE '2024-01-02').
func (e *mergeExec) keyText(row value.Row) string {
	parts := make([]string, len(e.keys))
	for i, k := range e.keys {
		parts[i] = k.name + "=" + expr.FormatLiteral(k.t.Value(row))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// pruneFilter is the filter on target files: the source keys' values or
// range, and the condition's terms on target columns alone. nil: the
// whole table (NOT MATCHED BY SOURCE clauses).
func (e *mergeExec) pruneFilter() (Expr, error) {
	if len(e.bySource) > 0 {
		return nil, nil
	}
	filters := slices.Clone(e.targetOnly)
	for _, k := range e.keys {
		var lo, hi any
		distinct := map[string]any{}
		for _, r := range e.src.rows {
			v := r[k.s.Sub[0]]
			if len(k.s.Sub) > 1 {
				v = k.s.Value(value.Row{nil, r})
			}
			if v == nil {
				continue
			}
			x, err := bind.ConvertLiteral(k.s, v)
			if err != nil {
				return nil, fmt.Errorf("merge source key %s: %w", k.s.Name, err)
			}
			if lo == nil {
				lo, hi = x, x
			} else {
				if c, ok := expr.Compare(k.s.Kind, x, lo); ok && c < 0 {
					lo = x
				}
				if c, ok := expr.Compare(k.s.Kind, x, hi); ok && c > 0 {
					hi = x
				}
			}
			if len(distinct) <= maxPruneValues {
				s, _ := canonicalKey(k.s, v)
				distinct[s] = x
			}
		}
		if lo == nil {
			return Or(), nil // no source key: no target row can match
		}
		col := expr.ColPath(k.t.Path()...)
		isPart := k.top >= 0 && slices.Contains(e.t.PartitionColumns(), k.name)
		lit := func(x any) any {
			if k.s.Kind == expr.KindDate {
				return value.Date(x.(int64))
			}
			return x
		}
		if isPart && len(distinct) <= maxPruneValues {
			vals := make([]any, 0, len(distinct))
			for _, x := range distinct {
				vals = append(vals, lit(x))
			}
			filters = append(filters, col.In(vals...))
			continue
		}
		if f, ok := lo.(float64); ok && (math.IsNaN(f) || math.IsNaN(hi.(float64))) {
			continue
		}
		filters = append(filters, col.Between(lit(lo), lit(hi)))
	}
	return And(filters...), nil
}

// maxPruneValues bounds the distinct source key values the pruning filter
// lists for a partition column (beyond it: their range).
const maxPruneValues = 1000

// mergeCounts are a MERGE's row counts.
type mergeCounts struct {
	inserted, matchedUpdated, bySourceUpdated, matchedDeleted, bySourceDeleted int64
}

// run scans the pruned target files, joins them with the source, applies
// the clauses and commits.
func (e *mergeExec) run(ctx context.Context, op *operation) (*Table, *MergeResult, error) {
	t := e.t
	// The source, indexed by key.
	bySrcKey := make(map[string][]int, len(e.src.rows))
	for i, r := range e.src.rows {
		k, ok, err := e.keyString(value.Row{nil, r}, false)
		if err != nil {
			return nil, nil, fmt.Errorf("table: merge into %s: source row %d: %w", t.URI(), i, err)
		}
		if ok {
			bySrcKey[k] = append(bySrcKey[k], i)
		}
	}
	filter, err := e.pruneFilter()
	if err != nil {
		return nil, nil, fmt.Errorf("table: merge into %s: %w", t.URI(), err)
	}
	useDV := t.deletionVectorsEnabled()
	plan, targets, err := t.dmlScan(ctx, filter, dmlRead{matchedRows: true, keptRows: !useDV, readWhole: true})
	if err != nil {
		return nil, nil, fmt.Errorf("table: merge into %s: %w", t.URI(), err)
	}
	scanMs := time.Since(op.start).Milliseconds()
	op.tx.ReadFiles(plan.PartitionPredicate())

	j := &mergeJoin{e: e, useDV: useDV, bySrcKey: bySrcKey, srcMatched: make([]bool, len(e.src.rows)),
		rw: newRemover(t, op, useDV)}
	j.rw.schema = e.sch
	for _, tg := range targets {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := j.file(tg); err != nil {
			return nil, nil, err
		}
	}
	if err := j.insertUnmatched(); err != nil {
		return nil, nil, err
	}
	cnt := j.cnt
	res := &MergeResult{SourceRows: int64(len(e.src.rows)), InsertedRows: cnt.inserted,
		MatchedUpdatedRows: cnt.matchedUpdated, NotMatchedBySourceUpdatedRows: cnt.bySourceUpdated,
		MatchedDeletedRows: cnt.matchedDeleted, NotMatchedBySourceDeletedRows: cnt.bySourceDeleted}
	res.UpdatedRows = cnt.matchedUpdated + cnt.bySourceUpdated
	res.DeletedRows = cnt.matchedDeleted + cnt.bySourceDeleted
	if len(op.removes) == 0 && len(j.written) == 0 && !e.cfg.txnSet && !e.evolved {
		t.cfg.logger.Debug("table: merge changed no rows; nothing committed", "table", t.URI(), "version", t.Version(), "predicate", e.onText)
		res.Version = t.Version()
		return t, res, nil
	}
	writtenTracks := j.writtenTracks
	if rt, err := t.rowTracker(); err != nil {
		return nil, nil, fmt.Errorf("table: merge into %s: %w", t.URI(), err)
	} else if rt == nil {
		writtenTracks = nil
	}
	j.rw.addRows(j.written, writtenTracks)
	if t.cdfEnabled() {
		j.rw.changes = j.ch.changeRows()
	}
	return e.finish(ctx, op, j.rw, res, scanMs)
}

// mergeJoin is the join of a MERGE's target rows with its source (run):
// what it matched, counted, changed and writes.
type mergeJoin struct {
	e     *mergeExec
	useDV bool
	// bySrcKey indexes the source rows by key; srcMatched[i] is set once
	// source row i matched a target row.
	bySrcKey   map[string][]int
	srcMatched []bool
	cnt        mergeCounts
	ch         mergeChanges
	rw         *remover
	written    []value.Row
	// With row tracking enabled, writtenTracks are the stable row ids and
	// commit versions of written (rowtracking.go): updated rows keep their
	// id, inserted ones get fresh ids.
	writtenTracks []rowtrack.Track
	keyBuf        []byte
}

// pad extends a target row read before a schema evolution to the merge
// schema's width (new columns null).
func (j *mergeJoin) pad(r value.Row) value.Row {
	width := len(j.e.sch.Fields)
	if len(r) >= width {
		return r
	}
	return append(slices.Clip(r), make(value.Row, width-len(r))...)
}

// match finds the source rows that match target row trow (of data file
// path) on the key and the residual condition: hit is the first (-1 for
// none) and n their number. Two or more are an error when the MERGE checks
// for multiple matches.
func (j *mergeJoin) match(trow value.Row, path string) (hit, n int, err error) {
	e := j.e
	mr := value.Row{trow, nil}
	hit = -1
	var ok bool
	j.keyBuf, ok, err = e.appendKey(j.keyBuf[:0], mr, true)
	if err != nil {
		return 0, 0, fmt.Errorf("table: merge into %s: data file %s: %w", e.t.URI(), path, err)
	}
	if !ok {
		return hit, 0, nil
	}
	for _, si := range j.bySrcKey[string(j.keyBuf)] {
		mr[1] = e.src.rows[si]
		if e.residual != nil && !e.residual.MatchRow(mr) {
			continue
		}
		j.srcMatched[si] = true
		n++
		if hit < 0 {
			hit = si
		} else if e.checkDup {
			return 0, 0, fmt.Errorf("table: merge into %s: %w: the target row with key %s (data file %s) matched source rows %d and %d",
				e.t.URI(), ErrMergeMultipleMatches, e.keyText(value.Row{trow, nil}), path, hit, si)
		}
	}
	return hit, n, nil
}

// file applies the matched and not-matched-by-source clauses to the rows
// of target file tg and hands the file to the remover when a clause
// changed one of them.
func (j *mergeJoin) file(tg *dmlTarget) error {
	e := j.e
	fc := &mergeFileChanges{add: tg.f.Add}
	var changed []int64
	var kept []value.Row
	var keptTracks []rowtrack.Track
	for i, row := range tg.matchedRows {
		trow := j.pad(row)
		hit, n, err := j.match(trow, tg.f.Path)
		if err != nil {
			return err
		}
		mr := value.Row{trow, nil}
		var clauses []*boundMergeClause
		if n > 0 {
			mr[1] = e.src.rows[hit]
			clauses = e.matched
		} else {
			clauses = e.bySource
		}
		c := firstClause(clauses, mr)
		if c == nil {
			kept = append(kept, trow)
			if tg.matchedTracks != nil {
				keptTracks = append(keptTracks, tg.matchedTracks[i])
			}
			continue
		}
		changed = append(changed, tg.matched[i])
		if c.action == actDelete {
			fc.deleted = append(fc.deleted, trow)
			if n > 0 {
				j.cnt.matchedDeleted++
			} else {
				j.cnt.bySourceDeleted++
			}
			continue
		}
		nr, err := e.apply(c, mr)
		if err != nil {
			return fmt.Errorf("table: merge into %s: data file %s: %w", e.t.URI(), tg.f.Path, err)
		}
		fc.preimage, fc.postimage = append(fc.preimage, trow), append(fc.postimage, nr)
		j.written = append(j.written, nr)
		if tg.matchedTracks != nil {
			j.writtenTracks = append(j.writtenTracks, tg.matchedTracks[i].Updated())
		}
		if n > 0 {
			j.cnt.matchedUpdated++
		} else {
			j.cnt.bySourceUpdated++
		}
	}
	if len(changed) == 0 {
		return nil
	}
	j.ch.files = append(j.ch.files, fc)
	nt := &dmlTarget{f: tg.f, oldDV: tg.oldDV, live: tg.live, matched: changed,
		whole: int64(len(changed)) == tg.live}
	if !j.useDV {
		nt.keptRows = make([]value.Row, 0, len(tg.keptRows)+len(kept))
		for _, r := range tg.keptRows {
			nt.keptRows = append(nt.keptRows, j.pad(r))
		}
		nt.keptRows = append(nt.keptRows, kept...)
		if tg.keptTracks != nil || keptTracks != nil {
			nt.keptTracks = append(slices.Clone(tg.keptTracks), keptTracks...)
		}
	}
	j.rw.remove(nt)
	return nil
}

// insertUnmatched applies the not-matched clauses to the source rows that
// matched no target row.
func (j *mergeJoin) insertUnmatched() error {
	e := j.e
	for i, r := range e.src.rows {
		if j.srcMatched[i] || len(e.notMatched) == 0 {
			continue
		}
		mr := value.Row{nil, r}
		c := firstClause(e.notMatched, mr)
		if c == nil {
			continue
		}
		nr, err := e.apply(c, mr)
		if err != nil {
			return fmt.Errorf("table: merge into %s: source row %d: %w", e.t.URI(), i, err)
		}
		j.ch.inserted = append(j.ch.inserted, nr)
		j.written = append(j.written, nr)
		j.writtenTracks = append(j.writtenTracks, rowtrack.Fresh)
		j.cnt.inserted++
	}
	return nil
}

// firstClause returns the first clause whose condition holds on mr.
func firstClause(cs []*boundMergeClause, mr value.Row) *boundMergeClause {
	for _, c := range cs {
		if c.cond == nil || c.cond.MatchRow(mr) {
			return c
		}
	}
	return nil
}

// apply returns the target row an update or insert clause makes of merge
// row mr (its target side is nil for an insert).
func (e *mergeExec) apply(c *boundMergeClause, mr value.Row) (value.Row, error) {
	var nr value.Row
	switch c.action {
	case actUpdateAll, actInsertAll:
		p, err := e.starProj(mr[1].(value.Row))
		if err != nil {
			return nil, err
		}
		nr = p
		if c.action == actUpdateAll {
			old := mr[0].(value.Row)
			for j, k := range c.keep {
				if k {
					nr[j] = old[j]
				}
			}
		}
		return nr, nil
	case actUpdate:
		nr = slices.Clone(mr[0].(value.Row))
	default:
		nr = make(value.Row, len(e.sch.Fields))
	}
	for _, s := range c.sets {
		v, err := s.val.eval(mr)
		if err != nil {
			return nil, err
		}
		nr[s.top] = v
	}
	return nr, nil
}

// mergePredicate is one clause in commitInfo's matchedPredicates (and the
// others), as Spark writes it.
type mergePredicate struct {
	Predicate  string `json:"predicate,omitempty"`
	ActionType string `json:"actionType"`
}

func clausePredicates(cs []*boundMergeClause) string {
	out := make([]mergePredicate, len(cs))
	for i, c := range cs {
		out[i].ActionType = c.action.actionType()
		if c.mergeClause.cond != nil {
			out[i].Predicate = c.mergeClause.cond.String()
		}
	}
	return jsonString(out)
}

// finish writes the new files and commits the MERGE with its parameters
// and Spark's metrics (finishRewrite).
func (e *mergeExec) finish(ctx context.Context, op *operation, rw *remover, res *MergeResult, scanMs int64) (*Table, *MergeResult, error) {
	params := map[string]string{
		"predicate":                    jsonString([]string{e.onText}),
		"matchedPredicates":            clausePredicates(e.matched),
		"notMatchedPredicates":         clausePredicates(e.notMatched),
		"notMatchedBySourcePredicates": clausePredicates(e.bySource),
	}
	nt, err := e.t.finishRewrite(ctx, op, rw, e.cfg, &res.DMLResult, "merge into", params, func() map[string]int64 {
		return map[string]int64{
			"numSourceRows":                          res.SourceRows,
			"numTargetRowsInserted":                  res.InsertedRows,
			"numTargetRowsUpdated":                   res.UpdatedRows,
			"numTargetRowsMatchedUpdated":            res.MatchedUpdatedRows,
			"numTargetRowsNotMatchedBySourceUpdated": res.NotMatchedBySourceUpdatedRows,
			"numTargetRowsDeleted":                   res.DeletedRows,
			"numTargetRowsMatchedDeleted":            res.MatchedDeletedRows,
			"numTargetRowsNotMatchedBySourceDeleted": res.NotMatchedBySourceDeletedRows,
			"numTargetRowsCopied":                    rw.copied,
			"numOutputRows":                          res.InsertedRows + res.UpdatedRows + rw.copied,
			"numTargetFilesAdded":                    int64(rw.addedFiles),
			"numTargetFilesRemoved":                  int64(rw.removedFiles), // as Spark: a file that only gets a DV is not removed
			"numTargetBytesAdded":                    rw.addedBytes,
			"numTargetBytesRemoved":                  rw.removedBytes,
			"numTargetChangeFilesAdded":              int64(len(op.cdcs)),
			"numTargetDeletionVectorsAdded":          int64(rw.dvAdded),
			"numTargetDeletionVectorsRemoved":        int64(rw.dvRemoved),
			"numTargetDeletionVectorsUpdated":        int64(rw.dvUpdated),
			"scanTimeMs":                             scanMs,
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return nt, res, nil
}
