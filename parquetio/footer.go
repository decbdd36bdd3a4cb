package parquetio

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// fixFooter rewrites the end of a file parquet-go wrote (page index, footer,
// footer length, "PAR1") so that no reader trusts min/max bounds of
// FIXED_LEN_BYTE_ARRAY decimal columns: parquet-go v0.32.0 orders them as
// unsigned bytes (parquet-go issue #592), so with mixed signs its column
// chunk statistics and column index are inverted and Spark would skip row
// groups and pages that match. For those column chunks the min/max
// statistics are removed and the column index is unlinked (its bytes stay
// in the file, unreferenced); the null counts and the offset index stay.
// Other columns are left as they are.
func fixFooter(tail []byte, flbaPaths [][]string) ([]byte, error) {
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
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		for j := range rg.Columns {
			cc := &rg.Columns[j]
			path := []string(cc.MetaData.PathInSchema)
			if !slices.ContainsFunc(flbaPaths, func(p []string) bool { return slices.Equal(p, path) }) {
				continue
			}
			st := &cc.MetaData.Statistics
			st.Min, st.Max, st.MinValue, st.MaxValue = nil, nil, nil, nil
			cc.ColumnIndexOffset, cc.ColumnIndexLength = 0, 0
		}
	}
	footer, err := thrift.Marshal(&thrift.CompactProtocol{}, &md)
	if err != nil {
		return nil, fmt.Errorf("parquetio: encode footer: %w", err)
	}
	out := make([]byte, 0, start+len(footer)+8)
	out = append(out, tail[:start]...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...), nil
}
