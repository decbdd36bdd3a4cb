package table

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
)

// CreateOrOpen returns the table at uri, creating it as Create does (with
// schema sch and the partition columns and properties of opts) when there
// is none. created reports whether this call created it.
//
// When a table is already there, or another writer creates it first (N
// writers racing to make the first write into a new location: every one
// but the winner loses the create), CreateOrOpen opens it and checks that
// rows of schema sch can be appended to it: the same partition columns, and
// sch fits the table's schema without evolution (every column of sch is in
// the table with a type it converts to, every NOT NULL column of the table
// is in sch). Append such rows with WithRowSchema(sch) unless the schemas
// are equal. Properties of opts are not compared. A table that does not fit
// is an error wrapping both ErrTableExists and ErrSchemaMismatch, naming the
// column or the partition columns; nothing is written then.
func CreateOrOpen(ctx context.Context, uri string, sch *schema.StructType, opts ...Option) (*Table, bool, error) {
	cfg := newConfig(opts)
	store, err := cfg.openStore(ctx, uri)
	if err != nil {
		return nil, false, err
	}
	return createOrOpen(ctx, store, sch, cfg)
}

func createOrOpen(ctx context.Context, store objectstore.Store, sch *schema.StructType, cfg config) (*Table, bool, error) {
	cfg.version, cfg.at = -1, time.Time{}
	open := func() (*Table, error) {
		t, err := openLatest(ctx, store, cfg)
		if err != nil {
			return nil, err
		}
		if err := t.fits(sch, cfg.partitionColumns); err != nil {
			return nil, err
		}
		return t, nil
	}
	t, err := open()
	if err == nil {
		return t, false, nil
	}
	if !errors.Is(err, txlog.ErrTableNotFound) {
		return nil, false, err
	}
	t, err = create(ctx, store, sch, cfg)
	if err == nil {
		return t, true, nil
	}
	if !errors.Is(err, ErrTableExists) {
		return nil, false, err
	}
	// Lost the create race: append to the winner's table when it fits.
	cfg.logger.Debug("table: create lost to a concurrent writer; opening its table", "table", store.URI())
	t, err = open()
	if err != nil {
		return nil, false, err
	}
	return t, false, nil
}

// openLatest opens the table in store at its latest version.
func openLatest(ctx context.Context, store objectstore.Store, cfg config) (*Table, error) {
	snap, err := txlog.Load(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("table: open %s: %w", store.URI(), err)
	}
	return &Table{store: store, snap: snap, cfg: cfg}, nil
}

// fits reports whether rows of schema sch, for a table partitioned by
// parts, can be appended to t without schema evolution.
func (t *Table) fits(sch *schema.StructType, parts []string) error {
	if !slices.Equal(nonNil(parts), nonNil(t.PartitionColumns())) {
		return fmt.Errorf("table: create %s: %w: %w: it is partitioned by %v, not %v",
			t.URI(), ErrTableExists, ErrSchemaMismatch, t.PartitionColumns(), nonNil(parts))
	}
	if _, changed, err := mergeSchemas(t.Schema(), sch, false); err != nil || changed {
		if err == nil {
			err = fmt.Errorf("%w: the input's nullability differs", ErrSchemaMismatch)
		}
		return fmt.Errorf("table: create %s: %w: its schema %s does not take rows of %s: %w",
			t.URI(), ErrTableExists, t.Schema(), sch, err)
	}
	return nil
}

// filesFit reports whether data files written with schema sch can be
// added to t as they are: sch fits t and each of its columns has exactly
// the table column's type (no conversion of the values is needed).
func (t *Table) filesFit(sch *schema.StructType, parts []string) error {
	if err := t.fits(sch, parts); err != nil {
		return err
	}
	cur := t.Schema()
	for _, f := range sch.Fields {
		i := fieldByName(cur, f.Name)
		if i < 0 || !sameType(f.Type, cur.Fields[i].Type) {
			return fmt.Errorf("table: create %s: %w: %w: column %q is %s in the table, %s in the files written for it",
				t.URI(), ErrTableExists, ErrSchemaMismatch, f.Name, typeName(cur, i), f.Type)
		}
	}
	return nil
}

func typeName(st *schema.StructType, i int) string {
	if i < 0 {
		return "missing"
	}
	return fmt.Sprint(st.Fields[i].Type)
}

