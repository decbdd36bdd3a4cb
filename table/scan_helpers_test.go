package table

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/dvcodec"
	"github.com/deltakit/deltakit/value"
)

// scanFixture builds Delta tables for scan tests by writing data files with
// parquetio and commit files directly, so that the tests control every
// field of the log (stats, partition values, DVs, absolute paths, column
// mapping) and do not depend on the table's write path.
type scanFixture struct {
	t        *testing.T
	store    objectstore.Store
	sch      *schema.StructType
	partCols []string
	mode     string
	version  int64
	pending  []txlog.Action
}

var scanFixtureSeq atomic.Int64

// newScanFixture starts a table in a fresh in-memory store. Version 0
// (protocol and metaData) is written by the first commit, together with the
// actions given to it. proto nil means minimalProtocol, or (2,5) when config
// sets a column mapping mode.
func newScanFixture(t *testing.T, sch *schema.StructType, partCols []string, config map[string]string, proto *txlog.Protocol) *scanFixture {
	t.Helper()
	store := objectstore.NewMem(fmt.Sprintf("scan-fixture-%d", scanFixtureSeq.Add(1)))
	return newScanFixtureIn(t, store, sch, partCols, config, proto)
}

func newScanFixtureIn(t *testing.T, store objectstore.Store, sch *schema.StructType, partCols []string, config map[string]string, proto *txlog.Protocol) *scanFixture {
	t.Helper()
	f := &scanFixture{t: t, store: store, sch: sch, partCols: partCols, mode: "none"}
	if config == nil {
		config = map[string]string{}
	}
	if m := config[txlog.PropColumnMappingMode]; m != "" {
		f.mode = m
		if proto == nil {
			proto = &txlog.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
		}
	}
	if proto == nil {
		proto = minimalProtocol(sch)
	}
	ss, err := schema.Marshal(sch)
	if err != nil {
		t.Fatal(err)
	}
	if partCols == nil {
		partCols = []string{}
	}
	created := int64(1_700_000_000_000)
	f.pending = []txlog.Action{
		{Protocol: proto},
		{Metadata: &txlog.Metadata{ID: "00000000-0000-0000-0000-000000000001", Format: txlog.Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString: ss, PartitionColumns: partCols, Configuration: config, CreatedTime: &created}},
	}
	return f
}

// dataSchema is the schema of the data files: the table schema without the
// partition columns.
func (f *scanFixture) dataSchema() (*schema.StructType, []int) {
	ds := &schema.StructType{}
	var idx []int
	for i, fl := range f.sch.Fields {
		if !f.isPart(fl.Name) {
			ds.Fields = append(ds.Fields, fl)
			idx = append(idx, i)
		}
	}
	return ds, idx
}

func (f *scanFixture) isPart(name string) bool {
	for _, c := range f.partCols {
		if c == name {
			return true
		}
	}
	return false
}

// file writes rows (full table rows in schema order, all with the same
// partition values) as one data file named name in its Hive partition
// directory and returns its add action, stats included.
func (f *scanFixture) file(name string, rows ...value.Row) *txlog.Add {
	t := f.t
	t.Helper()
	ctx := context.Background()
	ds, idx := f.dataSchema()
	pv := map[string]string{}
	logical := map[string]string{}
	for i, fl := range f.sch.Fields {
		if !f.isPart(fl.Name) {
			continue
		}
		var s string
		for j, r := range rows {
			v, ok, err := SerializePartitionValue(fl.Type, r[i])
			if err != nil {
				t.Fatalf("partition value %v: %v", r[i], err)
			}
			if !ok {
				v = ""
			}
			if j > 0 && v != s {
				t.Fatalf("file %s: rows with different partition values %q and %q", name, s, v)
			}
			s = v
		}
		pv[fl.PhysicalName(f.mode)] = s
		logical[fl.Name] = s
	}
	data := make([]value.Row, len(rows))
	for j, r := range rows {
		d := make(value.Row, len(idx))
		for k, i := range idx {
			d[k] = r[i]
		}
		data[j] = d
	}
	key := "part-" + name + ".snappy.parquet"
	if len(f.partCols) > 0 {
		key = partitionDir(f.partCols, logical) + "/" + key
	}
	wf, err := parquetio.WriteFile(ctx, f.store, key, ds, data, parquetio.WithWriteColumnMapping(f.mode))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := wf.Stats.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return &txlog.Add{Path: encodeAddPath(key), PartitionValues: pv, Size: wf.Size,
		ModificationTime: 1_700_000_000_000, DataChange: true, Stats: stats}
}

// withDV sets an inline deletion vector deleting these row indexes.
func withDV(t *testing.T, a *txlog.Add, rows ...uint64) *txlog.Add {
	t.Helper()
	dv, err := dvcodec.Inline(roaring64.BitmapOf(rows...))
	if err != nil {
		t.Fatal(err)
	}
	c := *a
	c.DeletionVector = dv
	return &c
}

// commit writes the next commit file with these adds (and version 0's
// protocol and metaData for the first commit).
func (f *scanFixture) commit(adds ...*txlog.Add) {
	f.t.Helper()
	actions := append(f.pending, txlog.Action{CommitInfo: &txlog.CommitInfo{Timestamp: time.Now().UnixMilli(), Operation: "WRITE"}})
	f.pending = nil
	for _, a := range adds {
		actions = append(actions, txlog.Action{Add: a})
	}
	f.commitActions(actions...)
}

// commitActions writes the next commit file with exactly these actions.
func (f *scanFixture) commitActions(actions ...txlog.Action) {
	f.t.Helper()
	data, err := txlog.EncodeCommit(actions)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.PutIfAbsent(context.Background(), txlog.CommitKey(f.version), data); err != nil {
		f.t.Fatal(err)
	}
	f.version++
}

// open opens the table at its latest version (or as opts say).
func (f *scanFixture) open(opts ...Option) *Table {
	f.t.Helper()
	tbl, err := Open(context.Background(), "", append([]Option{WithStore(f.store)}, opts...)...)
	if err != nil {
		f.t.Fatal(err)
	}
	return tbl
}

// fakeAdd is an add action for a file that is never read (skipping tests).
func fakeAdd(path string, pv map[string]string, stats string) *txlog.Add {
	if pv == nil {
		pv = map[string]string{}
	}
	return &txlog.Add{Path: path, PartitionValues: pv, Size: 100, ModificationTime: 1, DataChange: true, Stats: stats}
}

// rowsText renders rows compactly for comparisons in messages.
func rowsText(rows []value.Row) string {
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteString(" | ")
		}
		for j, v := range r {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(valueText(v))
		}
	}
	return b.String()
}

func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.999999Z")
	case []byte:
		return fmt.Sprintf("0x%x", x)
	case value.Row:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case value.Decimal:
		return x.String()
	case value.Date:
		return x.String()
	case string:
		return x
	}
	return fmt.Sprint(v)
}
