//lint:file-ignore SA1019 parquet.Writer is used on purpose, see newParquetWriter.

package parquetio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Compression names a Parquet page compression codec.
type Compression string

// Supported codecs. Spark and pyarrow read all of them; LZ4Raw needs
// Spark 3.4 or later.
const (
	Snappy       Compression = "snappy"
	Zstd         Compression = "zstd"
	Gzip         Compression = "gzip"
	LZ4Raw       Compression = "lz4_raw"
	Uncompressed Compression = "uncompressed"
)

func (c Compression) codec() (compress.Codec, error) {
	switch c {
	case Snappy, "":
		return &parquet.Snappy, nil
	case Zstd:
		return &parquet.Zstd, nil
	case Gzip:
		return &parquet.Gzip, nil
	case LZ4Raw:
		return &parquet.Lz4Raw, nil
	case Uncompressed, "none":
		return &parquet.Uncompressed, nil
	}
	return nil, fmt.Errorf("parquetio: unknown compression %q", string(c))
}

// FileSuffix returns the codec's part of a data file name, as Spark names
// files: "snappy" for part-00000-<uuid>-c000.snappy.parquet, "" when
// uncompressed.
func (c Compression) FileSuffix() string {
	switch c {
	case "", Snappy:
		return "snappy"
	case Uncompressed, "none":
		return ""
	case LZ4Raw:
		return "lz4raw"
	}
	return string(c)
}

// WriteOption configures NewWriter and WriteFile.
type WriteOption func(*writeConfig)

type writeConfig struct {
	mappingMode    string
	compression    Compression
	rowGroupBytes  int64
	rowGroupRows   int64
	pageBytes      int
	dictionary     DictionaryMode
	numIndexedCols int
	statsColumns   []string
	statsColsSet   bool
	stringPrefix   int
	tightBounds    bool
	createdBy      string
	tempDir        string
	rowShred       bool // tests: shred every field value by value (no Columns, see shredBatch)
	// plainFields are the top-level fields (by physical name) that
	// Writer.open found too distinct for a dictionary.
	plainFields map[string]bool
}

