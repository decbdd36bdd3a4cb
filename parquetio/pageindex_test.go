//lint:file-ignore SA1019 format.PlainDictionary is named on purpose: v1 dictionary pages may carry it (parquet-mr writes it).

package parquetio

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// wideDecimalFiles returns schemas {id long, d decimal(30,2), s string} with
// the FIXED_LEN_BYTE_ARRAY decimal first, in the middle and last, and rows
// of mixed signs for them.
func wideDecimalFiles() (names []string, schemas []*schema.StructType, rows [][]value.Row) {
	id := field("id", prim(schema.Long), true)
	d := field("d", &schema.DecimalType{Precision: 30, Scale: 2}, true)
	s := field("s", prim(schema.String), true)
	vals := map[string][]any{
		"id": {int64(1), int64(-2), nil},
		"d":  {value.MustParseDecimal("-12345678901234567890.12"), value.MustParseDecimal("98765432109876543210.99"), nil},
		"s":  {"a", "bb", nil},
	}
	for _, order := range [][]*schema.StructField{{d, id, s}, {id, d, s}, {id, s, d}} {
		var parts []string
		for _, f := range order {
			parts = append(parts, f.Name)
		}
		names = append(names, strings.Join(parts, ","))
		schemas = append(schemas, schema.NewStruct(order...))
		var rs []value.Row
		for i := range 3 {
			var r value.Row
			for _, f := range order {
				r = append(r, vals[f.Name][i])
			}
			rs = append(rs, r)
		}
		rows = append(rows, rs)
	}
	return names, schemas, rows
}

// openWithPageIndex opens data with parquet-go's default options, which read
// the page index, turning a panic into an error.
func openWithPageIndex(data []byte) (pf *parquet.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parquet.OpenFile panicked: %v", p)
		}
	}()
	return parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
}

