package parquetio

import (
	"os"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/value"
)

// TestReadPolarsFlights reads flights-3m.parquet of the npm package
// vega-datasets@3.2.1 (written by Polars: 3,000,000 rows in 11 row groups,
// date as TIMESTAMP(MICROS, not adjusted), all columns optional) when
// $DELTAKIT_FLIGHTS_PARQUET names it, then writes the rows again and checks
// they read back the same.
func TestReadPolarsFlights(t *testing.T) {
	path := os.Getenv("DELTAKIT_FLIGHTS_PARQUET")
	if path == "" {
		testsupport.Absent(t, "set DELTAKIT_FLIGHTS_PARQUET to vega-datasets' data/flights-3m.parquet (scripts/test.sh does, after scripts/fetch-demo-data.sh)")
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	sch := flightsSchema()
	f, err := OpenReaderAt(fh, info.Size(), path, sch)
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 3_000_000 || f.NumRowGroups() != 11 {
		t.Errorf("%d rows in %d row groups, want 3000000 in 11", f.NumRows(), f.NumRowGroups())
	}
	t0 := time.Now()
	rows := make([]value.Row, 0, 3_000_000)
	for row, err := range f.Rows(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	readTime := time.Since(t0)
	if len(rows) != 3_000_000 {
		t.Fatalf("%d rows", len(rows))
	}
	nulls := 0
	for _, r := range rows {
		if _, ok := r[0].(time.Time); !ok {
			nulls++
		}
		if s, ok := r[3].(string); ok && len(s) != 3 {
			t.Fatalf("origin %q", s)
		}
	}
	t.Logf("read 3,000,000 Polars rows in %v (%s) %d null dates; first %s", readTime, f.CreatedBy(), nulls, show(rows[0]))
	t0 = time.Now()
	data, st := writeToBytes(t, sch, rows)
	t.Logf("wrote them in %v: %d bytes (Polars: %d)", time.Since(t0), len(data), info.Size())
	js, _ := st.JSON()
	t.Logf("stats %s", js)
	back := readBytes(t, data, sch)
	for i := range rows {
		if !valuesEqual(back[i], rows[i]) {
			t.Fatalf("row %d: %s, want %s", i, show(back[i]), show(rows[i]))
		}
	}
}
