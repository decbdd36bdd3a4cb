package parquetio

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
)

// TestReadCorruptFilesNeverPanic damages real files in many ways and reads
// them: every outcome must be rows or a *FileError naming the file.
func TestReadCorruptFilesNeverPanic(t *testing.T) {
	type source struct {
		name string
		data []byte
		sch  *schema.StructType
		mode string
	}
	own, _ := writeToBytes(t, allTypesSchema(), allTypesRows(60), WithRowGroupRows(25), WithPageSize(512))
	sources := []source{{"own all types", own, allTypesSchema(), "none"}}
	for _, name := range []string{"golden__parquet-all-types", "golden__data-reader-map", "golden__table-with-columnmapping-mode-name"} {
		tbl := loadCorpusTable(t, name)
		data, err := os.ReadFile(filepath.Join(tbl.dir, filepath.FromSlash(tbl.keys[0])))
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, source{name, data, tbl.data, tbl.mode})
	}
	for _, src := range sources {
		name, data := src.name, src.data
		rng := rand.New(rand.NewPCG(1, uint64(len(data))))
		variants := [][]byte{nil, []byte("PAR1"), data[:len(data)/2], data[:len(data)-1], data[len(data)/3:]}
		for range 1000 {
			b := bytes.Clone(data)
			for range 1 + rng.IntN(4) {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
			variants = append(variants, b)
		}
		// Damage inside the footer specifically.
		for i := range 200 {
			b := bytes.Clone(data)
			b[len(b)-9-rng.IntN(min(len(b)-9, 2000))] ^= byte(1 + i%255)
			variants = append(variants, b)
		}
		for i, b := range variants {
			const key = "bad/file.parquet"
			var rerr error
			for _, err := range ReadReaderAt(context.Background(), bytes.NewReader(b), int64(len(b)), key, src.sch, WithColumnMapping(src.mode)) {
				if err != nil {
					rerr = err
				}
			}
			if i%5 == 0 {
				// The store path fetches column chunks itself.
				mem := objectstore.NewMem("corrupt")
				if err := mem.Put(context.Background(), key, b); err != nil {
					t.Fatal(err)
				}
				for _, err := range ReadFile(context.Background(), mem, key, src.sch, WithColumnMapping(src.mode)) {
					if err != nil && rerr == nil {
						rerr = err
					}
				}
			}
			if rerr != nil {
				var fe *FileError
				if !errors.As(rerr, &fe) || fe.File != key {
					t.Fatalf("%s variant %d: error %v is not a *FileError naming the file", name, i, rerr)
				}
			}
		}
	}
}

func TestReadIndexedRowsAndSkip(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__parquet-all-types")
	store, err := objectstore.NewLocal(tbl.dir)
	if err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, store, tbl.keys[0], tbl.data)
	if f.NumRows() != 200 || f.NumRowGroups() != 1 {
		t.Fatalf("NumRows %d, NumRowGroups %d", f.NumRows(), f.NumRowGroups())
	}
	var idx []int64
	for ir, err := range f.IndexedRows(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if ir.Index > 0 && ir.Index%23 != 0 && ir.Row[2] != int32(ir.Index) {
			t.Fatalf("row %d has IntegerType %s", ir.Index, show(ir.Row[2]))
		}
		idx = append(idx, ir.Index)
	}
	if len(idx) != 200 || idx[0] != 0 || idx[199] != 199 {
		t.Fatalf("indexes %v", idx)
	}
	// Drop every even row, as a deletion vector would.
	n := 0
	for row, err := range ReadFile(context.Background(), store, tbl.keys[0], tbl.data, WithSkipRows(func(i int64) bool { return i%2 == 0 })) {
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := row[2].(int32); ok && v%2 == 0 {
			t.Fatalf("even row %d not skipped", v)
		}
		n++
	}
	if n != 100 {
		t.Errorf("%d rows after skipping, want 100", n)
	}
}

func TestReadErrors(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__parquet-all-types")
	store, err := objectstore.NewLocal(tbl.dir)
	if err != nil {
		t.Fatal(err)
	}
	// Missing file.
	_, err = Open(context.Background(), store, "nope.parquet", tbl.data)
	if !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// Incompatible type.
	bad := renameType(tbl.data, "StringType", "long")
	_, err = Open(context.Background(), store, tbl.keys[0], bad)
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Errorf("string read as long: %v", err)
	}
	// Canceled context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range ReadFile(ctx, store, tbl.keys[0], tbl.data) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled: %v", err)
		}
	}
	// Stopping early is fine.
	for range ReadFile(context.Background(), store, tbl.keys[0], tbl.data) {
		break
	}
}