// Draft is a write whose commit comes after its data files: a table that
// does not exist yet (NewDraft), whose data files can be written before the
// table is created, or an append to t that may evolve its schema
// (Table.DraftAppend), whose schema change is committed with the files. A
// write that fails before Commit (bad input, a cancelled context) then
// changes no table: it leaves no empty table behind and no schema change,
// only data files, which Discard deletes.
type Draft struct {
	store  objectstore.Store
	sch    *schema.StructType
	cfg    config
	base   *Table             // nil: a new table
	merged *schema.StructType // DraftAppend: the evolved schema, nil when unchanged
	shadow *Table             // the table the files are written for, writing to store
	keys   []string
}

// NewDraft checks a new table as Create does (partition columns, column
// names, properties) and returns a draft of it at uri; nothing is written.
func NewDraft(ctx context.Context, uri string, sch *schema.StructType, opts ...Option) (*Draft, error) {
	cfg := newConfig(opts)
	store, err := cfg.openStore(ctx, uri)
	if err != nil {
		return nil, err
	}
	if _, err := checkNewTable(store, sch, cfg); err != nil {
		return nil, err
	}
	shadow, err := shadowTable(ctx, store, sch, cfg)
	if err != nil {
		return nil, err
	}
	return &Draft{store: store, sch: sch, cfg: cfg, shadow: shadow}, nil
}

// shadowTable returns a table of schema sch whose version 0 exists only in
// memory and whose data files go to store.
func shadowTable(ctx context.Context, store objectstore.Store, sch *schema.StructType, cfg config) (*Table, error) {
	mcfg := cfg
	// Its in-memory commit of version 0 is no commit of the table's: not
	// logged (slog's default logger would print it in its own format).
	mcfg.txnOpts = []txlog.TxnOption{txlog.WithLogger(slog.New(slog.DiscardHandler))}
	shadow, err := create(ctx, objectstore.NewMem("draft"), sch, mcfg)
	if err != nil {
		return nil, err
	}
	shadow.store, shadow.cfg = store, cfg
	return shadow, nil
}

// DraftAppend returns a draft of appending rows of schema sch to t: the
// rows fit t's schema, or, with WithSchemaEvolution among opts, t's schema
// evolves to take them (WithSchemaEvolution's rules). The draft's
// WriteFiles writes files of the evolved schema and its Commit commits the
// schema change and the files in one commit ("WRITE", mode "Append"), so a
// write that fails first leaves t's schema as it was. Errors wrap
// ErrSchemaMismatch and name the column (for a new column without
// WithSchemaEvolution, say). A nil sch is the WithRowSchema among opts,
// else t's schema.
func (t *Table) DraftAppend(ctx context.Context, sch *schema.StructType, opts ...WriteOption) (*Draft, error) {
	if t == nil {
		return nil, nilTableError("draft append")
	}
	wc := newWriteConfig(opts)
	if sch == nil {
		if sch = wc.rowSchema; sch == nil {
			sch = t.Schema()
		}
	}
	merged, changed, err := t.mergeSchema(sch, wc.evolve)
	if err != nil {
		return nil, err
	}
	if err := t.checkWritable(nil); err != nil {
		return nil, err
	}
	d := &Draft{store: t.store, sch: sch, cfg: t.cfg, base: t, shadow: t}
	if changed {
		cfg := t.cfg
		cfg.partitionColumns = t.PartitionColumns()
		cfg.properties = t.snap.Metadata().Configuration
		if d.shadow, err = shadowTable(ctx, t.store, merged, cfg); err != nil {
			return nil, fmt.Errorf("table: append to %s: %w", t.URI(), err)
		}
		d.merged = merged
	}
	return d, nil
}

// ChangesSchema reports whether Commit changes the table schema (a
// DraftAppend with schema evolution whose rows need it).
func (d *Draft) ChangesSchema() bool { return d != nil && d.merged != nil }

// URI returns the location of the table.
func (d *Draft) URI() string {
	if d == nil {
		return ""
	}
	return d.store.URI()
}

// Schema returns the table schema after the commit (new, or evolved).
func (d *Draft) Schema() *schema.StructType {
	if d == nil {
		return nil
	}
	return d.shadow.Schema()
}

// WriteFiles writes rows as data files of the table, as Table.WriteFiles
// does, and returns their add actions for Commit. Rows are aligned with
// the draft's schema (NewDraft's or DraftAppend's sch) unless opts has
// WithRowSchema.
func (d *Draft) WriteFiles(ctx context.Context, rows []Row, opts ...WriteOption) ([]*Add, error) {
	if d == nil {
		return nil, nilDraftError("write files")
	}
	opts = append([]WriteOption{WithRowSchema(d.sch)}, opts...)
	adds, err := d.shadow.WriteFiles(ctx, rows, opts...)
	d.recordKeys(adds)
	return adds, err
}

