package parquetio

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Limits on what one page may claim. parquet-go allocates a page's
// compressed and uncompressed sizes before it can tell that they are wrong,
// so a damaged header could otherwise ask for gigabytes. Real pages are
// about 1 MiB (parquet-mr, pyarrow and delta-rs defaults).
const (
	maxPageBytes  = 256 << 20
	maxPageValues = 1 << 28
)

// checkChunkPages walks the page headers of the column chunk at
// [off, off+length) and rejects a page whose sizes do not fit the chunk or
// the limits above.
func checkChunkPages(ra io.ReaderAt, off, length int64) error {
	var buf []byte
	window := int64(8 << 10)
	for pos := int64(0); pos < length; {
		n := min(window, length-pos)
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if m, err := ra.ReadAt(buf, off+pos); int64(m) < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%w: reading page header at %d: %v", ErrCorrupt, off+pos, err)
		}
		var h format.PageHeader
		pr := (&thrift.CompactProtocol{}).NewReaderFromBytes(buf)
		if err := thrift.NewDecoder(pr).Decode(&h); err != nil {
			if n < length-pos && window < 16<<20 {
				window *= 4 // a header with large statistics
				continue
			}
			return fmt.Errorf("%w: page header at %d: %v", ErrCorrupt, off+pos, err)
		}
		hl := int64(pr.BytesRead())
		if h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > length-pos-hl {
			return fmt.Errorf("%w: page at %d claims %d compressed bytes, the chunk has %d left", ErrCorrupt, off+pos, h.CompressedPageSize, length-pos-hl)
		}
		if h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes {
			return fmt.Errorf("%w: page at %d claims %d uncompressed bytes (limit %d)", ErrCorrupt, off+pos, h.UncompressedPageSize, maxPageBytes)
		}
		var values int32
		switch {
		case h.DataPageHeader.Valid:
			values = h.DataPageHeader.V.NumValues
		case h.DataPageHeaderV2.Valid:
			values = h.DataPageHeaderV2.V.NumValues
		case h.DictionaryPageHeader.Valid:
			values = h.DictionaryPageHeader.V.NumValues
		}
		if values < 0 || values > maxPageValues {
			return fmt.Errorf("%w: page at %d claims %d values", ErrCorrupt, off+pos, values)
		}
		pos += hl + int64(h.CompressedPageSize)
		window = 8 << 10
	}
	return nil
}