func newWriteConfig(opts []WriteOption) writeConfig {
	c := writeConfig{
		mappingMode:    "none",
		compression:    Snappy,
		rowGroupBytes:  128 << 20,
		pageBytes:      1 << 20,
		dictionary:     DictionaryDefault,
		numIndexedCols: 32,
		stringPrefix:   32,
		tightBounds:    true,
		createdBy:      "deltakit",
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithWriteColumnMapping sets the table's column mapping mode ("none", "name"
// or "id"). Under "name" and "id" Parquet columns and stats keys use the
// fields' physical names; under "id" every struct field also gets its
// delta.columnMapping.id as Parquet field_id.
func WithWriteColumnMapping(mode string) WriteOption {
	return func(c *writeConfig) { c.mappingMode = mode }
}

// WithCompression sets the page compression codec (default Snappy).
func WithCompression(codec Compression) WriteOption {
	return func(c *writeConfig) { c.compression = codec }
}

// WithRowGroupSize starts a new row group once the current one holds about
// this many bytes of values (before encoding and compression). The default
// is 128 MiB, Spark's parquet.block.size. The whole row group is buffered in
// memory.
func WithRowGroupSize(bytes int64) WriteOption {
	return func(c *writeConfig) { c.rowGroupBytes = bytes }
}

// WithRowGroupRows starts a new row group after this many rows (0, the
// default, means no limit besides WithRowGroupSize).
func WithRowGroupRows(rows int64) WriteOption {
	return func(c *writeConfig) { c.rowGroupRows = rows }
}

// WithPageSize sets the target size of a data page in bytes (default 1 MiB,
// Spark's parquet.page.size).
func WithPageSize(bytes int) WriteOption {
	return func(c *writeConfig) { c.pageBytes = bytes }
}

// DictionaryMode says which leaf columns a Writer dictionary-encodes. A
// dictionary-encoded column chunk has one PLAIN dictionary page and
// RLE_DICTIONARY data pages, and falls back to PLAIN pages once its
// dictionary passes 1 MiB (as pyarrow's dictionary_pagesize_limit).
type DictionaryMode uint8

const (
	// DictionaryDefault dictionary-encodes every column except booleans,
	// timestamps and FIXED_LEN_BYTE_ARRAY decimals (precision > 18):
	// long, integer, short, byte, float, double, date, string, binary and
	// INT32/INT64 decimals. Booleans are PLAIN, one bit a value, as
	// pyarrow writes them. Timestamps are PLAIN because the dictionary
	// indexes of parquet-go v0.32's RLE encoder compress worse than PLAIN
	// with Snappy for the sorted, run-rich timestamps of event data (it
	// emits a run only for 8 equal indexes at a multiple of 8): the
	// flights' date column is 3.40 MB dictionary-encoded, 2.32 MB PLAIN,
	// pyarrow's 2.20 MB (BENCHMARKS.md, S1), and distinct timestamps fall
	// back to PLAIN anyway after 1 MiB of dictionary. A top-level number
	// column whose first 65,536 values (given to the first Write or
	// WriteColumns call, at least 8,192 of them) are more than 90%
	// distinct is written PLAIN for the whole file: its dictionary would
	// only fill up and fall back, at a cost in CPU and bytes.
	DictionaryDefault DictionaryMode = iota
	// DictionaryStrings dictionary-encodes string and binary columns only
	// (deltakit's default before issue 30; its numbers were PLAIN).
	DictionaryStrings
	// DictionaryOff writes every column PLAIN.
	DictionaryOff
)

// WithDictionary turns dictionary encoding on (DictionaryDefault, the
// default) or off (DictionaryOff).
func WithDictionary(on bool) WriteOption {
	if on {
		return WithDictionaryMode(DictionaryDefault)
	}
	return WithDictionaryMode(DictionaryOff)
}

// WithDictionaryMode sets which columns are dictionary-encoded (default
// DictionaryDefault).
func WithDictionaryMode(m DictionaryMode) WriteOption {
	return func(c *writeConfig) { c.dictionary = m }
}

// WithNumIndexedCols collects min/max/nullCount stats for the first n leaf
// columns of the schema, as the table property
// delta.dataSkippingNumIndexedCols does (default 32; -1 means all).
// Nested struct fields count one each; an array or map counts as one.
func WithNumIndexedCols(n int) WriteOption {
	return func(c *writeConfig) { c.numIndexedCols = n }
}

// WithStatsColumns collects stats for exactly these columns, as the table
// property delta.dataSkippingStatsColumns does, and overrides
// WithNumIndexedCols. Names are logical, dotted for nested fields, compared
// case-insensitively; backquotes quote names containing dots or commas. A
// struct name selects all its fields. Use ParseStatsColumns for the
// property's comma-separated text.
func WithStatsColumns(columns []string) WriteOption {
	return func(c *writeConfig) {
		c.statsColumns = append([]string(nil), columns...)
		c.statsColsSet = true
	}
}

// withStringPrefixLength sets how many characters of a string min/max the
// stats keep (default 32, as Spark's
// spark.databricks.delta.stats.skipping.stringPrefixLength). Only tests
// set it: the table always keeps 32.
func withStringPrefixLength(n int) WriteOption {
	return func(c *writeConfig) { c.stringPrefix = n }
}

// WithTightBounds sets whether the stats carry "tightBounds": true (the
// default). Spark writes the key only on tables that support deletion
// vectors; turning it off leaves the key out.
func WithTightBounds(on bool) WriteOption {
	return func(c *writeConfig) { c.tightBounds = on }
}

// WithTempDir sets the directory of the temporary files in which a
// Writer whose row groups may exceed 16 MiB keeps the encoded pages of
// the row group it is writing past its first 16 MiB (default "":
// os.TempDir()). The files are removed when their row group is written,
// and at Close or FileWriter.Abort.
func WithTempDir(dir string) WriteOption {
	return func(c *writeConfig) { c.tempDir = dir }
}

// WithCreatedBy sets the application named in the footer's created_by
// ("<app> version <v>").
func WithCreatedBy(app string) WriteOption {
	return func(c *writeConfig) { c.createdBy = app }
}

// Writer writes rows of one Delta schema to one Parquet file and computes the
// file's Delta stats on the way. It is not safe for concurrent use.
//
// After any error from Write the Writer is broken: later calls return the
// same error and the output must be discarded.
type Writer struct {
	cfg  writeConfig
	sch  *schema.StructType
	sel  *statsSelection
	plan *writePlan
	// pcfg is parquet-go's configuration of plan; pw, nil until the first
	// values or Close, is created from it once the encodings are chosen
	// (see Writer.open).
	pcfg *parquet.WriterConfig
	pw   *parquet.Writer
	out  *tailWriter
	// pages holds the page buffers of large row groups (pagespill.go);
	// nil: parquet-go's heap pool.
	pages *spillPool
	cols  [][]parquet.Value
	// rowCols are the Columns Write shreds the top-level primitive fields
	// of its rows into (see shredBatch).
	rowCols []Column
	stats   *statsBuilder
	// dictCols are the dictionary-encoded columns and dictBytes the bytes
	// of values written to each since its page was last flushed here; see
	// dictFlushBytes.
	dictCols  []bool
	dictBytes []int64
	// batchBytes[c] is the bytes of the byte-array values of column c in
	// the batch being written, when writeColumn counted them (-1: count
	// them from the values).
	batchBytes []int64

	numRows int64
	size    int64 // bytes passed to the underlying io.Writer, counted at Close
	rgRows  int64
	rgBytes int64
	err     error
	closed  bool
	result  *Stats
}

// NewWriter returns a Writer of Parquet to w for rows of sch. The layout is
// Spark's: long INT64; integer INT32; short and byte INT32 annotated
// INT(16|8, signed); float FLOAT; double DOUBLE; boolean BOOLEAN; string
// BYTE_ARRAY STRING; binary BYTE_ARRAY; date INT32 DATE; timestamp INT64
// TIMESTAMP(MICROS, UTC-adjusted); timestamp_ntz INT64 TIMESTAMP(MICROS, not
// adjusted); decimal(p,s) INT32 (p <= 9), INT64 (p <= 18) or the smallest
// FIXED_LEN_BYTE_ARRAY for p, annotated DECIMAL(p,s); structs as groups;
// arrays as 3-level LIST (list/element); maps as MAP (key_value/key,value).
// Nullable fields are optional, others required. Pages are data page v1,
// RLE_DICTIONARY except for booleans, timestamps and FIXED_LEN_BYTE_ARRAY
// decimals, which are PLAIN (see DictionaryMode).
//
// sch must be the data schema: partition columns are not written to data
// files. NewWriter returns an error for a schema it cannot write (variant).
func NewWriter(w io.Writer, sch *schema.StructType, opts ...WriteOption) (wr *Writer, err error) {
	defer func() {
		if p := recover(); p != nil {
			wr, err = nil, fmt.Errorf("parquetio: new writer: %v\n%s", p, debug.Stack())
		}
	}()
	if sch == nil {
		return nil, errors.New("parquetio: nil schema")
	}
	cfg := newWriteConfig(opts)
	codec, err := cfg.compression.codec()
	if err != nil {
		return nil, err
	}
	if cfg.createdBy == "" {
		cfg.createdBy = "deltakit"
	}
	sel, err := selectStatsColumns(sch, cfg)
	if err != nil {
		return nil, err
	}
	plan, err := buildWritePlan(sch, cfg, sel)
	if err != nil {
		return nil, err
	}
	out := &tailWriter{w: bufio.NewWriterSize(w, 256<<10)}
	popts := []parquet.WriterOption{
		parquet.NewSchema("spark_schema", plan.root),
		parquet.Compression(codec),
		parquet.DataPageVersion(1),
		parquet.PageBufferSize(max(cfg.pageBytes, 4<<10)),
		parquet.WriteBufferSize(0), // tailWriter buffers; see fixFooter
		parquet.CreatedBy(cfg.createdBy, "0.1.0", ""),
		parquet.DictionaryMaxBytes(dictMaxBytes),
	}
	for _, p := range plan.flbaDecimalPaths {
		popts = append(popts, parquet.SkipPageStatistics(p...))
	}
	var pages *spillPool
	if cfg.rowGroupBytes > pageHeapBudget { // see pagespill.go
		pages = newSpillPool(cfg.tempDir)
		popts = append(popts, parquet.ColumnPageBuffers(pages))
	}
	pcfg, err := parquet.NewWriterConfig(popts...)
	if err != nil {
		return nil, fmt.Errorf("parquetio: new writer: %w", err)
	}
	wr = &Writer{
		cfg:   cfg,
		sch:   sch,
		sel:   sel,
		plan:  plan,
		pcfg:  pcfg,
		out:   out,
		pages: pages,
		cols:  make([][]parquet.Value, plan.numCols),
		stats: plan.stats,
	}
	wr.dictCols = dictionaryColumns(plan.root, plan.numCols)
	wr.dictBytes = make([]int64, plan.numCols)
	wr.batchBytes = make([]int64, plan.numCols)
	for c := range wr.batchBytes {
		wr.batchBytes[c] = -1
	}
	return wr, nil
}

// dictMaxBytes is the size of a column chunk's dictionary after which its
// later pages are PLAIN (parquet-go's DictionaryMaxBytes).
const dictMaxBytes = 1 << 20

// dictFlushBytes bounds the bytes of values a dictionary-encoded column
// takes between page flushes. parquet-go cuts such a column's pages by the
// size of their dictionary indexes (4 bytes a value) and checks the
// dictionary's size only when it cuts one, so a column of distinct values
// (ids, payloads) would grow its dictionary to hundreds of MiB before the
// first page (and copy it again into the dictionary page): 1,000-byte
// values fill a 1 MiB page of indexes after 262,144 values, 250 MiB. A page
// flushed after at most this many bytes of values keeps the dictionary
// within dictMaxBytes+dictFlushBytes before it falls back to PLAIN.
const dictFlushBytes = 2 << 20

// dictionaryColumns reports which leaf columns of root (in column order)
// are dictionary encoded.
func dictionaryColumns(root parquet.Node, n int) []bool {
	out := make([]bool, 0, n)
	var walk func(parquet.Node)
	walk = func(node parquet.Node) {
		if node.Leaf() {
			enc := node.Encoding()
			out = append(out, enc != nil && enc.Encoding() == format.RLEDictionary)
			return
		}
		for _, f := range node.Fields() {
			walk(f)
		}
	}
	walk(root)
	if len(out) != n {
		return make([]bool, n) // unexpected shape: no extra flushes
	}
	return out
}

// writeBatch is the number of rows shredded before their values go to the
// column writers: whole rows per call keep pages on row boundaries.
const writeBatch = 256

// Write appends rows to the file. Each row must have one value per schema
// field, of the Go types the package documentation lists; nil for null
// (an error in a non-nullable field). Errors wrap ErrInvalidValue and name
// the row (0-based, counted over all Write calls) and the field.
func (w *Writer) Write(rows []value.Row) (err error) {
	if err := w.begin(); err != nil {
		return err
	}
	defer w.recoverInto(&err, "write")
	defer w.dropValues()
	if w.pw == nil {
		if err := w.open(w.rowSampler(rows)); err != nil {
			return err
		}
	}
	if w.rowCols == nil {
		w.rowCols = make([]Column, len(w.plan.fields))
	}
	for len(rows) > 0 {
		n := min(len(rows), writeBatch)
		chunk := rows[:n]
		rows = rows[n:]
		for c := range w.cols {
			w.cols[c] = w.cols[c][:0]
		}
		size, bad, err := w.plan.shredBatch(chunk, w.rowCols, w.cols, w.batchBytes)
		if err != nil {
			return fmt.Errorf("row %d: %w", w.numRows+int64(bad), err)
		}
		if err := w.writeValues(n, size); err != nil {
			return err
		}
	}
	for j := range w.rowCols {
		clear(w.rowCols[j].String) // drop references to the caller's strings
	}
	return nil
}

// dropValues clears the value slices of every column, once a Write or
// WriteColumns call has handed its batches over: they point into the
// caller's byte slices and strings. (Each batch overwrites every slot it
// uses, so the batches in between need no clearing.)
func (w *Writer) dropValues() {
	for c := range w.cols {
		clear(w.cols[c][:cap(w.cols[c])])
	}
}

// begin returns the error a Write or WriteColumns call must return
// before writing anything: the Writer's earlier error, or write after
// Close.
func (w *Writer) begin() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("parquetio: write after close")
	}
	return nil
}