// recordKeys remembers the store keys of the files of adds, for Discard
// and a failed Commit.
func (d *Draft) recordKeys(adds []*txlog.Add) {
	for _, a := range adds {
		if k, err := url.PathUnescape(a.Path); err == nil {
			d.keys = append(d.keys, k)
		}
	}
}

// Commit commits adds (from WriteFiles) and returns the table at the new
// version; created reports whether this call created the table.
//
// For NewDraft it creates the table with its data in one commit, as
// Spark's CREATE TABLE AS SELECT does: version 0 holds the protocol, the
// metaData, the txn actions of WithTxn and WithExtraTxns, adds and
// commitInfo (operation "CREATE TABLE AS SELECT" with Create's parameters
// plus WithOperationParameters', and the WRITE metrics numFiles,
// numOutputRows, numOutputBytes; with WithStreamingUpdate it is that
// epoch's STREAMING UPDATE, as Spark's first streaming batch into a new
// path). When another writer created the table first (its version 0 won
// the put-if-absent), adds are appended to that table as the next version
// (AppendFiles, operation WRITE) if their files fit it as they are
// (CreateOrOpen's check, plus each column of the same type and, with
// column mapping, the same physical names); a table that does not fit is
// an error wrapping ErrTableExists and ErrSchemaMismatch, naming the table,
// the difference and version 0 as the one lost to, and the draft's data
// files are deleted then (best effort: one that cannot be deleted is left
// unreferenced). So is a winner
// that committed the WithTxn version already (another run of the same
// query): an error wrapping ErrConcurrentTransaction, nothing committed.
//
// For DraftAppend it commits adds, with the schema change when there is
// one, as AppendFiles does; a concurrent change of the metadata is a
// *txlog.ConflictError (the files are deleted then).
func (d *Draft) Commit(ctx context.Context, adds []*Add, opts ...WriteOption) (*Table, bool, error) {
	if d == nil {
		return nil, false, nilDraftError("commit")
	}
	if d.base != nil {
		nt, _, err := d.CommitOn(ctx, d.base, adds, opts...)
		if err != nil {
			var ce *txlog.ConflictError
			if errors.As(err, &ce) {
				d.Discard()
			}
			return nil, false, err
		}
		d.keys = nil
		return nt, false, nil
	}
	wc := newWriteConfig(opts)
	nt, err := d.create(ctx, adds, wc)
	if err == nil {
		d.keys = nil
		return nt, true, nil
	}
	if !errors.Is(err, ErrTableExists) {
		return nil, false, err
	}
	// Lost the create race: append to the winner's table when the files fit it.
	d.cfg.logger.Debug("table: create lost to a concurrent writer; appending to its table", "table", d.store.URI())
	cfg := d.cfg
	cfg.version, cfg.at = -1, time.Time{}
	t, err := openLatest(ctx, d.store, cfg)
	if err == nil {
		if err = d.filesFit(t); err != nil {
			err = fmt.Errorf("%w (lost the create: version 0 was committed by another writer)", err)
		}
	}
	if err == nil && wc.txnSet {
		if v := t.snap.TxnVersion(wc.txnAppID); v >= wc.txnVersion {
			// The winner committed this txn version (another run of the
			// same query): appending the files again would duplicate it.
			err = fmt.Errorf("table: create %s: %w: version %d of app %s was committed by the writer that created the table (its txn version %d)",
				t.URI(), ErrConcurrentTransaction, wc.txnVersion, wc.txnAppID, v)
			d.Discard()
		}
	}
	if err != nil {
		if errors.Is(err, ErrSchemaMismatch) {
			d.Discard()
		}
		return nil, false, err
	}
	if nt, err = t.AppendFiles(ctx, adds, opts...); err != nil {
		return nil, false, err
	}
	d.keys = nil
	return nt, false, nil
}

// create commits version 0 of a NewDraft's table: the shadow's protocol
// and metadata (the files were written for its schema and physical column
// names) with adds, the txns of wc and commitInfo (see Commit).
// ErrTableExists when a table is there or another writer creates it first.
func (d *Draft) create(ctx context.Context, adds []*txlog.Add, wc writeConfig) (*Table, error) {
	if err := wc.checkStream(); err != nil {
		return nil, err
	}
	if err := d.shadow.checkAdds(adds); err != nil {
		return nil, err
	}
	if exists, err := hasLog(ctx, d.store); err != nil {
		return nil, fmt.Errorf("table: create %s: %w", d.store.URI(), err)
	} else if exists {
		return nil, fmt.Errorf("table: create %s: %w", d.store.URI(), ErrTableExists)
	}
	snap := d.shadow.snap
	name := CreateTableAsSelectOperation
	if wc.stream != nil {
		name = StreamingUpdateOperation
	}
	m := snap.Metadata().Clone()
	op := beginCreate(d.store, name, snap.Protocol().Clone(), m, d.cfg, wc.txnOpts...)
	op.recordTxns(wc, d.cfg, d.store.URI())
	op.adds = adds
	rows, bytes := addTotals(adds)
	if wc.stream != nil {
		op.streamingUpdate(wc, rows, bytes)
	} else {
		op.params = paramsWith(createParams(m, d.cfg), wc)
		op.metrics = writeMetrics(len(adds), rows, bytes)
	}
	return commitCreate(ctx, d.store, d.cfg, op)
}

