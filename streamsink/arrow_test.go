package streamsink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// countingReader counts the calls to Next.
type countingReader struct {
	array.RecordReader
	nexts int
}

func (c *countingReader) Next() bool { c.nexts++; return c.RecordReader.Next() }

// arrowEpoch returns a reader over rows of sch in batches of batch rows.
func arrowEpoch(t *testing.T, sch *schema.StructType, rows []value.Row, batch int) *countingReader {
	t.Helper()
	rb, err := arrowio.NewRecordBuilder(nil, sch)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Release()
	var recs []arrow.RecordBatch
	for _, r := range rows {
		if err := rb.Append(r); err != nil {
			t.Fatal(err)
		}
		if rb.Len() == batch {
			recs = append(recs, rb.NewRecordBatch())
		}
	}
	if rb.Len() > 0 {
		recs = append(recs, rb.NewRecordBatch())
	}
	rr, err := array.NewRecordReader(rb.Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	t.Cleanup(rr.Release)
	return &countingReader{RecordReader: rr}
}

// reorder returns rows of eventSchema as (payload, id, epoch), nullable.
var reorderedSchema = schema.NewStruct(
	schema.NewField("payload", schema.Primitive(schema.String), true),
	schema.NewField("id", schema.Primitive(schema.Long), true),
	schema.NewField("epoch", schema.Primitive(schema.Long), true),
)

func reorder(rows []value.Row) []value.Row {
	out := make([]value.Row, len(rows))
	for i, r := range rows {
		out[i] = value.Row{r[2], r[0], r[1]}
	}
	return out
}

func TestWriteEpochArrowSkipsReplays(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sink, err := New(newTable(t, mem), "arrow-query")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		epoch       int64
		wantSkipped bool
		wantVersion int64
	}{
		{0, false, 1},
		{1, false, 2},
		{1, true, 2}, // replay of the last epoch
		{0, true, 2},
		{2, false, 3},
	}
	var want int64
	for _, tc := range tests {
		rows := epochRows(tc.epoch, 250)
		rr := arrowEpoch(t, reorderedSchema, reorder(rows), 100)
		res, err := sink.WriteEpochArrow(ctx, tc.epoch, rr)
		if err != nil {
			t.Fatalf("epoch %d: %v", tc.epoch, err)
		}
		if res.Skipped != tc.wantSkipped || res.Version != tc.wantVersion {
			t.Fatalf("epoch %d: %+v, want skipped=%v version %d", tc.epoch, res, tc.wantSkipped, tc.wantVersion)
		}
		if tc.wantSkipped {
			if rr.nexts != 0 {
				t.Errorf("epoch %d: skipped, but the reader was read (%d calls to Next)", tc.epoch, rr.nexts)
			}
			continue
		}
		want += 250
		if res.Rows != 250 || res.Files != 1 {
			t.Errorf("epoch %d: %+v, want 250 rows in 1 file", tc.epoch, res)
		}
	}
	if got := liveRows(t, mem); got != want {
		t.Fatalf("%d live rows, want %d: a replayed epoch landed twice", got, want)
	}
	// The rows are those of the epochs, in the table's column order, and
	// the files' stats are those WriteEpoch writes for the same rows.
	tbl := sink.Table()
	var got []value.Row
	for r, err := range tbl.Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	wantRows := slices.Concat(epochRows(0, 250), epochRows(1, 250), epochRows(2, 250))
	slices.SortFunc(got, func(a, b value.Row) int { return int(a[0].(int64) - b[0].(int64)) })
	if len(got) != len(wantRows) {
		t.Fatalf("%d rows, want %d", len(got), len(wantRows))
	}
	for i := range got {
		if !slices.Equal(got[i], wantRows[i]) {
			t.Fatalf("row %d: %v, want %v", i, got[i], wantRows[i])
		}
	}
	rowMem := objectstore.NewMem("r")
	rowSink, err := New(newTable(t, rowMem), "arrow-query")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rowSink.WriteEpoch(ctx, 0, epochRows(0, 250)); err != nil {
		t.Fatal(err)
	}
	var arrowStats string
	for a := range tbl.Snapshot().AllFiles() {
		if strings.Contains(a.Stats, `"minValues":{"id":0,`) {
			arrowStats = a.Stats
		}
	}
	rowFiles := rowSink.Table().Snapshot().Files()
	if len(rowFiles) != 1 || arrowStats == "" || rowFiles[0].Stats != arrowStats {
		t.Errorf("epoch 0 stats: arrow %s, rows %v", arrowStats, rowFiles)
	}
}

