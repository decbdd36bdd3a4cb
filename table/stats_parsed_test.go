package table

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// The checkpoint layout Spark writes with delta.checkpoint.writeStatsAsJson
// = false and delta.checkpoint.writeStatsAsStruct = true (spec "Checkpoint
// Schema"): add.stats is null, add.stats_parsed holds numRecords, minValues,
// maxValues and nullCount as structs shaped like the table schema (typed:
// timestamp, date, decimal), add.partitionValues_parsed the typed partition
// values.
type spValues struct {
	ID  *int64  `parquet:"id,optional"`
	TS  *int64  `parquet:"ts,optional,timestamp(microsecond:utc)"`
	D   *int32  `parquet:"d,optional,date"`
	Dec *int64  `parquet:"dec,optional,decimal(2:10)"`
	S   *string `parquet:"s,optional"`
}

type spCounts struct {
	ID  *int64 `parquet:"id,optional"`
	TS  *int64 `parquet:"ts,optional"`
	D   *int64 `parquet:"d,optional"`
	Dec *int64 `parquet:"dec,optional"`
	S   *int64 `parquet:"s,optional"`
}

type spStats struct {
	NumRecords  *int64    `parquet:"numRecords,optional"`
	MinValues   *spValues `parquet:"minValues,optional"`
	MaxValues   *spValues `parquet:"maxValues,optional"`
	NullCount   *spCounts `parquet:"nullCount,optional"`
	TightBounds *bool     `parquet:"tightBounds,optional"`
}

type spPartition struct {
	P *string `parquet:"p,optional"`
}

type spAdd struct {
	Path                  string            `parquet:"path"`
	PartitionValues       map[string]string `parquet:"partitionValues"`
	Size                  int64             `parquet:"size"`
	ModificationTime      int64             `parquet:"modificationTime"`
	DataChange            bool              `parquet:"dataChange"`
	Stats                 *string           `parquet:"stats,optional"`
	Tags                  map[string]string `parquet:"tags,optional"`
	PartitionValuesParsed *spPartition      `parquet:"partitionValues_parsed,optional"`
	StatsParsed           *spStats          `parquet:"stats_parsed,optional"`
}

type spFormat struct {
	Provider string            `parquet:"provider"`
	Options  map[string]string `parquet:"options"`
}

type spMetaData struct {
	ID               string            `parquet:"id"`
	Format           *spFormat         `parquet:"format,optional"`
	SchemaString     string            `parquet:"schemaString"`
	PartitionColumns []string          `parquet:"partitionColumns,list"`
	Configuration    map[string]string `parquet:"configuration"`
}

type spProtocol struct {
	MinReaderVersion int32 `parquet:"minReaderVersion"`
	MinWriterVersion int32 `parquet:"minWriterVersion"`
}

type spRow struct {
	Add      *spAdd      `parquet:"add,optional"`
	MetaData *spMetaData `parquet:"metaData,optional"`
	Protocol *spProtocol `parquet:"protocol,optional"`
}

func ptr[T any](v T) *T { return &v }

