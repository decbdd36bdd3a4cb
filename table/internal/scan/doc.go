// Package scan plans a scan of one snapshot and reads the planned data
// files as rows or Apache Arrow record batches.
//
// NewPlan resolves the projection and binds the filter (package bind);
// Plan.SelectFiles keeps the live files whose partition values and
// statistics may match, locating each under the table root or an allowed
// root (Locator). The files are then read column by column where the
// columnar reader can (arrowscan.go: row-group and page-index skipping,
// late materialisation, deletion vectors applied as a selection, stripes
// decoded in parallel; arrowalloc.go pools its buffers) and by parquetio's
// row reader otherwise, into record batches (Reader) or rows. The scan
// entry points (table.Scan, table.ScanArrow, table.ScanAs, Files) and the
// DML and change-feed readers build their plans here; the API is
// batch-shaped: files, projection, bound predicate and deletion vectors in,
// record batches out.
package scan