// TestWideDecimalPageIndex checks that files with a FIXED_LEN_BYTE_ARRAY
// decimal column (whose column index fixFooter drops) have a page index
// parquet-go opens: the kept column indexes and all offset indexes each one
// contiguous block, right before the footer; no column index at all when
// the decimal is the first column.
func TestWideDecimalPageIndex(t *testing.T) {
	names, schemas, rowSets := wideDecimalFiles()
	for k, sch := range schemas {
		for _, opts := range [][]WriteOption{nil, {WithRowGroupRows(1)}, {WithDictionary(false), WithPageSize(1)}} {
			name := fmt.Sprintf("%s/%d-options", names[k], len(opts))
			rows := rowSets[k]
			data, _ := writeToBytes(t, sch, rows, opts...)
			pf, err := openWithPageIndex(data)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			md := pf.Metadata()
			var colIdx, offIdx [][2]int64
			for g, rg := range pf.RowGroups() {
				for c, cc := range rg.ColumnChunks() {
					meta := md.RowGroups[g].Columns[c]
					wide := meta.MetaData.PathInSchema[0] == "d"
					if st := meta.MetaData.Statistics; wide && (st.Min != nil || st.Max != nil || st.MinValue != nil || st.MaxValue != nil) {
						t.Errorf("%s: row group %d: column d has footer min/max", name, g)
					}
					ci, err := cc.ColumnIndex()
					switch {
					case (wide || k == 0) && !errors.Is(err, parquet.ErrMissingColumnIndex):
						t.Errorf("%s: row group %d column %d has a column index (%v)", name, g, c, err)
					case wide || k == 0:
					case err != nil:
						t.Errorf("%s: row group %d column %d: %v", name, g, c, err)
					case ci.NumPages() == 0:
						t.Errorf("%s: row group %d column %d: empty column index", name, g, c)
					default:
						colIdx = append(colIdx, [2]int64{meta.ColumnIndexOffset, int64(meta.ColumnIndexLength)})
					}
					oi, err := cc.OffsetIndex()
					if err != nil || oi.NumPages() == 0 {
						t.Errorf("%s: row group %d column %d: offset index %v", name, g, c, err)
						continue
					}
					offIdx = append(offIdx, [2]int64{meta.OffsetIndexOffset, int64(meta.OffsetIndexLength)})
				}
			}
			// The blocks parquet-go's ReadPageIndex assumes.
			pos := int64(-1)
			for _, r := range slices.Concat(colIdx, offIdx) {
				if pos >= 0 && r[0] != pos {
					t.Errorf("%s: page index entry at %d, want %d (contiguous)", name, r[0], pos)
				}
				pos = r[0] + r[1]
			}
			footerLen := int64(len(data)) - 8 - int64(uint32(data[len(data)-8])|uint32(data[len(data)-7])<<8|uint32(data[len(data)-6])<<16|uint32(data[len(data)-5])<<24)
			if pos != footerLen {
				t.Errorf("%s: page index ends at %d, footer starts at %d", name, pos, footerLen)
			}
			if err := CheckPages(pf, bytes.NewReader(data)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			got := readBytes(t, data, sch)
			if len(got) != len(rows) {
				t.Fatalf("%s: %d rows back", name, len(got))
			}
			for i := range rows {
				checkRow(t, fmt.Sprintf("%s row %d", name, i), sch, got[i], rows[i])
			}
		}
	}
}

// TestWrittenPagesAreV1Plain inspects the footers and page headers of the
// files we write, for every Delta type including nested ones, and checks
// that they use data page v1 and only PLAIN, RLE and RLE_DICTIONARY
// encodings (PLAIN_DICTIONARY for dictionary pages, as parquet-mr's v1
// writer labels them). Spark failed to read some pages parquet-go wrote
// with its other encodings and with data page v2 (parquet-go issue #64).
func TestWrittenPagesAreV1Plain(t *testing.T) {
	allowed := []format.Encoding{format.Plain, format.RLE, format.RLEDictionary, format.PlainDictionary}
	okEnc := func(e format.Encoding) bool { return slices.Contains(allowed, e) }
	_, wideSchemas, wideRows := wideDecimalFiles()
	_, fl := flights(3000)
	cases := []struct {
		sch  *schema.StructType
		rows []value.Row
		opts []WriteOption
	}{
		{allTypesSchema(), allTypesRows(300), nil},
		{allTypesSchema(), allTypesRows(300), []WriteOption{WithDictionary(false)}},
		{allTypesSchema(), allTypesRows(300), []WriteOption{WithRowGroupRows(50), WithPageSize(64), WithCompression(Uncompressed)}},
		{allTypesSchema(), allTypesRows(100), []WriteOption{WithCompression(Zstd), withRowShred()}},
		{primitivesSchema(), primitivesRows(500), nil},
		{flightsSchema(), fl, []WriteOption{WithPageSize(1 << 10)}},
		{schema.NewStruct(field("s", prim(schema.String), true)), distinctStrings(120_000), nil}, // dictionary falls back to PLAIN
		{wideSchemas[1], wideRows[1], nil},
	}
	for k, c := range cases {
		data, _ := writeToBytes(t, c.sch, c.rows, c.opts...)
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipPageIndex(true))
		if err != nil {
			t.Fatalf("case %d: %v", k, err)
		}
		pages := 0
		for g, rg := range pf.Metadata().RowGroups {
			for _, cc := range rg.Columns {
				md := cc.MetaData
				where := fmt.Sprintf("case %d row group %d column %s", k, g, strings.Join(md.PathInSchema, "."))
				for _, e := range md.Encoding {
					if !okEnc(e) {
						t.Errorf("%s: footer lists encoding %s", where, e)
					}
				}
				for _, es := range md.EncodingStats {
					if es.PageType == format.DataPageV2 || !okEnc(es.Encoding) {
						t.Errorf("%s: footer encoding stats %s %s", where, es.PageType, es.Encoding)
					}
				}
				off := md.DataPageOffset
				if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
					off = md.DictionaryPageOffset
				}
				for pos := off; pos < off+md.TotalCompressedSize; {
					var h format.PageHeader
					r := (&thrift.CompactProtocol{}).NewReaderFromBytes(data[pos:])
					if err := thrift.NewDecoder(r).Decode(&h); err != nil {
						t.Fatalf("%s: page header at %d: %v", where, pos, err)
					}
					switch h.Type {
					case format.DataPage:
						dp := h.DataPageHeader.V
						if !h.DataPageHeader.Valid || !okEnc(dp.Encoding) || dp.Encoding == format.PlainDictionary ||
							dp.DefinitionLevelEncoding != format.RLE || dp.RepetitionLevelEncoding != format.RLE {
							t.Errorf("%s: data page at %d: %+v", where, pos, dp)
						}
					case format.DictionaryPage:
						dp := h.DictionaryPageHeader.V
						if !h.DictionaryPageHeader.Valid || (dp.Encoding != format.Plain && dp.Encoding != format.PlainDictionary) {
							t.Errorf("%s: dictionary page at %d: encoding %s", where, pos, dp.Encoding)
						}
					default:
						t.Errorf("%s: page at %d of type %s (want data page v1 or dictionary page)", where, pos, h.Type)
					}
					if h.DataPageHeaderV2.Valid {
						t.Errorf("%s: page at %d has a v2 header", where, pos)
					}
					pages++
					pos += int64(r.BytesRead()) + int64(h.CompressedPageSize)
				}
			}
		}
		if pages == 0 {
			t.Errorf("case %d: no pages", k)
		}
	}
}