// filesFit reports whether the draft's files can be added to t, the table
// another writer created: filesFit's check and, when either table maps
// columns, the same schema with its physical column names.
func (d *Draft) filesFit(t *Table) error {
	if err := t.filesFit(d.sch, d.cfg.partitionColumns); err != nil {
		return err
	}
	mine, theirs := d.shadow.snap.Metadata(), t.snap.Metadata()
	if col := looserNulls(t.Schema(), d.sch, ""); col != "" {
		// The files were checked against the draft's schema only: a null
		// there would break the table's NOT NULL column.
		return fmt.Errorf("table: create %s: %w: %w: column %s is NOT NULL in the table, nullable in the files written for it",
			t.URI(), ErrTableExists, ErrSchemaMismatch, col)
	}
	if c, err := missingConstraint(theirs, t.Schema(), mine, d.sch); err != nil || c != "" {
		if err == nil {
			err = fmt.Errorf("%w: the table has %s, which the files written for it were not checked against", ErrSchemaMismatch, c)
		}
		return fmt.Errorf("table: create %s: %w: %w", t.URI(), ErrTableExists, err)
	}
	if strings.EqualFold(mine.ColumnMappingMode(), "none") && strings.EqualFold(theirs.ColumnMappingMode(), "none") {
		return nil
	}
	if mine.SchemaString != theirs.SchemaString {
		// Physical names are random per table ("col-<uuid>"): files written
		// for one table's names cannot be added to another's.
		return fmt.Errorf("table: create %s: %w: %w: column mapping (mode %s): the files were written with other physical column names than the table's",
			t.URI(), ErrTableExists, ErrSchemaMismatch, theirs.ColumnMappingMode())
	}
	return nil
}

// CommitOn commits adds (from WriteFiles or WriteFilesArrow of a
// DraftAppend) on t, the draft's table at its DraftAppend snapshot or a
// newer one (a retry from a fresh snapshot after a conflict), as
// CommitFiles does, and returns the table at the new version with the
// commit's result. The draft's schema change, when there is one, commits
// with the files. When t's schema is no longer the one the draft evolved
// (another writer changed it meanwhile), the change is merged again onto
// t's schema: the files keep their columns, so each of them must still be
// a column of the same name and type, and a table with column mapping
// (whose new columns got physical names from the older schema) cannot be
// rebased; such an error wraps ErrConcurrentModification,
// txlog.ErrMetadataChanged and ErrSchemaMismatch, naming the column. Unlike
// Commit it deletes no file on failure: the files are the caller's, for
// another attempt or Discard. On a nil draft it is t.CommitFiles (files
// written without a draft).
func (d *Draft) CommitOn(ctx context.Context, t *Table, adds []*Add, opts ...WriteOption) (*Table, *CommitResult, error) {
	if d == nil {
		return t.CommitFiles(ctx, adds, opts...)
	}
	if t == nil {
		return nil, nil, nilTableError("commit draft")
	}
	if d.base == nil {
		return nil, nil, fmt.Errorf("table: %w: CommitOn needs a draft of DraftAppend, not NewDraft", ErrInvalidArgument)
	}
	if t.URI() != d.base.URI() {
		return nil, nil, fmt.Errorf("table: %w: draft of %s committed on %s", ErrInvalidArgument, d.base.URI(), t.URI())
	}
	merged, err := d.rebase(t)
	if err != nil {
		return nil, nil, fmt.Errorf("table: append to %s at version %d: %w", t.URI(), t.Version(), err)
	}
	return t.commitFiles(ctx, adds, merged, newWriteConfig(opts))
}

