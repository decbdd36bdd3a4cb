package parquetio

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// TestWriteDictionaryBounded: a dictionary-encoded string column of
// distinct values falls back to PLAIN once its dictionary passes
// dictMaxBytes, so the dictionary (held in memory until the row group is
// flushed, then copied into the dictionary page) stays small; a column of
// few distinct values stays dictionary encoded. Before the writer cut the
// pages by the values' bytes, parquet-go cut them by the size of the
// dictionary indexes only, and the 1,000-byte values of this test all went
// into one dictionary page of ~24 MiB.
func TestWriteDictionaryBounded(t *testing.T) {
	sch := schema.NewStruct(
		field("id", prim("long"), false),
		field("payload", prim("string"), true),
		field("city", prim("string"), true),
	)
	const n = 24_000
	rows := make([]value.Row, n)
	rng := rand.New(rand.NewPCG(1, 2))
	p := make([]byte, 1000) // random letters: Snappy cannot shrink the dictionary page much
	for i := range rows {
		for k := range p {
			p[k] = byte('a' + rng.IntN(26))
		}
		rows[i] = value.Row{int64(i), string(p), []string{"Oslo", "Lima", "Pune"}[i%3]}
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, sch)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	if len(md.RowGroups) != 1 {
		t.Fatalf("%d row groups, want 1", len(md.RowGroups))
	}
	cols := md.RowGroups[0].Columns
	dictSize := func(c int) int64 {
		m := cols[c].MetaData
		if m.DictionaryPageOffset == 0 {
			return 0
		}
		return m.DataPageOffset - m.DictionaryPageOffset
	}
	plainPages := func(c int) bool { // data pages PLAIN encoded
		for _, x := range cols[c].MetaData.EncodingStats {
			if x.PageType == format.DataPage && x.Encoding == format.Plain && x.Count > 0 {
				return true
			}
		}
		return false
	}
	if got, limit := dictSize(1), int64(3<<20+64<<10); got == 0 || got > limit {
		t.Errorf("payload dictionary page: %d bytes, want 1..%d", got, limit)
	}
	if !plainPages(1) {
		t.Errorf("payload encoding stats %v: want PLAIN pages after the dictionary filled", cols[1].MetaData.EncodingStats)
	}
	if got := dictSize(2); got == 0 || got > 1<<10 {
		t.Errorf("city dictionary page: %d bytes, want a small dictionary", got)
	}
	if plainPages(2) {
		t.Errorf("city encoding stats %v: want dictionary pages only", cols[2].MetaData.EncodingStats)
	}
	// Every value reads back.
	i := 0
	for row, err := range ReadReaderAt(context.Background(), bytes.NewReader(data), int64(len(data)), "x", sch) {
		if err != nil {
			t.Fatal(err)
		}
		if row[0] != rows[i][0] || row[1] != rows[i][1] || row[2] != rows[i][2] {
			t.Fatalf("row %d: %v, want %v", i, row[0], rows[i][0])
		}
		i++
	}
	if i != n {
		t.Fatalf("read %d rows, want %d", i, n)
	}
}
