package txlog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
)

// decodeBoth decodes every row group of the Parquet file data with the
// row decoder and the column decoder and returns each one's actions as JSON
// lines (or its error).
func decodeBoth(t *testing.T, data []byte) (rows, cols []string, rowsErr, colsErr error) {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	plans, err := planColumns(pf.Schema())
	if err != nil {
		t.Fatal(err)
	}
	// collect keeps the actions (as the snapshot does) and encodes them
	// only after the whole file is decoded, so bytes that pointed into
	// released pages would show.
	var kept []*[]string
	var pending [][]Action
	collect := func(dst *[]string) func(*Action) {
		i := -1
		for j, d := range kept {
			if d == dst {
				i = j
			}
		}
		if i < 0 {
			kept, pending = append(kept, dst), append(pending, nil)
			i = len(kept) - 1
		}
		return func(a *Action) { pending[i] = append(pending[i], *a) }
	}
	encode := func() {
		for j, dst := range kept {
			for _, a := range pending[j] {
				b, err := json.Marshal(&a)
				if err != nil {
					t.Fatal(err)
				}
				*dst = append(*dst, string(b))
			}
			pending[j] = nil
		}
	}
	// packed: adds go into a packSeg per row group (the snapshot load
	// path), read back here as JSON after the other actions.
	packed := func(decode func(parquet.RowGroup, []columnPlan, func(*Action), *packSeg) error, dst *[]string) error {
		for _, g := range pf.RowGroups() {
			seg := newPackSeg(int(g.NumRows()))
			if err := decode(g, plans, collect(dst), seg); err != nil {
				return err
			}
			pb := newPackBuilder()
			pb.AppendSeg(seg)
			set := addSetOf(pb)
			for _, a := range set.sortedValues() {
				collect(dst)(&Action{Add: a})
			}
		}
		return nil
	}
	for _, g := range pf.RowGroups() {
		if rowsErr == nil {
			rowsErr = decodeRowGroupRows(g, plans, collect(&rows), nil)
		}
		if colsErr == nil {
			colsErr = decodeRowGroupColumns(g, plans, collect(&cols), nil)
		}
	}
	encode()
	if rowsErr == nil {
		rowsErr = packed(decodeRowGroupRows, &rows)
	}
	if colsErr == nil {
		colsErr = packed(decodeRowGroupColumns, &cols)
	}
	encode()
	return rows, cols, rowsErr, colsErr
}

func compareDecoders(t *testing.T, name string, data []byte) {
	t.Helper()
	rows, cols, rowsErr, colsErr := decodeBoth(t, data)
	if (rowsErr == nil) != (colsErr == nil) {
		t.Errorf("%s: row decoder error %v, column decoder error %v", name, rowsErr, colsErr)
		return
	}
	if len(rows) != len(cols) {
		t.Errorf("%s: row decoder %d actions, column decoder %d", name, len(rows), len(cols))
		return
	}
	for i := range rows {
		if rows[i] != cols[i] {
			t.Errorf("%s: action %d differs:\nrows:    %s\ncolumns: %s", name, i, rows[i], cols[i])
			return
		}
	}
}

