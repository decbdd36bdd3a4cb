package table

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
)

// TestDamagedFooterRowCounts: a data file whose footer claims more rows in
// a row group than its pages hold is an ErrCorrupt error for every scan,
// with allocations bounded by the file, not by the claim (issue 31 item 1:
// every count from a footer is bounded by what is there). The Arrow scan
// cut a claim of 2^62 rows into 2^42 stripes and ran out of memory.
func TestDamagedFooterRowCounts(t *testing.T) {
	ctx := context.Background()
	for _, claim := range []int64{1 << 62, 1 << 40, 1<<31 - 1, 1001} {
		tbl, mem := maintTable(t, false, nil)
		tbl = maintAppend(t, tbl, maintRowsFor(0, 1000, "ams"))
		key := maintLiveKeys(tbl)[0]
		data, err := mem.Get(ctx, key, objectstore.FullObject)
		if err != nil {
			t.Fatal(err)
		}
		n := len(data)
		flen := int(binary.LittleEndian.Uint32(data[n-8:]))
		var md format.FileMetaData
		if err := thrift.Unmarshal(&thrift.CompactProtocol{}, data[n-8-flen:n-8], &md); err != nil {
			t.Fatal(err)
		}
		md.RowGroups[0].NumRows = claim
		enc, err := thrift.Marshal(&thrift.CompactProtocol{}, &md)
		if err != nil {
			t.Fatal(err)
		}
		b := append(append([]byte{}, data[:n-8-flen]...), enc...)
		b = append(binary.LittleEndian.AppendUint32(b, uint32(len(enc))), "PAR1"...)
		if err := mem.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
		scans := map[string]func() error{
			"ScanArrow": func() error {
				rr, err := tbl.ScanArrow(ctx)
				defer rr.Release()
				for err == nil && rr.Next() {
				}
				if err == nil {
					err = rr.Err()
				}
				return err
			},
			"Scan": func() error {
				for _, err := range tbl.Scan(ctx) {
					if err != nil {
						return err
					}
				}
				return nil
			},
		}
		for name, scan := range scans {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := scan()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, parquetio.ErrCorrupt) {
				t.Errorf("%s of a footer claiming %d rows: %v, want ErrCorrupt", name, claim, err)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
				t.Errorf("%s of a footer claiming %d rows allocated %d MiB", name, claim, a>>20)
			}
		}
	}
}