// recoverInto, deferred by a writing method, turns a panic into *err and
// keeps *err as the Writer's error: after an error the Writer is broken.
func (w *Writer) recoverInto(err *error, op string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("parquetio: %s: %v\n%s", op, p, debug.Stack())
	}
	if *err != nil {
		w.err = *err
	}
}

// writeValues is the one place values reach parquet-go: it hands w.cols,
// the leveled values of n whole rows (about size bytes), to the column
// writers, cuts the pages of dictionary-encoded columns (see
// dictFlushBytes) and the row group (WithRowGroupSize, WithRowGroupRows).
func (w *Writer) writeValues(n int, size int64) error {
	cws := w.pw.ColumnWriters()
	for c, vals := range w.cols {
		if len(vals) == 0 {
			continue
		}
		if _, err := cws[c].WriteRowValues(vals); err != nil {
			return fmt.Errorf("parquetio: write column %d: %w", c, err)
		}
		if w.dictCols[c] {
			if b := w.batchBytes[c]; b >= 0 {
				w.dictBytes[c] += b
			} else {
				for _, v := range vals {
					if v.Kind() == parquet.ByteArray {
						w.dictBytes[c] += int64(len(v.ByteArray()))
					}
				}
			}
			if w.dictBytes[c] >= dictFlushBytes {
				// Cut the page so that parquet-go checks the dictionary's
				// size (see dictFlushBytes).
				if err := cws[c].Flush(); err != nil {
					return fmt.Errorf("parquetio: write column %d: %w", c, err)
				}
				w.dictBytes[c] = 0
			}
		}
		w.batchBytes[c] = -1
	}
	w.numRows += int64(n)
	w.rgRows += int64(n)
	w.rgBytes += size
	if w.rgBytes >= w.cfg.rowGroupBytes || (w.cfg.rowGroupRows > 0 && w.rgRows >= w.cfg.rowGroupRows) {
		if err := w.pw.Flush(); err != nil {
			return fmt.Errorf("parquetio: flush row group: %w", err)
		}
		w.rgRows, w.rgBytes = 0, 0
		clear(w.dictBytes)
	}
	return nil
}

