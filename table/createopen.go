package table

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
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
		snap, err := txlog.Load(ctx, store)
		if err != nil {
			return nil, fmt.Errorf("table: open %s: %w", store.URI(), err)
		}
		t := &Table{store: store, snap: snap, cfg: cfg}
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

// Draft is a table that does not exist yet: data files can be written for
// it, and the table is created only when they are committed. A first write
// that fails (bad input, a cancelled context) then leaves no empty table
// behind, only data files that Discard deletes. Make one with NewDraft.
type Draft struct {
	store  objectstore.Store
	sch    *schema.StructType
	cfg    config
	shadow *Table // the new table's version 0 in memory, writing to store
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
	mcfg := cfg
	mcfg.txnOpts = nil
	shadow, err := create(ctx, objectstore.NewMem("draft"), sch, mcfg)
	if err != nil {
		return nil, err
	}
	shadow.store, shadow.cfg = store, cfg
	return &Draft{store: store, sch: sch, cfg: cfg, shadow: shadow}, nil
}

// URI returns the location of the table to be.
func (d *Draft) URI() string { return d.store.URI() }

// Schema returns the schema of the table to be.
func (d *Draft) Schema() *schema.StructType { return d.sch }

// WriteFiles writes rows as data files of the table to be, as
// Table.WriteFiles does, and returns their add actions for Commit.
func (d *Draft) WriteFiles(ctx context.Context, rows []parquetio.Row, opts ...WriteOption) ([]*txlog.Add, error) {
	adds, err := d.shadow.WriteFiles(ctx, rows, opts...)
	for _, a := range adds {
		if k, err := url.PathUnescape(a.Path); err == nil {
			d.keys = append(d.keys, k)
		}
	}
	return adds, err
}

// Commit creates the table (version 0) and appends adds to it (version 1)
// as AppendFiles does; created reports whether this call created it. When
// another writer created the table first, adds are appended to that table
// if their files fit it as they are (CreateOrOpen's check, plus each column
// of the same type); a table that does not fit is an error wrapping
// ErrTableExists and ErrSchemaMismatch, and the draft's data files are
// deleted then. Nothing is created when an error comes before the create.
func (d *Draft) Commit(ctx context.Context, adds []*txlog.Add, opts ...WriteOption) (*Table, bool, error) {
	t, created, err := createOrOpen(ctx, d.store, d.sch, d.cfg)
	if err == nil && !created {
		err = t.filesFit(d.sch, d.cfg.partitionColumns)
	}
	if err != nil {
		if errors.Is(err, ErrSchemaMismatch) {
			d.Discard()
		}
		return nil, false, err
	}
	nt, err := t.AppendFiles(ctx, adds, opts...)
	if err != nil {
		return nil, created, err
	}
	d.keys = nil
	return nt, created, nil
}

// Discard deletes the data files the draft wrote and has not committed
// (best effort, logged).
func (d *Draft) Discard() {
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
