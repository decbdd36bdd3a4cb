package parquetio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
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
func checkChunkPages(ra io.ReaderAt, off, length int64, codec format.CompressionCodec) error {
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
		if err := checkDecodedSize(ra, codec, off+pos+hl, h); err != nil {
			return fmt.Errorf("%w: page at %d: %v", ErrCorrupt, off+pos, err)
		}
		pos += hl + int64(h.CompressedPageSize)
		window = 8 << 10
	}
	return nil
}

// checkDecodedSize rejects a compressed page whose data would make
// parquet-go's decoder allocate without bound: snappy data announcing more
// decoded bytes than the page header says (the decoder allocates what the
// varint prefix announces), and LZ4_RAW data that does not decode into the
// header's size (parquet-go doubles its buffer until decoding succeeds,
// forever on damaged data). LZ4_RAW pages are therefore decoded twice;
// deltakit and Spark write snappy.
func checkDecodedSize(ra io.ReaderAt, codec format.CompressionCodec, dataOff int64, h format.PageHeader) error {
	if h.CompressedPageSize == 0 || (codec != format.Snappy && codec != format.Lz4Raw) {
		return nil
	}
	levels := int64(0)
	if v2 := h.DataPageHeaderV2; v2.Valid {
		if v2.V.IsCompressed.Valid && !v2.V.IsCompressed.V {
			return nil
		}
		levels = int64(v2.V.DefinitionLevelsByteLength) + int64(v2.V.RepetitionLevelsByteLength)
	}
	want := int64(h.UncompressedPageSize) - levels
	if levels < 0 || levels > int64(h.CompressedPageSize) || want < 0 {
		return fmt.Errorf("level lengths %d do not fit the page", levels)
	}
	switch codec {
	case format.Snappy:
		var b [10]byte
		n, _ := ra.ReadAt(b[:min(int64(len(b)), int64(h.CompressedPageSize)-levels)], dataOff+levels)
		announced, k := binary.Uvarint(b[:n])
		if k <= 0 {
			return fmt.Errorf("bad snappy length prefix")
		}
		if announced > uint64(want) {
			return fmt.Errorf("snappy data announces %d decoded bytes, the page header %d", announced, want)
		}
	case format.Lz4Raw:
		src := make([]byte, int64(h.CompressedPageSize)-levels)
		if n, err := ra.ReadAt(src, dataOff+levels); n < len(src) {
			return fmt.Errorf("reading LZ4_RAW page: %v", err)
		}
		if _, err := lz4.UncompressBlock(src, make([]byte, want)); err != nil {
			return fmt.Errorf("LZ4_RAW data does not decode into the %d bytes the page header says: %v", want, err)
		}
	}
	return nil
}

// CheckPages validates the page headers of every column chunk of pf, whose
// bytes ra holds, against the chunk sizes and this package's page limits
// (256 MiB, 2^28 values), without decoding any page. Call it before handing
// an untrusted file to parquet-go's own readers: a damaged page header can
// otherwise make them allocate gigabytes. Returns an error wrapping
// ErrCorrupt that names the row group and column chunk.
func CheckPages(pf *parquet.File, ra io.ReaderAt) error {
	for g := range pf.Metadata().RowGroups {
		if err := CheckRowGroupPages(pf, g, ra); err != nil {
			return err
		}
	}
	return nil
}

// CheckRowGroupPages is CheckPages for row group g (0-based, in range)
// alone: ra need hold only that row group's column chunks, at their file
// offsets. A reader that fetches a file row group by row group checks each
// one before decoding it.
func CheckRowGroupPages(pf *parquet.File, g int, ra io.ReaderAt) error {
	size := pf.Size()
	rg := &pf.Metadata().RowGroups[g]
	for c := range rg.Columns {
		md := &rg.Columns[c].MetaData
		off := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
			off = md.DictionaryPageOffset
		}
		length := md.TotalCompressedSize
		if off < 0 || length < 0 || off > size || length > size-off {
			return fmt.Errorf("%w: column chunk %d of row group %d at [%d,+%d) outside the file of %d bytes", ErrCorrupt, c, g, off, length, size)
		}
		if err := checkChunkPages(ra, off, length, md.Codec); err != nil {
			return fmt.Errorf("row group %d column chunk %d: %w", g, c, err)
		}
	}
	return nil
}