// rowsWritten returns the number of rows written so far.
func (w *Writer) rowsWritten() int64 { return w.numRows }

// fileSize returns the number of bytes of the file produced so far, of which
// up to 256 KiB may still be buffered on their way to the underlying
// io.Writer; after a successful Close, the size of the whole file. Rows of
// the current row group count once the group is flushed.
func (w *Writer) fileSize() int64 { return max(w.size, w.out.n) }

// Close writes the last row group and the footer and returns the file's
// Delta stats. It does not close the underlying io.Writer. Calling Close
// again returns the same result. Close also after an error: it removes
// the Writer's temporary files (WithTempDir).
func (w *Writer) Close() (st *Stats, err error) {
	if w.closed {
		return w.result, w.err
	}
	defer w.releasePages()
	if w.err != nil {
		return nil, w.err
	}
	w.closed = true
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parquetio: close: %v\n%s", p, debug.Stack())
		}
		if err != nil {
			w.err = err
		}
	}()
	if w.pw == nil {
		if err := w.open(nil); err != nil {
			return nil, err
		}
	}
	if err := w.pw.Flush(); err != nil {
		return nil, fmt.Errorf("parquetio: flush row group: %w", err)
	}
	// Everything parquet-go writes from here on is the page index and the
	// footer, which fixFooter may rewrite.
	w.out.capture = true
	if err := w.pw.Close(); err != nil {
		return nil, fmt.Errorf("parquetio: close: %w", err)
	}
	tail, err := fixFooter(w.out.tail.Bytes(), w.out.n, w.plan.flbaDecimalPaths)
	if err != nil {
		return nil, err
	}
	if _, err := w.out.w.Write(tail); err != nil {
		return nil, err
	}
	if err := w.out.w.Flush(); err != nil {
		return nil, err
	}
	w.size = w.out.n + int64(len(tail))
	w.result = w.stats.finish(w.numRows, w.cfg.tightBounds)
	return w.result, nil
}

