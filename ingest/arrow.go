package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/schema"
)

// arrowReadBatch is the rows per record batch of the columnar read.
const arrowReadBatch = 64 << 10

// ArrowSchema returns the Arrow schema of ArrowBatches
// (arrowio.Schema(Schema())), and ok false when the source cannot be read
// column-wise with the same values as Rows: it is not Parquet, a column is
// not a top-level primitive or decimal, or a file's column decodes (with
// arrow-go's pqarrow, ignoring any ARROW:schema the writer stored) to
// another Arrow type than its Delta type's (unsigned integers, INT96 and
// millisecond or nanosecond timestamps, fixed-length binary, ...), or a
// file's pages carry CRC checksums (the row read verifies them, pqarrow
// does not: a corrupt page would be an error on one path only). Such a
// source is read with Rows. An unreadable footer also gives ok false
// (Rows reports it). The files are looked at once per Source.
func (s *Source) ArrowSchema() (*arrow.Schema, bool) {
	s.arrowOnce.Do(func() { s.arrowSch = s.arrowSchema() })
	return s.arrowSch, s.arrowSch != nil
}

// arrowSchema is ArrowSchema's answer (nil: not column-wise).
func (s *Source) arrowSchema() *arrow.Schema {
	if s.format != Parquet || s.schema == nil {
		return nil
	}
	for _, f := range s.schema.Fields {
		switch f.Type.(type) {
		case *schema.PrimitiveType, *schema.DecimalType:
		default:
			return nil
		}
	}
	want, err := arrowio.Schema(s.schema)
	if err != nil {
		return nil
	}
	for _, path := range s.files {
		if checksummed(path) {
			return nil
		}
		rdr, err := file.OpenParquetFile(path, false)
		if err != nil {
			return nil
		}
		got, err := pqarrow.FromParquet(rdr.MetaData().Schema, &pqarrow.ArrowReadProperties{}, nil)
		rdr.Close()
		if err != nil || len(got.Fields()) != len(want.Fields()) {
			return nil
		}
		for i, g := range got.Fields() {
			w := want.Field(i)
			if g.Name != w.Name || g.Nullable != w.Nullable || !arrow.TypeEqual(g.Type, w.Type) {
				return nil
			}
		}
	}
	return want
}

// ArrowBatches yields the rows of every file in order after skipping the
// first skip rows and up to limit rows in all (skipped ones included; 0:
// no limit), as groups of n rows (the last one shorter): each group is a
// slice of record batches of ArrowSchema's schema whose rows add up to n,
// valid only until yield returns (they are released then; Retain what must
// outlive it). The values are those Rows yields. Call it only when
// ArrowSchema's ok is true. Errors name the file.
func (s *Source) ArrowBatches(ctx context.Context, skip, limit int64, n int) iter.Seq2[[]arrow.RecordBatch, error] {
	return func(yield func([]arrow.RecordBatch, error) bool) {
		sch, ok := s.ArrowSchema()
		if !ok {
			yield(nil, fmt.Errorf("%w: %s cannot be read column-wise", ErrUnsupported, s.names[0]))
			return
		}
		left := int64(-1)
		if limit > 0 {
			if skip >= limit {
				return
			}
			left = limit - skip
		}
		var group []arrow.RecordBatch
		rows := 0
		release := func() {
			for _, r := range group {
				r.Release()
			}
			group, rows = group[:0], 0
		}
		defer release()
		for i, path := range s.files {
			if left == 0 {
				break
			}
			if s.rows[i] >= 0 && skip >= s.rows[i] {
				skip -= s.rows[i]
				continue
			}
			for rec, err := range arrowFile(ctx, path, sch, skip) {
				if err != nil {
					if ctx.Err() == nil {
						err = s.rowError(ctx, path, skip, err)
					}
					yield(nil, s.rename(err))
					return
				}
				for off := int64(0); off < rec.NumRows() && left != 0; {
					m := min(rec.NumRows()-off, int64(n-rows))
					if left > 0 {
						m = min(m, left)
						left -= m
					}
					group = append(group, rec.NewSlice(off, off+m))
					rows += int(m)
					off += m
					if rows == n {
						if !yield(group, nil) {
							return
						}
						release()
					}
				}
				if left == 0 {
					break
				}
			}
			skip = 0
		}
		if rows > 0 {
			yield(group, nil)
		}
	}
}