func TestWriteEpochArrowRefusals(t *testing.T) {
	ctx := context.Background()
	nullID := epochRows(3, 10)
	nullID[6] = value.Row{nil, int64(3), "x"}
	tests := []struct {
		name   string
		reader func(t *testing.T) array.RecordReader
		is     error
		want   string
		row    int
	}{
		{"null in NOT NULL", func(t *testing.T) array.RecordReader {
			return arrowEpoch(t, reorderedSchema, reorder(nullID), 4)
		}, table.ErrInvalidArgument, `column "id"`, 6},
		{"column the table lacks", func(t *testing.T) array.RecordReader {
			sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true),
				schema.NewField("epoch", schema.Primitive(schema.Long), true),
				schema.NewField("other", schema.Primitive(schema.Long), true))
			return arrowEpoch(t, sch, []value.Row{{int64(1), int64(3), int64(9)}}, 4)
		}, table.ErrSchemaMismatch, "other", -1},
		{"wrong type", func(t *testing.T) array.RecordReader {
			sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.String), true))
			return arrowEpoch(t, sch, []value.Row{{"1"}}, 4)
		}, table.ErrSchemaMismatch, "id", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			sink, err := New(newTable(t, mem), "q")
			if err != nil {
				t.Fatal(err)
			}
			_, err = sink.WriteEpochArrow(ctx, 3, tc.reader(t))
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "epoch 3") {
				t.Fatalf("err %v, want %v naming %s and the epoch", err, tc.is, tc.want)
			}
			var re *table.RowError
			if got := errors.As(err, &re); got != (tc.row >= 0) || got && re.Row != tc.row {
				t.Errorf("RowError %v, want row %d", re, tc.row)
			}
			if v, _ := sink.LastCommittedEpoch(ctx); v != -1 {
				t.Errorf("epoch %d committed after a refused write", v)
			}
			for info, err := range mem.List(ctx, "", "") {
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(info.Key, ".parquet") {
					t.Errorf("data file %s written", info.Key)
				}
			}
		})
	}
}

// TestArrowEpochTimestampUnits: Arrow epochs store timestamps of every unit
// as the microseconds they are and refuse a timestamp[ns] with a
// nanosecond remainder (a *table.RowError naming the column and the row
// across batches, nothing written), with every Arrow epoch method and on
// the upsert path.
func TestArrowEpochTimestampUnits(t *testing.T) {
	ctx := context.Background()
	// The table of a case: id and the case's column (an upsert needs
	// every column in the source).
	tableSchema := func(col string) *schema.StructType {
		typ := schema.Timestamp
		if col == "ntz" {
			typ = schema.TimestampNTZ
		}
		return schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), false),
			schema.NewField(col, schema.Primitive(typ), true))
	}
	kinds := []struct {
		name  string
		opts  []Option
		write func(s *Sink, recs []arrow.RecordBatch, in *arrow.Schema) (*Result, error)
	}{
		{"WriteEpochArrow", nil, func(s *Sink, recs []arrow.RecordBatch, in *arrow.Schema) (*Result, error) {
			rr, err := array.NewRecordReader(in, recs)
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Release()
			return s.WriteEpochArrow(ctx, 0, rr)
		}},
		{"WriteEpochBatches", nil, func(s *Sink, recs []arrow.RecordBatch, in *arrow.Schema) (*Result, error) {
			return s.WriteEpochBatches(ctx, 0, recs, in)
		}},
		{"WriteEpochBatches upsert", []Option{WithMergeKeys("id")}, func(s *Sink, recs []arrow.RecordBatch, in *arrow.Schema) (*Result, error) {
			return s.WriteEpochBatches(ctx, 0, recs, in)
		}},
	}
	for _, k := range kinds {
		for _, c := range testsupport.TimestampCases() {
			t.Run(k.name+"/"+c.Name, func(t *testing.T) {
				in, recs := c.Batches()
				defer func() {
					for _, r := range recs {
						r.Release()
					}
				}()
				mem := objectstore.NewMem("t")
				tbl, err := table.Create(ctx, "", tableSchema(c.Col), table.WithStore(mem))
				if err != nil {
					t.Fatal(err)
				}
				s, err := New(tbl, "q", k.opts...)
				if err != nil {
					t.Fatal(err)
				}
				_, err = k.write(s, recs, in)
				if c.Want.IsZero() {
					var re *table.RowError
					if !errors.As(err, &re) || re.Row != 3 || !errors.Is(err, table.ErrInvalidArgument) ||
						!strings.Contains(err.Error(), `column "`+c.Col+`"`) || !strings.Contains(err.Error(), "1700000000123456789") {
						t.Fatalf("err %v, want a RowError for row 3 naming column %s and the value", err, c.Col)
					}
					for info, err := range mem.List(ctx, "", "") {
						if err != nil {
							t.Fatal(err)
						}
						if strings.HasSuffix(info.Key, ".parquet") {
							t.Errorf("data file %s written", info.Key)
						}
					}
					if v, _ := s.LastCommittedEpoch(ctx); v != -1 {
						t.Errorf("epoch %d committed after a refused write", v)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				const col = 1
				n := 0
				for row, err := range s.Table().Scan(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					n++
					want := time.Unix(0, 0)
					if row[0] == int64(3) {
						want = c.Want
					}
					if got, ok := row[col].(time.Time); !ok || !got.Equal(want) {
						t.Errorf("id %v: %s = %v, want %v", row[0], c.Col, row[col], want)
					}
				}
				if n != 4 {
					t.Errorf("%d rows, want 4", n)
				}
			})
		}
	}
}
