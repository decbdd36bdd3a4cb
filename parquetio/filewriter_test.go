package parquetio

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Writer.Size is the number of bytes written, after Close the file's size.
func TestWriterSize(t *testing.T) {
	for _, n := range []int{0, 1, 300, 5000} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, allTypesSchema(), WithRowGroupRows(1000))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(allTypesRows(n)); err != nil {
			t.Fatal(err)
		}
		if w.fileSize() < int64(buf.Len()) || w.fileSize() > int64(buf.Len())+256<<10 {
			t.Errorf("%d rows: Size() before Close = %d, want the %d bytes written plus at most the 256 KiB buffered", n, w.fileSize(), buf.Len())
		}
		if n == 5000 && w.fileSize() == 0 {
			t.Errorf("%d rows: Size() before Close = 0", n)
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if w.fileSize() != int64(buf.Len()) || buf.Len() == 0 {
			t.Errorf("%d rows: Size() = %d, wrote %d bytes", n, w.fileSize(), buf.Len())
		}
	}
}

// FileWriter streams a file of several row groups in batches: the file
// appears only on Close, with the bytes, size and stats a Writer to memory
// produces.
func TestFileWriterStreams(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	sch := allTypesSchema()
	rows := allTypesRows(3000)
	opts := []WriteOption{WithRowGroupRows(700)}
	const key = "p=1/part-00000.snappy.parquet"
	fw, err := CreateFile(ctx, store, key, sch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Abort()
	for i := 0; i < len(rows); i += 250 {
		if err := fw.Write(rows[i:min(i+250, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Stat(ctx, key); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("Stat before Close = %v, want ErrNotExist", err)
	}
	wf, err := fw.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The same rows in the same batches, to memory.
	var buf bytes.Buffer
	mw, err := NewWriter(&buf, sch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 250 {
		if err := mw.Write(rows[i:min(i+250, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	wantStats, err := mw.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := buf.Bytes()
	got, err := store.Get(ctx, key, objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("streamed file (%d bytes) differs from the file written to memory (%d bytes)", len(got), len(want))
	}
	if wf.Key != key || wf.Size != int64(len(want)) || wf.Rows != 3000 {
		t.Errorf("WrittenFile = {%q, %d bytes, %d rows}, want {%q, %d, 3000}", wf.Key, wf.Size, wf.Rows, key, len(want))
	}
	gotJSON, _ := wf.Stats.JSON()
	wantJSON, _ := wantStats.JSON()
	if gotJSON != wantJSON || !strings.Contains(gotJSON, `"numRecords":3000`) {
		t.Errorf("stats = %s, want %s", gotJSON, wantJSON)
	}
	fw.Abort() // after Close: nothing happens
	if _, err := store.Stat(ctx, key); err != nil {
		t.Errorf("Abort after Close removed the file: %v", err)
	}
}

// A FileWriter that fails (a bad row, a cancelled context) or is aborted
// stores nothing and leaves no temporary file.
func TestFileWriterFailures(t *testing.T) {
	sch := schema.NewStruct(field("id", prim(schema.Long), false))
	good := []value.Row{{int64(1)}, {int64(2)}}
	tests := []struct {
		name string
		run  func(ctx context.Context, cancel context.CancelFunc, fw *FileWriter) error
		want error
	}{
		{"bad row", func(ctx context.Context, _ context.CancelFunc, fw *FileWriter) error {
			if err := fw.Write(good); err != nil {
				return err
			}
			return fw.Write([]value.Row{{nil}})
		}, ErrInvalidValue},
		{"cancelled before Close", func(ctx context.Context, cancel context.CancelFunc, fw *FileWriter) error {
			if err := fw.Write(good); err != nil {
				return err
			}
			cancel()
			_, err := fw.Close(context.Background())
			return err
		}, context.Canceled},
		{"Close with a cancelled context", func(ctx context.Context, _ context.CancelFunc, fw *FileWriter) error {
			if err := fw.Write(good); err != nil {
				return err
			}
			done, cancel := context.WithCancel(ctx)
			cancel()
			_, err := fw.Close(done)
			return err
		}, context.Canceled},
		{"aborted", func(ctx context.Context, _ context.CancelFunc, fw *FileWriter) error {
			if err := fw.Write(good); err != nil {
				return err
			}
			fw.Abort()
			_, err := fw.Close(ctx)
			return err
		}, objectstore.ErrUploadClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := objectstore.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const key = "part-0.parquet"
			fw, err := CreateFile(ctx, store, key, sch)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.run(ctx, cancel, fw)
			fw.Abort()
			var fe *FileError
			if !errors.Is(err, tc.want) || !errors.As(err, &fe) || fe.File != key {
				t.Fatalf("error %v, want a *FileError naming %s wrapping %v", err, key, tc.want)
			}
			var left []string
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					left = append(left, p)
				}
				return nil
			})
			if len(left) != 0 {
				t.Errorf("files left: %q", left)
			}
		})
	}
}

// WriteFile of a bad row stores nothing; its error names the file.
func TestWriteFileBadRowStoresNothing(t *testing.T) {
	store := objectstore.NewMem("t")
	sch := schema.NewStruct(field("id", prim(schema.Long), false))
	_, err := WriteFile(context.Background(), store, "part-0.parquet", sch, []value.Row{{int64(1)}, {"x"}})
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "part-0.parquet") {
		t.Fatalf("WriteFile of a bad row: %v", err)
	}
	if _, err := store.Stat(context.Background(), "part-0.parquet"); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("Stat = %v, want ErrNotExist", err)
	}
}
