package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/deltakit/deltakit/table"
)

// writeArrow writes the scan as one Arrow IPC stream (schema message, then
// one message per record batch, then the end-of-stream marker) to w.
func writeArrow(ctx context.Context, w io.Writer, t *table.Table, opts []table.ScanOption) error {
	rr, err := table.ScanArrow(ctx, t, opts...)
	if err != nil {
		return err
	}
	defer rr.Release()
	bw := bufio.NewWriterSize(w, 1<<20)
	iw := ipc.NewWriter(bw, ipc.WithSchema(rr.Schema()))
	for rr.Next() {
		if err := iw.Write(rr.RecordBatch()); err != nil {
			iw.Close()
			return fmt.Errorf("cat: write Arrow stream: %w", err)
		}
	}
	if err := rr.Err(); err != nil {
		iw.Close()
		return err
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("cat: write Arrow stream: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cat: write Arrow stream: %w", err)
	}
	return nil
}