// TestStatsOnlyInCheckpointStructs: a table whose commits before its
// checkpoint were cleaned up and whose checkpoint has stats only as
// stats_parsed: the snapshot knows every file's row count and the scan
// skips files by those stats (id, timestamp, date, decimal, string, null
// counts) and prunes by partition value.
func TestStatsOnlyInCheckpointStructs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := schema.Primitive
	sch := schema.NewStruct(
		schema.NewField("p", p(schema.String), true),
		schema.NewField("id", p(schema.Long), true),
		schema.NewField("ts", p(schema.Timestamp), true),
		schema.NewField("d", p(schema.Date), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		schema.NewField("s", p(schema.String), true),
	)
	tbl, err := Create(ctx, dir, sch, WithPartitionColumns("p"))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// batch k: one file in partition p=pk with ids k*100 .. k*100+9; batch 3 has a null s
	type bounds struct{ minID, maxID, minTS, maxTS, minUnscaled, maxUnscaled int64 }
	var want []bounds
	const batches, rowsPer = 4, 10
	for k := range batches {
		var rows []value.Row
		var b bounds
		for i := range rowsPer {
			id := int64(k*100 + i)
			ts := base.Add(time.Duration(k)*24*time.Hour + time.Duration(i)*time.Second + 1500*time.Microsecond)
			dec := value.Decimal{Unscaled: big.NewInt(id*100 + 25), Scale: 2}
			var s any = fmt.Sprintf("s%d-%02d", k, i)
			if k == 3 && i == 0 {
				s = nil
			}
			rows = append(rows, value.Row{fmt.Sprintf("p%d", k), id, ts, value.DateOf(base) + value.Date(k*10+i), dec, s})
			if i == 0 {
				b = bounds{id, id, ts.UnixMicro(), ts.UnixMicro(), id*100 + 25, id*100 + 25}
			}
			b.maxID, b.maxTS, b.maxUnscaled = id, ts.UnixMicro(), id*100+25
		}
		want = append(want, b)
		if tbl, err = tbl.AppendRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	snap := tbl.Snapshot()
	if snap.Version() != batches || snap.NumFiles() != batches {
		t.Fatalf("version %d with %d files, want %d and %d", snap.Version(), snap.NumFiles(), batches, batches)
	}

	// The checkpoint of the latest version, stats as structs only.
	pr, md := snap.Protocol(), snap.Metadata()
	rows := []spRow{
		{Protocol: &spProtocol{MinReaderVersion: pr.MinReaderVersion, MinWriterVersion: pr.MinWriterVersion}},
		{MetaData: &spMetaData{ID: md.ID, Format: &spFormat{Provider: md.Format.Provider, Options: md.Format.Options},
			SchemaString: md.SchemaString, PartitionColumns: md.PartitionColumns, Configuration: md.Configuration}},
	}
	for _, a := range snap.Files() {
		var k int
		if _, err := fmt.Sscanf(a.PartitionValues["p"], "p%d", &k); err != nil {
			t.Fatal(err)
		}
		b := want[k]
		days := func(i int) *int32 { return ptr(int32(value.DateOf(base)) + int32(k*10+i)) }
		micros := func(us int64) *int64 { return ptr(us) } // full µs: the reader cuts to ms
		nullS := int64(0)
		if k == 3 {
			nullS = 1
		}
		minS, maxS := fmt.Sprintf("s%d-00", k), fmt.Sprintf("s%d-09", k)
		if k == 3 {
			minS = "s3-01"
		}
		rows = append(rows, spRow{Add: &spAdd{
			Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size, ModificationTime: a.ModificationTime, DataChange: true,
			PartitionValuesParsed: &spPartition{P: ptr(a.PartitionValues["p"])},
			StatsParsed: &spStats{
				NumRecords:  ptr(int64(rowsPer)),
				MinValues:   &spValues{ID: &b.minID, TS: micros(b.minTS), D: days(0), Dec: &b.minUnscaled, S: &minS},
				MaxValues:   &spValues{ID: &b.maxID, TS: micros(b.maxTS), D: days(rowsPer - 1), Dec: &b.maxUnscaled, S: &maxS},
				NullCount:   &spCounts{ID: ptr(int64(0)), TS: ptr(int64(0)), D: ptr(int64(0)), Dec: ptr(int64(0)), S: &nullS},
				TightBounds: ptr(true),
			},
		}})
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[spRow](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	store := tbl.Store()
	if err := store.Put(ctx, txlog.CheckpointKey(snap.Version()), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, txlog.LastCheckpointKey, fmt.Appendf(nil, `{"version":%d,"size":%d}`, snap.Version(), len(rows))); err != nil {
		t.Fatal(err)
	}
	// the commits before the checkpoint are cleaned up: their JSON stats are gone
	for v := range snap.Version() {
		if err := store.Delete(ctx, txlog.CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}

	tbl, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if cp := tbl.Snapshot().CheckpointVersion(); cp != snap.Version() {
		t.Fatalf("replay started at checkpoint %d, want %d", cp, snap.Version())
	}
	total := int64(0)
	for _, a := range tbl.Snapshot().Files() {
		n, ok := a.NumRecords()
		if !ok {
			t.Fatalf("file %s has no numRecords (stats %q)", a.Path, a.Stats)
		}
		total += n
	}
	if total != batches*rowsPer {
		t.Fatalf("snapshot counts %d rows, want %d", total, batches*rowsPer)
	}

	tsAt := func(k, i int, extra time.Duration) time.Time {
		return base.Add(time.Duration(k)*24*time.Hour + time.Duration(i)*time.Second + extra)
	}
	dec := func(unscaled int64) value.Decimal {
		return value.Decimal{Unscaled: big.NewInt(unscaled), Scale: 2}
	}
	for _, tc := range []struct {
		name          string
		e             Expr
		pruned, kept  int
		rows          int
		wantPartition []string // partitions of the files read
	}{
		{"id above batch 2", Col("id").Gt(int64(250)), 0, 1, 10, []string{"p3"}},
		{"id in batch 1", Col("id").Eq(int64(105)), 0, 1, 1, []string{"p1"}},
		{"timestamp after batch 1", Col("ts").Ge(tsAt(2, 0, 0)), 0, 2, 20, []string{"p2", "p3"}},
		{"timestamp before batch 0's max (µs cut to ms)", Col("ts").Lt(tsAt(0, 0, 1500*time.Microsecond)), 0, 1, 0, []string{"p0"}},
		{"date of batch 2", Col("d").Eq(value.DateOf(base) + 25), 0, 1, 1, []string{"p2"}},
		{"decimal below batch 1", Col("dec").Lt(dec(10025)), 0, 1, 10, []string{"p0"}},
		{"string of batch 0", Col("s").Eq("s0-05"), 0, 1, 1, []string{"p0"}},
		{"null string", Col("s").IsNull(), 0, 1, 1, []string{"p3"}},
		{"partition", Col("p").Eq("p1"), 3, 1, 10, []string{"p1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st ScanStats
			files, err := tbl.Files(ctx, WithFilter(tc.e), WithScanStats(&st))
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, f := range files {
				parts = append(parts, f.PartitionValues["p"])
			}
			slices.Sort(parts)
			if st.FilesPruned != tc.pruned || len(files) != tc.kept || st.FilesSkipped != batches-tc.pruned-tc.kept ||
				!slices.Equal(parts, tc.wantPartition) {
				t.Fatalf("pruned %d, skipped %d, kept %v; want pruned %d, kept %v", st.FilesPruned, st.FilesSkipped, parts, tc.pruned, tc.wantPartition)
			}
			n := 0
			for _, err := range tbl.Scan(ctx, WithFilter(tc.e)) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != tc.rows {
				t.Fatalf("%d rows, want %d", n, tc.rows)
			}
		})
	}
}
