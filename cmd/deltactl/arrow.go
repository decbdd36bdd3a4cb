package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/deltakit/deltakit/table"
)

// binaryOutput describes the binary output format name (-o or --format)
// of cat, or returns "" when name is not one.
func binaryOutput(name string) string {
	switch name {
	case "arrow":
		return "an Arrow IPC stream"
	case "parquet":
		return "a Parquet file"
	}
	return ""
}

// parquetRowGroupRows and parquetRowGroupBytes bound the row groups of
// `cat --format parquet`: a row group is closed at 1,048,576 rows or once
// its encoded pages reach 128 MiB, whichever comes first (the writer keeps
// one row group's pages in memory).
const (
	parquetRowGroupRows  = 1 << 20
	parquetRowGroupBytes = 128 << 20
)

// writeArrow writes the scan as one Arrow IPC stream (schema message, then
// one message per record batch, then the end-of-stream marker) to w.
func writeArrow(ctx context.Context, w io.Writer, t *table.Table, opts []table.ScanOption) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var iw *ipc.Writer
	err := scanBatches(ctx, t, opts, "Arrow stream", func(sch *arrow.Schema) error {
		iw = ipc.NewWriter(bw, ipc.WithSchema(sch))
		return nil
	}, func(rec arrow.RecordBatch) error { return iw.Write(rec) }, func() error { return iw.Close() })
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cat: write Arrow stream: %w", err)
	}
	return nil
}

// writeParquet writes the scan as one Parquet file to w, sequentially (w
// need not seek: the footer comes last): pqarrow's writer, Snappy pages,
// the Arrow schema stored in the footer (ARROW:schema) so that Arrow
// readers get back the scan's types, timestamps with their zone included.
func writeParquet(ctx context.Context, w io.Writer, t *table.Table, opts []table.ScanOption) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var fw *pqarrow.FileWriter
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows), parquet.WithCreatedBy("deltactl"))
	err := scanBatches(ctx, t, opts, "Parquet file", func(sch *arrow.Schema) (err error) {
		fw, err = pqarrow.NewFileWriter(sch, bw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		return err
	}, func(rec arrow.RecordBatch) error {
		if err := fw.WriteBuffered(rec); err != nil {
			return err
		}
		if fw.RowGroupTotalBytesWritten() >= parquetRowGroupBytes {
			fw.NewBufferedRowGroup()
		}
		return nil
	}, func() error { return fw.Close() })
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cat: write Parquet file: %w", err)
	}
	return nil
}

// scanBatches runs ScanArrow and hands its schema to open, each batch to
// write, then calls closeW; closeW is also called (its error dropped) when
// a batch or the scan fails after open succeeded. Errors of open, write
// and closeW are wrapped as "cat: write <what>: ..."; the scan's own
// errors are returned as they are.
func scanBatches(ctx context.Context, t *table.Table, opts []table.ScanOption, what string, open func(*arrow.Schema) error, write func(arrow.RecordBatch) error, closeW func() error) error {
	rr, err := t.ScanArrow(ctx, opts...)
	if err != nil {
		return err
	}
	defer rr.Release()
	if err := open(rr.Schema()); err != nil {
		return fmt.Errorf("cat: write %s: %w", what, err)
	}
	for rr.Next() {
		if err := write(rr.RecordBatch()); err != nil {
			closeW()
			return fmt.Errorf("cat: write %s: %w", what, err)
		}
	}
	if err := rr.Err(); err != nil {
		closeW()
		return err
	}
	if err := closeW(); err != nil {
		return fmt.Errorf("cat: write %s: %w", what, err)
	}
	return nil
}

// arrowRows yields the rows of ScanArrow's batches in the value model
// (table.RowsOfBatches), as the text formats of cat print them.
func arrowRows(ctx context.Context, t *table.Table, opts []table.ScanOption) iter.Seq2[table.Row, error] {
	return func(yield func(table.Row, error) bool) {
		rr, err := t.ScanArrow(ctx, opts...)
		if err != nil {
			yield(nil, err)
			return
		}
		defer rr.Release()
		for rr.Next() {
			rows, err := table.RowsOfBatches([]arrow.RecordBatch{rr.RecordBatch()})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range rows {
				if !yield(r, nil) {
					return
				}
			}
		}
		if err := rr.Err(); err != nil {
			yield(nil, err)
		}
	}
}