// releasePages closes and removes the temporary files of page buffers
// parquet-go still holds (after an error, or an abort).
func (w *Writer) releasePages() {
	if w.pages != nil {
		w.pages.release()
	}
}

// tailWriter passes bytes on until capture is set, then keeps them; n
// counts the bytes passed on, so the kept tail starts at offset n.
type tailWriter struct {
	w       *bufio.Writer
	n       int64
	capture bool
	tail    bytes.Buffer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if t.capture {
		return t.tail.Write(p)
	}
	m, err := t.w.Write(p)
	t.n += int64(m)
	return m, err
}

// WrittenFile describes a data file written by WriteFile or FileWriter.
type WrittenFile struct {
	Key   string // the store key written
	Size  int64  // bytes
	Rows  int64  // number of rows
	Stats *Stats // the Delta stats of the file
}

// WriteFile writes rows as one Parquet file and stores it under key,
// streamed to the store as CreateFile does. When it fails nothing is
// stored (except after a lost reply of the store's last call, whose
// outcome is open).
func WriteFile(ctx context.Context, store objectstore.Store, key string, sch *schema.StructType, rows []value.Row, opts ...WriteOption) (*WrittenFile, error) {
	fw, err := CreateFile(ctx, store, key, sch, opts...)
	if err != nil {
		return nil, err
	}
	defer fw.Abort()
	if err := fw.Write(rows); err != nil {
		return nil, err
	}
	return fw.Close(ctx)
}

