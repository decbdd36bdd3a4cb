package parquetio

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// fixFooter rewrites the end of a file parquet-go wrote (page index, footer,
// footer length, "PAR1"), which starts at offset tailOff of the file, so
// that no reader trusts min/max bounds of FIXED_LEN_BYTE_ARRAY decimal
// columns: parquet-go v0.32.0 orders them as unsigned bytes (parquet-go
// issue #592), so with mixed signs its column chunk statistics and column
// index are inverted and Spark would skip row groups and pages that match.
// For those column chunks the min/max statistics and the column index are
// removed; the null counts and the offset index stay. Other columns keep
// theirs, unless the file's first column is such a decimal: then no column
// keeps a column index (see below).
//
// The page index is written again without the dropped column indexes: the
// kept column indexes back to back in row group and column order, then all
// offset indexes the same way. Readers such as parquet-go's
// File.ReadPageIndex read the column indexes and the offset indexes as one
// contiguous block each, starting at the first column chunk's index, and
// slice it by each chunk's offset: a hole left by an unlinked index makes
// them read past the block (parquet-go panicked opening such a file when
// the wide decimal was neither the first nor the last column). And when the
// first column chunk has no column index, parquet-go reads none and gives
// every column chunk an empty one, so such files carry no column index.
func fixFooter(tail []byte, tailOff int64, flbaPaths [][]string) ([]byte, error) {
	if len(flbaPaths) == 0 {
		return tail, nil
	}
	n := len(tail)
	if n < 8 || string(tail[n-4:]) != "PAR1" {
		return nil, fmt.Errorf("parquetio: unexpected end of parquet output (%d bytes)", n)
	}
	flen := int(binary.LittleEndian.Uint32(tail[n-8 : n-4]))
	if flen > n-8 {
		return nil, fmt.Errorf("parquetio: footer length %d beyond the %d bytes of the tail", flen, n)
	}
	start := n - 8 - flen
	var md format.FileMetaData
	if err := thrift.Unmarshal(&thrift.CompactProtocol{}, tail[start:n-8], &md); err != nil {
		return nil, fmt.Errorf("parquetio: decode own footer: %w", err)
	}
	// The page index parquet-go wrote is [idxOff, tailOff+start) of the
	// file; the bytes of the tail before it (row group data parquet-go had
	// not written out yet) stay as they are.
	idxOff := tailOff + int64(start)
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			for _, off := range []int64{cc.ColumnIndexOffset, cc.OffsetIndexOffset} {
				if off != 0 && off < idxOff {
					idxOff = off
				}
			}
		}
	}
	if idxOff < tailOff {
		return nil, fmt.Errorf("parquetio: own page index at %d before the footer output at %d", idxOff, tailOff)
	}
	out := make([]byte, 0, n)
	out = append(out, tail[:idxOff-tailOff]...)
	index := tail[idxOff-tailOff : start]
	// move appends the bytes of the index at [*off, *off+length) of the
	// file to out and sets *off to where they now are.
	move := func(what string, off *int64, length int32) error {
		rel := *off - idxOff
		if rel < 0 || length < 0 || rel > int64(len(index)) || int64(length) > int64(len(index))-rel {
			return fmt.Errorf("parquetio: own %s at [%d,+%d) outside the page index at [%d,+%d)", what, *off, length, idxOff, len(index))
		}
		*off = tailOff + int64(len(out))
		out = append(out, index[rel:rel+int64(length)]...)
		return nil
	}
	isFLBA := func(cc *format.ColumnChunk) bool {
		path := []string(cc.MetaData.PathInSchema)
		return slices.ContainsFunc(flbaPaths, func(p []string) bool { return slices.Equal(p, path) })
	}
	// parquet-go locates the column index block at the first column chunk's
	// column index; without one it reads no column index at all and hands
	// out empty ones. Then the file keeps no column index.
	dropAll := len(md.RowGroups) > 0 && len(md.RowGroups[0].Columns) > 0 && isFLBA(&md.RowGroups[0].Columns[0])
	for i := range md.RowGroups {
		for j := range md.RowGroups[i].Columns {
			cc := &md.RowGroups[i].Columns[j]
			flba := isFLBA(cc)
			if flba {
				st := &cc.MetaData.Statistics
				st.Min, st.Max, st.MinValue, st.MaxValue = nil, nil, nil, nil
			}
			if flba || dropAll || cc.ColumnIndexOffset == 0 {
				cc.ColumnIndexOffset, cc.ColumnIndexLength = 0, 0
				continue
			}
			if err := move("column index", &cc.ColumnIndexOffset, cc.ColumnIndexLength); err != nil {
				return nil, err
			}
		}
	}
	for i := range md.RowGroups {
		for j := range md.RowGroups[i].Columns {
			cc := &md.RowGroups[i].Columns[j]
			if cc.OffsetIndexOffset == 0 {
				continue
			}
			if err := move("offset index", &cc.OffsetIndexOffset, cc.OffsetIndexLength); err != nil {
				return nil, err
			}
		}
	}
	footer, err := thrift.Marshal(&thrift.CompactProtocol{}, &md)
	if err != nil {
		return nil, fmt.Errorf("parquetio: encode footer: %w", err)
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...), nil
}