// rebase returns the schema change of the draft's files on t (nil: none).
func (d *Draft) rebase(t *Table) (*schema.StructType, error) {
	if d.merged == nil || t.snap.Metadata().SchemaString == d.base.snap.Metadata().SchemaString {
		return d.merged, nil
	}
	conflict := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: %w: the schema changed since version %d, which the files were written for: %s",
			ErrConcurrentModification, txlog.ErrMetadataChanged, ErrSchemaMismatch, d.base.Version(), fmt.Sprintf(format, args...))
	}
	if mode := t.snap.Metadata().ColumnMappingMode(); !strings.EqualFold(mode, "none") {
		return nil, conflict("column mapping mode %s: new columns cannot be rebased", mode)
	}
	merged, changed, err := mergeSchemas(t.Schema(), d.merged, true)
	if err != nil {
		return nil, conflict("%v", err)
	}
	for _, f := range d.merged.Fields {
		i := fieldByName(merged, f.Name)
		if i < 0 || merged.Fields[i].Name != f.Name || !sameType(merged.Fields[i].Type, f.Type) {
			return nil, conflict("column %q of the files is %s, the table's now %v", f.Name, f.Type, fieldType(merged, i))
		}
	}
	if !changed {
		return nil, nil
	}
	return merged, nil
}

// fieldType is the type of field i of st, nil when i < 0.
func fieldType(st *schema.StructType, i int) schema.Type {
	if i < 0 {
		return nil
	}
	return st.Fields[i].Type
}

// Discard deletes the data files the draft wrote and has not committed
// (best effort, logged).
func (d *Draft) Discard() {
	if d == nil {
		return
	}
	deleteFiles(d.store, d.keys, d.cfg.logger)
	d.keys = nil
}

// sameType reports whether a and b are the same Delta type (nullability of
// nested fields and elements aside).
func sameType(a, b schema.Type) bool {
	switch a := a.(type) {
	case *schema.StructType:
		b, ok := b.(*schema.StructType)
		if !ok || len(a.Fields) != len(b.Fields) {
			return false
		}
		for i, f := range a.Fields {
			if f.Name != b.Fields[i].Name || !sameType(f.Type, b.Fields[i].Type) {
				return false
			}
		}
		return true
	case *schema.ArrayType:
		b, ok := b.(*schema.ArrayType)
		return ok && sameType(a.ElementType, b.ElementType)
	case *schema.MapType:
		b, ok := b.(*schema.MapType)
		return ok && sameType(a.KeyType, b.KeyType) && sameType(a.ValueType, b.ValueType)
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// looserNulls returns the first column (dotted path) that is NOT NULL in
// table schema tbl but nullable in files schema files, or "" when none is;
// a column files lacks is not reported (fits decides about those).
func looserNulls(tbl, files *schema.StructType, path string) string {
	for _, f := range tbl.Fields {
		i := fieldByName(files, f.Name)
		if i < 0 {
			continue
		}
		g := files.Fields[i]
		if !f.Nullable && g.Nullable {
			return path + f.Name
		}
		if c := looserNullsIn(f.Type, g.Type, path+f.Name); c != "" {
			return c
		}
	}
	return ""
}

// looserNullsIn is looserNulls for the elements of nested types.
func looserNullsIn(tbl, files schema.Type, path string) string {
	switch t := tbl.(type) {
	case *schema.StructType:
		if f, ok := files.(*schema.StructType); ok {
			return looserNulls(t, f, path+".")
		}
	case *schema.ArrayType:
		if f, ok := files.(*schema.ArrayType); ok {
			if !t.ContainsNull && f.ContainsNull {
				return path + ".element"
			}
			return looserNullsIn(t.ElementType, f.ElementType, path+".element")
		}
	case *schema.MapType:
		if f, ok := files.(*schema.MapType); ok {
			if !t.ValueContainsNull && f.ValueContainsNull {
				return path + ".value"
			}
			return looserNullsIn(t.ValueType, f.ValueType, path+".value")
		}
	}
	return ""
}

// missingConstraint returns the first CHECK constraint or invariant of the
// table (metadata theirs, schema tsch) that the draft (mine, msch) does not
// have with the same expression, described as "CHECK constraint pos (id >
// 0)", or "" when the draft has them all.
func missingConstraint(theirs *txlog.Metadata, tsch *schema.StructType, mine *txlog.Metadata, msch *schema.StructType) (string, error) {
	want, err := tableConstraints(theirs, tsch)
	if err != nil {
		return "", err
	}
	have, err := tableConstraints(mine, msch)
	if err != nil {
		return "", err
	}
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h *constraint) bool {
			return h.kind == w.kind && h.name == w.name && h.expr == w.expr
		}) {
			return fmt.Sprintf("%s %s (%s)", w.kind, w.name, w.expr), nil
		}
	}
	return "", nil
}