// FileWriter writes one Parquet file to a store as a stream
// (objectstore.StartUpload: S3 multipart parts, a local temporary file),
// so that a file larger than memory can be written one batch of rows at a
// time; the file's Delta stats are computed on the way, as Writer does.
// The file appears under its key only when Close succeeds. Not safe for
// concurrent use.
type FileWriter struct {
	key string
	up  objectstore.Upload
	w   *Writer
	ctx context.Context
}

// CreateFile starts writing the Parquet file key to store for rows of sch
// (NewWriter's layout and options). ctx governs the whole upload: when it
// is cancelled before Close, the file is not stored. Errors are
// *FileError naming key.
func CreateFile(ctx context.Context, store objectstore.Store, key string, sch *schema.StructType, opts ...WriteOption) (*FileWriter, error) {
	up, err := objectstore.StartUpload(ctx, store, key)
	if err != nil {
		return nil, fileErr("write", key, err)
	}
	w, err := NewWriter(up, sch, opts...)
	if err != nil {
		_ = up.Abort(ctx)
		return nil, fileErr("write", key, err)
	}
	return &FileWriter{key: key, up: up, w: w, ctx: ctx}, nil
}

// Writer returns the Parquet writer of the file, for a caller that hands
// it to code written against *Writer. Do not Close it: Close the
// FileWriter.
func (f *FileWriter) Writer() *Writer { return f.w }

// Write appends rows, as Writer.Write does. After an error the file is
// broken: call Abort.
func (f *FileWriter) Write(rows []value.Row) error {
	if err := f.w.Write(rows); err != nil {
		return fileErr("write", f.key, err)
	}
	return nil
}

// Close writes the footer, stores the file under its key and describes
// it. When it fails, nothing is stored (but after a lost reply of the
// store) and the upload is aborted.
func (f *FileWriter) Close(ctx context.Context) (*WrittenFile, error) {
	st, err := f.w.Close()
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = f.up.Commit(ctx)
	}
	if err != nil {
		_ = f.up.Abort(context.WithoutCancel(ctx))
		return nil, fileErr("write", f.key, err)
	}
	return &WrittenFile{Key: f.key, Size: f.w.fileSize(), Rows: f.w.rowsWritten(), Stats: st}, nil
}

// Abort discards the file: nothing is stored under its key. Abort after
// Close does nothing, so `defer fw.Abort()` cleans up on every error path.
func (f *FileWriter) Abort() {
	f.w.releasePages()
	_ = f.up.Abort(context.WithoutCancel(f.ctx))
}

// groupNode is a Parquet group whose fields keep the order they are given
// in (parquet.Group sorts fields by name).
type groupNode struct{ fields []parquet.Field }

type namedField struct {
	parquet.Node
	name string
}

func (f *namedField) Name() string                      { return f.name }
func (f *namedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

func (g *groupNode) ID() int { return 0 }
func (g *groupNode) String() string {
	var b strings.Builder
	_ = parquet.PrintSchema(&b, "", g)
	return b.String()
}
func (g *groupNode) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g *groupNode) Optional() bool              { return false }
func (g *groupNode) Repeated() bool              { return false }
func (g *groupNode) Required() bool              { return true }
func (g *groupNode) Leaf() bool                  { return false }
func (g *groupNode) Fields() []parquet.Field     { return g.fields }
func (g *groupNode) Encoding() encoding.Encoding { return nil }
func (g *groupNode) Compression() compress.Codec { return nil }
func (g *groupNode) GoType() reflect.Type        { return reflect.TypeFor[any]() }

// newParquetWriter returns parquet-go's untyped Writer. GenericWriter[any],
// which supersedes it, builds reflection-based write functions from the
// schema that this package never uses (it writes column values directly)
// and that panic on some valid layouts.
func newParquetWriter(w io.Writer, cfg *parquet.WriterConfig) *parquet.Writer {
	return parquet.NewWriter(w, cfg)
}