// TestDecodeRowGroupColumns checks that the column decoder yields exactly
// the row decoder's actions on the checkpoints (and sidecars) of every
// corpus table and on checkpoints deltakit writes (partitioned, many
// pages, several row groups).
func TestDecodeRowGroupColumns(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                string
		commits, checkpoint int64
		filesPerCommit      int
	}{
		{"small", 3, 3, 2},
		{"many pages", 200, 200, 25},
	} {
		store := buildBenchTable(t, tc.commits, tc.checkpoint, tc.filesPerCommit)
		data, err := store.Get(ctx, CheckpointKey(tc.checkpoint), objectstore.FullObject)
		if err != nil {
			t.Fatal(err)
		}
		rows, _, _, _ := decodeBoth(t, data)
		// adds, protocol, metaData, txn; then the packed adds and the rest again
		if want := 2*(int(tc.commits)*tc.filesPerCommit) + 6; len(rows) != want {
			t.Errorf("%s: %d actions, want %d", tc.name, len(rows), want)
		}
		compareDecoders(t, tc.name, data)
	}

	corpus := testsupport.CorpusDir(t)
	var files []string
	err := filepath.WalkDir(corpus, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") && strings.Contains(p, "_delta_log") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d checkpoint files under %s, want at least 5", len(files), corpus)
	}
	compared := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			continue // damaged on purpose: readCheckpointParquet's tests cover it
		}
		if _, err := planColumns(pf.Schema()); err != nil {
			continue
		}
		rel, _ := filepath.Rel(corpus, f)
		compareDecoders(t, rel, data)
		compared++
	}
	t.Logf("compared %d of %d corpus checkpoint files (the others are damaged on purpose)", compared, len(files))
	if compared < 5 {
		t.Errorf("compared only %d corpus checkpoint files", compared)
	}
}

// BenchmarkDecodeCheckpoint decodes a 100,000-file checkpoint with the row
// decoder and with the column decoder, on one goroutine.
func BenchmarkDecodeCheckpoint(b *testing.B) {
	store := buildBenchTable(b, 1000, 1000, 100)
	data, err := store.Get(context.Background(), CheckpointKey(1000), objectstore.FullObject)
	if err != nil {
		b.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	plans, err := planColumns(pf.Schema())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		decode func(parquet.RowGroup, []columnPlan, func(*Action), *packSeg) error
	}{{"rows", decodeRowGroupRows}, {"columns", decodeRowGroupColumns}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for _, g := range pf.RowGroups() {
					if err := bc.decode(g, plans, func(*Action) { n++ }, nil); err != nil {
						b.Fatal(err)
					}
				}
				if n != 100_003 {
					b.Fatalf("%d actions", n)
				}
			}
		})
	}
}

// TestSetDefSkipsOnlyIgnoredValues checks the premise of columnPlan.setDef
// on the checkpoint schemas of deltakit and of the corpus: every setter
// leaves a row untouched by a null value below its setDef, and setDef is at
// least topDef (the column decoder calls no setter for such values).
func TestSetDefSkipsOnlyIgnoredValues(t *testing.T) {
	store := buildBenchTable(t, 3, 3, 2)
	data, err := store.Get(context.Background(), CheckpointKey(3), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*parquet.Schema{}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	schemas["deltakit"] = pf.Schema()
	corpus := testsupport.CorpusDir(t)
	_ = filepath.WalkDir(corpus, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") || !strings.Contains(p, "_delta_log") {
			return err
		}
		if b, err := os.ReadFile(p); err == nil {
			if f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b))); err == nil {
				rel, _ := filepath.Rel(corpus, p)
				schemas[rel] = f.Schema()
			}
		}
		return nil
	})
	checked, skipping := 0, 0
	for name, schema := range schemas {
		plans, err := planColumns(schema)
		if err != nil {
			continue
		}
		for i, p := range plans {
			if p.top < 0 || p.set == nil {
				continue
			}
			if p.setDef < p.topDef {
				t.Errorf("%s column %v: setDef %d below topDef %d", name, schema.Columns()[i], p.setDef, p.topDef)
			}
			for d := 0; d < p.setDef; d++ {
				var got, want rowAsm
				got.reset()
				want.reset()
				p.set(&got, parquet.Value{}.Level(0, d, i))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s column %v: a null at definition level %d (setDef %d) changed the row", name, schema.Columns()[i], d, p.setDef)
				}
				if d >= p.topDef {
					skipping++
				}
			}
			checked++
		}
	}
	// the add struct's optional fields (tags, deletionVector, baseRowId, ...)
	// must be skipped when the add is present, or setDef saves nothing
	if checked < 50 || skipping < 20 {
		t.Errorf("checked %d columns, %d levels skipped at or above topDef: too few", checked, skipping)
	}
	t.Logf("%d schemas, %d columns with setters, %d skipped levels at or above topDef", len(schemas), checked, skipping)
}