// arrowFile yields the record batches of the Parquet file at path after
// its first skip rows, with schema sch (the batches are released after
// yield returns).
func arrowFile(ctx context.Context, path string, sch *arrow.Schema, skip int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		rdr, err := file.OpenParquetFile(path, false)
		if err != nil {
			yield(nil, fmt.Errorf("%s: %w", path, err))
			return
		}
		defer rdr.Close()
		props := pqarrow.ArrowReadProperties{BatchSize: arrowReadBatch, Parallel: true}
		fr, err := pqarrow.NewFileReader(rdr, props, memory.DefaultAllocator)
		if err == nil {
			// The Parquet types, not a stored ARROW:schema's (large_utf8, ...).
			fr.Manifest, err = pqarrow.NewSchemaManifest(rdr.MetaData().Schema, nil, &props)
		}
		// The first skip rows are skipped by whole row groups, then by
		// reading the rest of them and dropping them: pqarrow's SeekToRow
		// fails on column chunks whose dictionary page is not listed in
		// the metadata (no dictionary_page_offset, as Polars writes them:
		// "dictionary page must be before data page"), and the rows to drop
		// are fewer than one row group.
		groups, drop := rowGroupsAfter(rdr.MetaData(), skip)
		if err == nil && len(groups) == 0 {
			return // the file has no rows after skip
		}
		var rr pqarrow.RecordReader
		if err == nil {
			rr, err = fr.GetRecordReader(ctx, nil, groups)
		}
		if err != nil {
			if rr != nil {
				rr.Release()
			}
			yield(nil, fmt.Errorf("%s: %w", path, err))
			return
		}
		defer rr.Release()
		for rr.Next() {
			if err := ctx.Err(); err != nil {
				yield(nil, context.Cause(ctx))
				return
			}
			rec := rr.RecordBatch()
			if n := rec.NumRows(); drop >= n {
				drop -= n
				continue
			} else if drop > 0 {
				rec = rec.NewSlice(drop, n)
				drop = 0
			} else {
				rec.Retain()
			}
			if !rec.Schema().Equal(sch) {
				re := array.NewRecordBatch(sch, rec.Columns(), rec.NumRows())
				rec.Release()
				rec = re
			}
			ok := yield(rec, nil)
			rec.Release()
			if !ok {
				return
			}
		}
		if err := rr.Err(); err != nil {
			yield(nil, fmt.Errorf("%s: %w", path, err))
		}
	}
}

// rowGroupsAfter returns the row groups of md holding its rows after the
// first skip ones, and how many rows at the start of the first of them are
// among those skip rows (nil groups when the file has no rows after skip).
func rowGroupsAfter(md *metadata.FileMetaData, skip int64) (groups []int, drop int64) {
	before := int64(0)
	for g := range md.NumRowGroups() {
		n := md.RowGroup(g).NumRows()
		if groups == nil && before+n <= skip {
			before += n
			continue
		}
		groups = append(groups, g)
	}
	return groups, skip - before
}

// rowError returns the error the row read of the file at path (after skip
// rows) reports for a file the columnar read failed on with err, so that
// a corrupt file is reported as Rows reports it (naming the row group and
// column); err when the row read finds none.
func (s *Source) rowError(ctx context.Context, path string, skip int64, err error) error {
	for _, rerr := range s.parquetRows(ctx, path, skip) {
		if rerr != nil {
			return rerr
		}
	}
	return err
}

// checksummed reports whether the first page of some column chunk of the
// Parquet file at path has a CRC (or cannot be read: true, the row read
// reports it).
func checksummed(path string) bool {
	md, err := readFooter(path)
	if err != nil {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			off := cc.MetaData.DataPageOffset
			if cc.MetaData.DictionaryPageOffset > 0 && cc.MetaData.DictionaryPageOffset < off {
				off = cc.MetaData.DictionaryPageOffset
			}
			n, err := f.ReadAt(buf, off)
			if err != nil && !errors.Is(err, io.EOF) {
				return true
			}
			var h format.PageHeader
			dec := thrift.NewDecoder((&thrift.CompactProtocol{}).NewReader(bytes.NewReader(buf[:n])))
			if err := dec.Decode(&h); err != nil || h.CRC != 0 {
				return true
			}
		}
	}
	return false
}
