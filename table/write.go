package table

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// DefaultTargetFileSize is the data file size writes aim for when
// WithTargetFileSize is not given: 128 MiB, Spark's Parquet block size and
// the usual Delta target.
const DefaultTargetFileSize = 128 << 20

// maxRowGroupBytes caps the row groups of data files (bytes of values
// before encoding; parquetio.WithRowGroupSize), which the writer buffers
// whole (compressed) until the group is flushed. 64 MiB keeps a process
// streaming a file of any size under 256 MiB of RSS (deltabench R1: a
// 2 GiB file on MinIO); 128 MiB (Spark's parquet.block.size) took 426 MiB.
const maxRowGroupBytes = 64 << 20

// RowError reports an input row that cannot be written: Row is its 0-based
// index in the rows passed to the write, Err the cause, which names the
// column and wraps ErrInvalidArgument (NOT NULL violated, value out of
// range, wrong row length) or ErrSchemaMismatch (a Go type that does not fit
// the column type).
type RowError struct {
	Row int
	Err error
}

// Error returns "row N: cause".
func (e *RowError) Error() string { return fmt.Sprintf("row %d: %v", e.Row, e.Err) }

// Unwrap returns the cause.
func (e *RowError) Unwrap() error { return e.Err }

// WriteOption configures AppendRows, OverwriteRows, WriteFiles,
// AppendFiles, Append and Overwrite.
type WriteOption func(*writeConfig)

type writeConfig struct {
	targetFileSize int64
	evolve         bool
	params         map[string]string
	txnSet         bool
	txnAppID       string
	txnVersion     int64
	rowSchema      *schema.StructType
	compression    parquetio.Compression
	parquetOpts    []parquetio.WriteOption
	concurrency    int
	replace        *replaceWhere
	// txnTime is the txn actions' lastUpdated (zero: the table's clock).
	txnTime   time.Time
	extraTxns []Txn
	stream    *StreamingUpdate
	txnOpts   []txlog.TxnOption
	// gate, when set, holds the data files until it returns (WithUploadGate).
	gate func(context.Context) error
	// conflictRetries is WithConflictRetries' n (retry.go).
	conflictRetries int
}

func newWriteConfig(opts []WriteOption) writeConfig {
	c := writeConfig{
		targetFileSize: DefaultTargetFileSize,
		compression:    parquetio.Snappy,
		concurrency:    min(runtime.GOMAXPROCS(0), 8),
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.targetFileSize <= 0 {
		c.targetFileSize = DefaultTargetFileSize
	}
	c.concurrency = max(c.concurrency, 1)
	return c
}

// WithTargetFileSize sets the approximate size in bytes of the data files
// a write produces (default DefaultTargetFileSize). A partition's rows roll
// over into a new file once the current one is estimated to reach it; the
// estimate uses the compression ratio of the files already written by the
// same call, so the first file may come out smaller. Every file holds at
// least one row.
func WithTargetFileSize(bytes int64) WriteOption {
	return func(c *writeConfig) { c.targetFileSize = bytes }
}

// WithSchemaEvolution lets the write change the table schema (Spark's
// mergeSchema): columns of the input that the table lacks are added at the
// end (nested struct fields at the end of their struct), as nullable; a NOT
// NULL column (or array element, map value) becomes nullable when the input
// declares it nullable. The new metaData is committed in the same commit as
// the data. Type changes are never made: an input column whose type does
// not fit the table's is an error either way. A new timestamp_ntz column
// upgrades the protocol to (3,7) with the timestampNtz feature.
func WithSchemaEvolution() WriteOption { return func(c *writeConfig) { c.evolve = true } }

// WithOperationParameters adds commitInfo.operationParameters to the
// commit, over the defaults ("mode", "partitionBy", "predicate").
func WithOperationParameters(params map[string]string) WriteOption {
	return func(c *writeConfig) {
		if c.params == nil {
			c.params = map[string]string{}
		}
		maps.Copy(c.params, params)
	}
}

// WithTxn makes the commit an idempotent, application-versioned write (spec
// "Transaction Identifiers"): it records that the transaction read appID's
// txn version, and adds txn{appId, version, lastUpdated} to the commit. A
// concurrent commit that writes a txn for the same appID makes the commit
// fail with txlog.ErrConcurrentTransaction. When the table already holds a
// txn version >= version for appID, AppendRows, OverwriteRows, Append and
// Overwrite write nothing and return the table unchanged (the write is
// already in the table), as Spark's txnAppId/txnVersion writes do.
func WithTxn(appID string, version int64) WriteOption {
	return func(c *writeConfig) { c.txnSet, c.txnAppID, c.txnVersion = true, appID, version }
}

// WithTxnTime sets the lastUpdated of the commit's txn actions (WithTxn's
// and WithExtraTxns' without one) to t instead of the table's clock, as a
// streaming sink with its own clock records them.
func WithTxnTime(t time.Time) WriteOption {
	return func(c *writeConfig) { c.txnTime = t }
}

// Txn is a txn action (spec "Transaction Identifiers"): an application's
// progress, AppID at Version, recorded in the table with the commit that
// made it; LastUpdated is in milliseconds since the epoch.
type Txn = txlog.Txn

// WithExtraTxns adds more txn actions to the commit, next to WithTxn's,
// for a writer that keeps its own progress in the table with the data (the
// Kafka source records the next offset of every partition). Each appId is
// recorded as read: a concurrent commit that writes one of them makes this
// one fail with txlog.ErrConcurrentTransaction. A nil LastUpdated is set
// to the time of the commit's txn (see StreamingUpdate.Time). Unlike
// WithTxn they never make a write skip. Used by WriteFiles' commits
// (CommitFiles, AppendFiles); the appIds must differ from WithTxn's and
// from each other (the commit refuses a txn given twice).
func WithExtraTxns(txns ...Txn) WriteOption {
	return func(c *writeConfig) { c.extraTxns = append(c.extraTxns, txns...) }
}

// StreamingUpdateOperation is the commitInfo.operation of a streaming
// epoch, as Spark's Delta sink writes it.
const StreamingUpdateOperation = "STREAMING UPDATE"

// CreateTableAsSelectOperation is the commitInfo.operation of a new table
// created with its data in one commit (Draft.Commit of a NewDraft), as
// Spark's CREATE TABLE AS SELECT writes it.
const CreateTableAsSelectOperation = "CREATE TABLE AS SELECT"

// StreamingUpdate describes the commit of one epoch of a streaming query,
// as Spark's Delta sink makes it (operation STREAMING UPDATE).
type StreamingUpdate struct {
	// QueryID and EpochID are the commit's txn {appId: QueryID, version:
	// EpochID} (WithTxn) and its operationParameters queryId and epochId.
	QueryID string
	EpochID int64
	// OutputMode is "Append" (the epoch's files are added) or "Complete"
	// (they replace every live file of the table, in the same commit).
	OutputMode string
	// Time is the txn's lastUpdated and, in Complete mode, the removes'
	// deletionTimestamp (zero: the table's clock).
	Time time.Time
}

// WithStreamingUpdate makes WriteFiles and CommitFiles write one epoch of
// a streaming query: CommitFiles commits operation STREAMING UPDATE with
// parameters outputMode, queryId and epochId (they win over
// WithOperationParameters), Spark's metrics (numAddedFiles,
// numRemovedFiles, numOutputRows, numOutputBytes) and the txn of WithTxn(
// u.QueryID, u.EpochID). In Complete mode it records the whole table as
// read and removes every live file; on a table with delta.appendOnly=true
// that has live files, WriteFiles refuses such an epoch with ErrAppendOnly
// before it writes any file. An unknown output mode or an empty query id
// is ErrInvalidArgument.
func WithStreamingUpdate(u StreamingUpdate) WriteOption {
	return func(c *writeConfig) {
		c.stream = &u
		c.txnSet, c.txnAppID, c.txnVersion = true, u.QueryID, u.EpochID
		c.txnTime = u.Time
	}
}

// WithCommitOptions passes options to the transaction of this write (after
// the table's WithTxnOptions): attempt bounds, a checkpointer.
func WithCommitOptions(opts ...TxnOption) WriteOption {
	return func(c *writeConfig) { c.txnOpts = append(c.txnOpts, opts...) }
}

// checkStream validates WithStreamingUpdate.
func (c *writeConfig) checkStream() error {
	if c.stream == nil {
		return nil
	}
	if c.stream.QueryID == "" {
		return fmt.Errorf("table: %w: streaming update with an empty query id", ErrInvalidArgument)
	}
	if m := c.stream.OutputMode; m != "Append" && m != "Complete" {
		return fmt.Errorf("table: %w: unknown output mode %q (Append or Complete)", ErrInvalidArgument, m)
	}
	return nil
}

// replacesTable reports whether the files' commit removes every live file
// (a Complete-mode epoch).
func (c *writeConfig) replacesTable() bool {
	return c.stream != nil && c.stream.OutputMode == "Complete"
}

// WithRowSchema says that untyped rows are aligned with sch instead of the
// table schema. Columns are matched to the table's by name (exact, then
// case-insensitive, at every nesting depth); table columns missing from sch
// are written as null and must be nullable; columns of sch the table lacks
// are an error unless WithSchemaEvolution adds them.
func WithRowSchema(sch *schema.StructType) WriteOption {
	return func(c *writeConfig) { c.rowSchema = sch }
}

// WithCompression sets the data files' Parquet compression (default
// parquetio.Snappy); the file names carry the codec as Spark's do.
func WithCompression(codec parquetio.Compression) WriteOption {
	return func(c *writeConfig) { c.compression = codec }
}

// WithParquetOptions passes options to parquetio.NewWriter (row group and
// page size, dictionary encoding, ...), after the ones the table derives
// from its properties (delta.dataSkippingNumIndexedCols,
// delta.dataSkippingStatsColumns).
func WithParquetOptions(opts ...parquetio.WriteOption) WriteOption {
	return func(c *writeConfig) { c.parquetOpts = append(c.parquetOpts, opts...) }
}

// WithWriteConcurrency bounds how many data files are encoded and uploaded
// at once (default min(GOMAXPROCS, 8)). Files of one partition are written
// one after another.
func WithWriteConcurrency(n int) WriteOption {
	return func(c *writeConfig) { c.concurrency = n }
}

type writeMode uint8

const (
	modeAppend writeMode = iota
	modeOverwrite
)

func (m writeMode) String() string {
	if m == modeOverwrite {
		return "Overwrite"
	}
	return "Append"
}

// prepared is input ready for writing: rows aligned with schema, the table
// schema after the write (possibly evolved).
type prepared struct {
	schema        *schema.StructType
	schemaChanged bool
	rows          []value.Row
	typed         columnarRows // rows written column by column (typedwrite.go, arrowwrite.go); rows is nil then
}

// prepareRows aligns untyped rows with the table schema (after evolution).
func (t *Table) prepareRows(ctx context.Context, rows []value.Row, cfg writeConfig) (*prepared, error) {
	cur := t.Schema()
	if cfg.rowSchema == nil {
		return &prepared{schema: cur, rows: rows}, nil
	}
	target, changed, err := t.mergeSchema(cfg.rowSchema, cfg.evolve)
	if err != nil {
		return nil, err
	}
	proj := structProjector(cfg.rowSchema, target)
	if proj == nil {
		return &prepared{schema: target, schemaChanged: changed, rows: rows}, nil
	}
	out := make([]value.Row, len(rows))
	for i, r := range rows {
		if i%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		p, err := proj(r)
		if err != nil {
			return nil, fmt.Errorf("table: %w", &RowError{Row: i, Err: err})
		}
		out[i] = p
	}
	return &prepared{schema: target, schemaChanged: changed, rows: out}, nil
}

// AppendRows appends rows to the table and returns the table at the new
// version (t itself stays valid at its version).
//
// Each row holds one value per column of the table schema, in schema order
// (or of the WithRowSchema schema), in the value model (package value) (see the
// parquetio package: int64 for long, value.Date for date, time.Time for
// timestamps, Decimal, Row for structs, []any for
// arrays, []value.MapEntry for maps; nil for null).
//
// Every row is validated before anything is written: a wrong row length, a
// null in a NOT NULL column (at any depth), a Go type that does not fit its
// column or a value out of range is a *RowError naming the row index and
// the column. Rows are split by partition values; each partition's rows go
// into new Parquet files ("part-00000-<uuid>-c000.snappy.parquet") under
// its Hive-style directory, without the partition columns, rolled at
// WithTargetFileSize. The commit ("WRITE", mode "Append") holds one add
// action per file with its partitionValues, size, modificationTime (ms) and
// Delta stats, and, with WithTxn, a txn action.
//
// A plain append is a blind append: it records no reads, so concurrent
// appends never conflict with it. It still fails when a concurrent commit
// changed the metadata or protocol (*txlog.ConflictError). Data files of a
// commit that failed with a conflict are deleted (best effort). An empty
// rows slice commits a version with no files.
func (t *Table) AppendRows(ctx context.Context, rows []Row, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("append")
	}
	return t.writeRows(ctx, modeAppend, rows, opts)
}

// writeRows is AppendRows and OverwriteRows: validate rows, then write and
// commit them in mode.
func (t *Table) writeRows(ctx context.Context, mode writeMode, rows []value.Row, opts []WriteOption) (*Table, error) {
	cfg := newWriteConfig(opts)
	p, err := t.prepareRows(ctx, rows, cfg)
	if err != nil {
		return nil, opError(ctx, mode.op(), t.URI(), err)
	}
	return t.writeCommit(ctx, mode, p, cfg)
}

// cancelCheckRows is how many rows the loops over a batch (validation,
// projection, encoding, shredding) handle between checks of the context,
// so that a cancelled write of millions of rows returns within
// milliseconds.
const cancelCheckRows = 4096

// op names the operation of mode in errors ("append", "overwrite").
func (m writeMode) op() string { return strings.ToLower(m.String()) }

// opError wraps a context error (ctx cancelled or past its deadline) with
// the operation and the table: "table: append file:///t: context
// canceled", matching errors.Is(err, context.Canceled). Other errors are
// returned as they are.
func opError(ctx context.Context, op, uri string, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	prefix := "table: " + op + " " + uri + ":"
	if strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return fmt.Errorf("%s %w", prefix, err)
}

// WriteFiles validates rows and writes them as data files, as AppendRows
// does, but commits nothing: it returns the add actions (dataChange true)
// for CommitFiles or AppendFiles (the streaming sink writes an epoch's
// files once and commits them, retrying from fresh snapshots). Files that
// are never committed are orphans that vacuum removes. WithSchemaEvolution
// is refused when it would change the schema (the schema change belongs to
// the commit; use AppendRows or DraftAppend). With WithStreamingUpdate in
// Complete mode, an append-only table with live files is refused
// (ErrAppendOnly) before any file is written.
func (t *Table) WriteFiles(ctx context.Context, rows []Row, opts ...WriteOption) ([]*Add, error) {
	if t == nil {
		return nil, nilTableError("write files")
	}
	cfg := newWriteConfig(opts)
	return t.writePreparedFiles(ctx, cfg, func() (*prepared, error) { return t.prepareRows(ctx, rows, cfg) })
}

// writePreparedFiles is WriteFiles of the input prepare returns: rows, or
// columns (arrowfiles.go).
func (t *Table) writePreparedFiles(ctx context.Context, cfg writeConfig, prepare func() (*prepared, error)) ([]*txlog.Add, error) {
	if err := cfg.checkStream(); err != nil {
		return nil, err
	}
	if cfg.replacesTable() {
		// The commit removes the live files: refuse now, before writing.
		if err := t.precheck("streaming update of", t.snap.NumFiles() > 0); err != nil {
			return nil, err
		}
	}
	p, err := prepare()
	if err != nil {
		return nil, opError(ctx, "write files of", t.URI(), err)
	}
	if p.schemaChanged {
		return nil, fmt.Errorf("table: %w: WriteFiles cannot change the table schema; use AppendRows with WithSchemaEvolution", ErrInvalidArgument)
	}
	if err := t.checkWrite(nil, p); err != nil {
		return nil, err
	}
	res, err := t.writeDataFiles(ctx, p, cfg, nil)
	if err != nil {
		return nil, opError(ctx, "write files of", t.URI(), err)
	}
	return res.adds, nil
}

// AppendFiles commits add actions (from WriteFiles) as a blind append:
// operation "WRITE", mode "Append", plus the txn actions of WithTxn (which
// then makes it not blind: it records the appId read) and WithExtraTxns,
// and the parameters of WithOperationParameters. It is CommitFiles without
// the commit's result (see there, also for WithStreamingUpdate). Unlike
// AppendRows it does not skip an already committed WithTxn version: the
// caller checks TxnVersion itself. Adds whose partition values do not name
// exactly the table's partition columns are refused with
// ErrInvalidArgument. Returns the table at the new version; other errors
// are txlog's.
func (t *Table) AppendFiles(ctx context.Context, adds []*Add, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("append files")
	}
	nt, _, err := t.commitFiles(ctx, adds, nil, newWriteConfig(opts))
	return nt, err
}

// CommitFiles commits add actions (from WriteFiles) through the table's
// operation path and returns the table at the new version with the
// commit's result (version, attempts). Without WithStreamingUpdate it is
// AppendFiles' blind append (operation WRITE, mode Append, Spark's WRITE
// metrics numFiles, numOutputRows, numOutputBytes). With it the commit is
// one streaming epoch (operation STREAMING UPDATE; in Complete mode the
// live files are removed, and an append-only table with live files is
// refused with ErrAppendOnly). Like AppendFiles it does not skip an already
// committed txn version: the caller checks it on the same snapshot. The
// files are the caller's: a commit that fails leaves them in place.
func (t *Table) CommitFiles(ctx context.Context, adds []*Add, opts ...WriteOption) (*Table, *CommitResult, error) {
	if t == nil {
		return nil, nil, nilTableError("commit files")
	}
	return t.commitFiles(ctx, adds, nil, newWriteConfig(opts))
}

// commitFiles is CommitFiles with an optional schema change (merged: the
// evolved schema, from DraftAppend).
func (t *Table) commitFiles(ctx context.Context, adds []*txlog.Add, merged *schema.StructType, cfg writeConfig) (*Table, *txlog.CommitResult, error) {
	if err := cfg.checkStream(); err != nil {
		return nil, nil, err
	}
	if err := t.checkAdds(adds); err != nil {
		return nil, nil, err
	}
	name, verb := "WRITE", "append to"
	if cfg.stream != nil {
		name, verb = StreamingUpdateOperation, "streaming update of"
	}
	op, err := t.beginAs(name, verb, cfg.replacesTable() && t.snap.NumFiles() > 0, cfg)
	if err != nil {
		return nil, nil, err
	}
	if merged != nil {
		if op.metadata, op.protocol, err = t.evolvedMetadata(merged); err != nil {
			return nil, nil, err
		}
		if err := t.checkWritable(op.metadata); err != nil {
			return nil, nil, err
		}
	}
	op.adds = adds
	rows, bytes := addTotals(adds)
	if cfg.stream == nil {
		op.params = t.operationParams(modeAppend, cfg, "")
		if merged != nil {
			op.params["mergeSchema"] = "true"
		}
		op.metrics = writeMetrics(len(adds), rows, bytes)
	} else {
		if cfg.replacesTable() {
			now := t.cfg.now()
			if !cfg.stream.Time.IsZero() {
				now = cfg.stream.Time
			}
			for _, f := range op.tx.ReadFiles(nil) {
				op.removes = append(op.removes, f.RemoveAt(now.UnixMilli()))
			}
		}
		op.streamingUpdate(cfg, rows, bytes)
	}
	return t.commitOperation(ctx, op)
}

// checkAdds refuses (ErrInvalidArgument) a nil add, one without a path and
// one whose partition values do not name exactly t's partition columns.
func (t *Table) checkAdds(adds []*txlog.Add) error {
	parts := t.PartitionColumns()
	for i, a := range adds {
		if a == nil || a.Path == "" {
			return fmt.Errorf("table: %w: add %d is nil or has no path", ErrInvalidArgument, i)
		}
		ok := len(a.PartitionValues) == len(parts)
		for _, c := range t.partitionKeys() {
			_, has := a.PartitionValues[c]
			ok = ok && has
		}
		if !ok {
			return fmt.Errorf("table: %w: add %s has partition values for %v, the table is partitioned by %v",
				ErrInvalidArgument, a.Path, slices.Sorted(maps.Keys(a.PartitionValues)), parts)
		}
	}
	return nil
}

// addTotals returns the rows (as their stats count them) and bytes of adds.
func addTotals(adds []*txlog.Add) (rows, bytes int64) {
	for _, a := range adds {
		bytes += a.Size
		if n, ok := a.NumRecords(); ok {
			rows += n
		}
	}
	return rows, bytes
}

// streamingUpdate sets op's parameters and metrics to those of Spark's
// STREAMING UPDATE of epoch cfg.stream, whose files hold rows and bytes.
func (op *operation) streamingUpdate(cfg writeConfig, rows, bytes int64) {
	op.params = paramsWith(map[string]string{}, cfg)
	op.params["outputMode"] = cfg.stream.OutputMode
	op.params["queryId"] = cfg.stream.QueryID
	op.params["epochId"] = strconv.FormatInt(cfg.stream.EpochID, 10)
	op.metrics = map[string]string{
		"numAddedFiles":   strconv.Itoa(len(op.adds)),
		"numRemovedFiles": strconv.Itoa(len(op.removes)),
		"numOutputRows":   strconv.FormatInt(rows, 10),
		"numOutputBytes":  strconv.FormatInt(bytes, 10),
	}
}

// writeMetrics are Spark's WRITE operationMetrics.
func writeMetrics(files int, rows, bytes int64) map[string]string {
	return map[string]string{
		"numFiles":       strconv.Itoa(files),
		"numOutputRows":  strconv.FormatInt(rows, 10),
		"numOutputBytes": strconv.FormatInt(bytes, 10),
	}
}

func (t *Table) operationParams(mode writeMode, cfg writeConfig, predicate string) map[string]string {
	params := map[string]string{
		"mode":        mode.String(),
		"partitionBy": jsonString(nonNil(t.PartitionColumns())),
	}
	if predicate != "" {
		params["predicate"] = jsonString([]string{predicate})
	}
	maps.Copy(params, cfg.params)
	return params
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkWrite is the gate every write of new rows passes before it writes
// any data file: m is the metadata the commit will have (nil: the
// snapshot's), p the rows. It refuses tables deltakit cannot write
// (checkWritable: unsupported writer features, by name) and rows that
// violate the table's CHECK constraints or invariants (checkConstraints).
// NOT NULL columns are checked with the rows' values in writeDataFiles,
// also before anything is written.
func (t *Table) checkWrite(m *txlog.Metadata, p *prepared) error {
	if err := t.checkWritable(m); err != nil {
		return err
	}
	if m == nil {
		m = t.snap.Metadata()
	}
	if p.typed != nil && hasConstraints(m) {
		// writeTypedPath takes the row path for such tables.
		return fmt.Errorf("table: write to %s: %w: columnar rows cannot be checked against constraints", t.URI(), ErrUnsupportedConstraint)
	}
	if err := checkConstraints(m, p.schema, p.rows); err != nil {
		return fmt.Errorf("table: write to %s: %w", t.URI(), err)
	}
	return nil
}

// checkWritable refuses tables deltakit cannot write before any file is
// written: unsupported writer features, generated or identity columns,
// column defaults, change data feed, column mapping.
func (t *Table) checkWritable(m *txlog.Metadata) error {
	var err error
	if m == nil || m == t.snap.Metadata() {
		err = txlog.CheckWritableSnapshot(t.snap)
	} else {
		err = txlog.CheckWritableTable(t.snap.Protocol(), m)
	}
	if err != nil {
		return fmt.Errorf("table: write to %s: %w", t.URI(), err)
	}
	return nil
}

// writeCommit writes p's rows and commits them in mode: operation WRITE
// with Spark's WRITE metrics (numFiles, numOutputRows, numOutputBytes; with
// replaceWhere also numRemovedFiles and numRemovedBytes, as Spark's
// WRITE_REPLACE_WHERE).
func (t *Table) writeCommit(ctx context.Context, mode writeMode, p *prepared, cfg writeConfig) (nt *Table, err error) {
	defer func() { err = opError(ctx, mode.op(), t.URI(), err) }()
	if mode == modeAppend && cfg.replace != nil {
		return nil, fmt.Errorf("table: %w: WithReplaceWhere is for overwrites", ErrInvalidArgument)
	}
	op, err := t.beginAs("WRITE", mode.op(), mode == modeOverwrite, cfg)
	if err != nil {
		return nil, err
	}
	if op.skip {
		return t, nil
	}
	if p.schemaChanged {
		if op.metadata, op.protocol, err = t.evolvedMetadata(p.schema); err != nil {
			return nil, err
		}
	}
	if err := t.checkWrite(op.metadata, p); err != nil {
		return nil, err
	}

	var removes []*txlog.Add
	var groupCheck func(map[string]string) error
	predicate := ""
	if mode == modeOverwrite {
		if cfg.replace != nil {
			pred, err := cfg.replace.bind(t.Schema(), t.PartitionColumns())
			if err != nil {
				return nil, err
			}
			predicate = cfg.replace.String()
			removes = op.tx.ReadFiles(t.logicalPartitions(pred))
			groupCheck = func(pv map[string]string) error {
				if !pred(pv) {
					return fmt.Errorf("table: %w: rows of partition %s do not satisfy the replaceWhere predicate %s",
						ErrInvalidArgument, describePartition(t.PartitionColumns(), pv), predicate)
				}
				return nil
			}
		} else {
			removes = op.tx.ReadFiles(nil)
		}
	}

	res, err := t.writeDataFiles(ctx, p, cfg, groupCheck)
	if err != nil {
		return nil, err
	}
	op.adds, op.written = res.adds, res.keys
	var addBytes int64
	for _, a := range res.adds {
		addBytes += a.Size
	}
	op.metrics = writeMetrics(len(res.adds), int64(p.numRows()), addBytes)
	now := t.cfg.now().UnixMilli()
	var removedBytes int64
	for _, f := range removes {
		op.removes = append(op.removes, f.RemoveAt(now))
		removedBytes += f.Size
	}
	if cfg.replace != nil {
		op.metrics["numRemovedFiles"] = strconv.Itoa(len(removes))
		op.metrics["numRemovedBytes"] = strconv.FormatInt(removedBytes, 10)
	}
	op.params = t.operationParams(mode, cfg, predicate)
	nt, _, err = t.commitOperation(ctx, op)
	if err != nil {
		return nil, err
	}
	return nt, nil
}

// ErrAppendOnly is returned (wrapped) by every write that would remove data
// (overwrite, delete, update, restore, a Complete-mode epoch) from a table
// with delta.appendOnly=true (spec "Append-only Tables"). It is
// txlog.ErrAppendOnly: the check is made by the commit itself, below every
// operation.
var ErrAppendOnly = txlog.ErrAppendOnly

func describePartition(cols []string, pv map[string]string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v, ok := pv[c]
		if !ok || v == "" {
			parts[i] = c + "=null"
		} else {
			parts[i] = c + "=" + strconv.Quote(v)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// deleteFiles removes data files written by a write that will never commit.
func deleteFiles(store objectstore.Store, keys []string, logger *slog.Logger) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := store.Delete(ctx, k); err != nil {
			logger.Warn("table: could not delete orphan data file", "key", k, "err", err)
		}
	}
}

// ---- validation ----

// checkField validates v for field f: nullability, then type (value.Check).
func checkField(f *schema.StructField, v any) (int64, error) {
	if v == nil {
		if !f.Nullable {
			return 0, fmt.Errorf("column %q: %w (null value)", f.Name, errNotNull)
		}
		return 0, nil
	}
	n, err := checkValue(f.Type, v)
	if err != nil {
		return 0, fmt.Errorf("column %q: %w", f.Name, err)
	}
	return n, nil
}

// valueError returns a *value.Error under table's sentinels: a Go type that
// does not fit is ErrSchemaMismatch, a null where none is allowed is a NOT
// NULL violation, anything else (range, syntax, variant) ErrInvalidArgument.
// The *value.Error stays matchable with errors.As.
func valueError(err error) error {
	switch {
	case errors.Is(err, value.ErrTypeMismatch):
		return fmt.Errorf("%w: %w", ErrSchemaMismatch, err)
	case errors.Is(err, value.ErrNull):
		return fmt.Errorf("%w: %w", errNotNull, err)
	}
	return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
}

func outOfRange(v any, t schema.Type) error {
	return fmt.Errorf("%w: %w", ErrInvalidArgument, &value.Error{Type: t, Value: v, Reason: value.ErrOutOfRange})
}

// minTimestampUnix and maxTimestampUnix bound timestamps in Unix seconds
// (value.TimestampInRange).
var minTimestampUnix, maxTimestampUnix = value.TimestampUnixBounds()

func timestampInRange(t time.Time) bool { return value.TimestampInRange(t) }

// fieldChecker returns checkField specialised for f: value.CheckerOf for
// the common non-null case, checkField (which names the column) otherwise.
func fieldChecker(f *schema.StructField) func(any) (int64, error) {
	chk := value.CheckerOf(f.Type)
	return func(v any) (int64, error) {
		if v != nil {
			if n, err := chk(v); err == nil {
				return n, nil
			}
		}
		return checkField(f, v)
	}
}

// checkValue checks that non-nil v fits Delta type t, in the value model
// (value.Check), and returns its approximate encoded size in bytes.
func checkValue(t schema.Type, v any) (int64, error) {
	n, err := value.Check(t, v)
	if err != nil {
		return 0, valueError(err)
	}
	return n, nil
}

// ---- files ----

// group is the rows of one partition.
type group struct {
	values map[string]string // partition column → serialized value ("" null)
	rows   []int             // input row indexes
}

type writeResult struct {
	adds []*txlog.Add
	keys []string // store keys written
}

// writeDataFiles validates p's rows, splits them by partition, checks each
// partition with groupCheck (when non-nil) and writes the data files. On
// error, files already written are deleted (best effort).
func (t *Table) writeDataFiles(ctx context.Context, p *prepared, cfg writeConfig, groupCheck func(map[string]string) error) (*writeResult, error) {
	if p.typed != nil {
		return t.writeTypedFiles(ctx, p, cfg, groupCheck)
	}
	pIdx, dIdx, dataSchema, missing := splitPartitionColumns(p.schema, t.PartitionColumns())
	if missing != "" {
		return nil, fmt.Errorf("table: %w: partition column %q is not in the schema", ErrSchemaMismatch, missing)
	}
	// Validate every row and split by partition before writing anything.
	rg, err := t.groupRows(ctx, p, pIdx, dIdx)
	if err != nil {
		return nil, err
	}
	if groupCheck != nil {
		for _, g := range rg.order {
			if len(g.rows) == 0 {
				continue
			}
			if err := groupCheck(g.values); err != nil {
				return nil, err
			}
		}
	}
	if len(p.rows) == 0 {
		return &writeResult{}, nil
	}
	return t.writeGroups(ctx, p, cfg, rg, dataSchema, dIdx)
}

// rowGroups is the row path's input validated and split by partition.
type rowGroups struct {
	sizes  []int64  // validation size of each input row
	order  []*group // the partitions in the order of their first rows
	single bool     // unpartitioned: order holds one group, of all rows (its rows are not listed)
}

// groupRows validates every row of p (its length, and the data columns dIdx
// with fieldChecker) and splits the rows by the values of the partition
// columns pIdx. Errors are *RowError naming the first bad row (in row
// order, then column order, then the partition columns).
//
// Validation goes a block of checkBlock rows at a time, column by column
// (value.ColumnCheckerOf), which finds the same first error: a column
// looks only at the rows before the earliest failure found so far.
func (t *Table) groupRows(ctx context.Context, p *prepared, pIdx, dIdx []int) (*rowGroups, error) {
	sch := p.schema
	partCols := t.PartitionColumns()
	checkers := make([]func([]value.Row, int, []int64) (int, error), len(dIdx))
	for c, j := range dIdx {
		f := sch.Fields[j]
		checkers[c] = value.ColumnCheckerOf(f.Type, fieldChecker(f))
	}
	rg := &rowGroups{sizes: make([]int64, len(p.rows)), single: len(partCols) == 0}
	if rg.single {
		rg.order = []*group{{values: map[string]string{}}}
	}
	groups := map[string]*group{}
	pk := &partitionKeyer{sch: sch, pIdx: pIdx, vals: make([]string, len(pIdx))}
	for a := 0; a < len(p.rows); a += checkBlock {
		if a%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		block := p.rows[a:min(len(p.rows), a+checkBlock)]
		limit := len(block) // rows at or after limit are not checked: an earlier one failed
		var bad error
		for i, row := range block {
			if len(row) != len(sch.Fields) {
				limit = i
				bad = fmt.Errorf("%w: row has %d values, table schema has %d columns", ErrInvalidArgument, len(row), len(sch.Fields))
				break
			}
		}
		for c, j := range dIdx {
			if i, err := checkers[c](block[:limit], j, rg.sizes[a:a+limit]); err != nil {
				limit, bad = i, err
			}
		}
		if !rg.single {
			for i, row := range block[:limit] {
				if err := rg.add(groups, pk, partCols, row, a+i); err != nil {
					return nil, fmt.Errorf("table: %w", &RowError{Row: a + i, Err: err})
				}
			}
		}
		if bad != nil {
			return nil, fmt.Errorf("table: %w", &RowError{Row: a + limit, Err: bad})
		}
	}
	return rg, nil
}

// checkBlock is the number of rows groupRows validates column by column:
// small enough for the block's rows to stay in cache across its columns.
const checkBlock = 256

// add puts input row i into its partition's group, creating the group (in
// rg.order) at the partition's first row.
func (rg *rowGroups) add(groups map[string]*group, pk *partitionKeyer, partCols []string, row value.Row, i int) error {
	k, err := pk.key(row)
	if err != nil {
		return err
	}
	g := groups[k]
	if g == nil {
		g = &group{values: make(map[string]string, len(partCols))}
		for c, col := range partCols {
			g.values[col] = pk.vals[c]
		}
		groups[k] = g
		rg.order = append(rg.order, g)
	}
	g.rows = append(g.rows, i)
	return nil
}

// partitionKeyer serializes the partition values of rows.
type partitionKeyer struct {
	sch  *schema.StructType
	pIdx []int    // the partition columns' indexes in sch
	vals []string // the values of the last row keyed
	buf  strings.Builder
}

// key sets k.vals to the serialized partition values of row and returns
// the key of its partition: the value of a single partition column, else
// the values with their lengths. A null or empty value of a NOT NULL
// partition column is an error.
func (k *partitionKeyer) key(row value.Row) (string, error) {
	k.buf.Reset()
	for c, j := range k.pIdx {
		f := k.sch.Fields[j]
		s, ok, err := SerializePartitionValue(f.Type, row[j])
		if err != nil {
			return "", fmt.Errorf("partition column %q: %w", f.Name, err)
		}
		if !ok && !f.Nullable {
			return "", fmt.Errorf("column %q: %w (null or empty partition value)", f.Name, errNotNull)
		}
		k.vals[c] = s
		if len(k.pIdx) == 1 {
			return s, nil
		}
		k.buf.WriteString(strconv.Itoa(len(s)))
		k.buf.WriteByte(':')
		k.buf.WriteString(s)
	}
	return k.buf.String(), nil
}

// writeGroups writes the data files of the validated partitions of rg,
// up to cfg.concurrency partitions at once, each with the data columns
// dIdx of its rows (of schema data). On error, files already written are
// deleted (best effort).
func (t *Table) writeGroups(ctx context.Context, p *prepared, cfg writeConfig, rg *rowGroups, data *schema.StructType, dIdx []int) (*writeResult, error) {
	fw := t.newFileWriter(cfg, data)
	results := make([][]*txlog.Add, len(rg.order))
	// The first error cancels gctx, which stops the others and the loop
	// below.
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(cfg.concurrency)
	for gi, g := range rg.order {
		rows, gsizes := p.rows, rg.sizes
		if !rg.single {
			rows, gsizes = dataRows(gctx, p.rows, rg.sizes, g.rows, dIdx)
		}
		if gctx.Err() != nil {
			break
		}
		eg.Go(func() error {
			adds, err := fw.writeGroup(gctx, g.values, rows, gsizes)
			results[gi] = adds
			return err
		})
	}
	err := eg.Wait()
	if err == nil {
		err = context.Cause(ctx) // the caller's cancellation, when no group saw it
	}
	if err != nil {
		deleteFiles(t.store, fw.written(), t.cfg.logger)
		return nil, err
	}
	res := &writeResult{keys: fw.written()}
	for _, r := range results {
		res.adds = append(res.adds, r...)
	}
	return res, nil
}

// dataRows returns the rows idx of rows cut to their data columns dIdx,
// with their sizes. It stops early when ctx is done (the caller checks).
func dataRows(ctx context.Context, rows []value.Row, sizes []int64, idx, dIdx []int) ([]value.Row, []int64) {
	out := make([]value.Row, len(idx))
	outSizes := make([]int64, len(idx))
	var backing []any
	k := len(dIdx)
	for r, i := range idx {
		b := r % cancelCheckRows
		if b == 0 {
			if ctx.Err() != nil {
				break
			}
			backing = make([]any, min(cancelCheckRows, len(idx)-r)*k) // block by block: see encodeRows
		}
		dr := backing[b*k : (b+1)*k : (b+1)*k]
		for c, j := range dIdx {
			dr[c] = rows[i][j]
		}
		out[r], outSizes[r] = dr, sizes[i]
	}
	return out, outSizes
}

// parquetOptions derives the data file writer options from the table
// properties and cfg.
func (t *Table) parquetOptions(cfg writeConfig) []parquetio.WriteOption {
	conf := t.snap.Metadata().Configuration
	opts := []parquetio.WriteOption{parquetio.WithCompression(cfg.compression), parquetio.WithCreatedBy("deltakit")}
	if v, ok := conf["delta.dataSkippingNumIndexedCols"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			opts = append(opts, parquetio.WithNumIndexedCols(n))
		}
	}
	if v, ok := conf["delta.dataSkippingStatsColumns"]; ok && strings.TrimSpace(v) != "" {
		opts = append(opts, parquetio.WithStatsColumns(parquetio.ParseStatsColumns(v)))
	}
	// Column mapping: physical names and (mode id) field ids.
	opts = append(opts, parquetio.WithWriteColumnMapping(mappingMode(t.snap.Metadata())))
	// Spark writes tightBounds only on tables that support deletion vectors.
	opts = append(opts, parquetio.WithTightBounds(slices.Contains(t.snap.Protocol().EffectiveWriterFeatures(), txlog.FeatureDeletionVectors)))
	// Keep row groups within the target file size, and within
	// maxRowGroupBytes: a row group is buffered whole in memory.
	opts = append(opts, parquetio.WithRowGroupSize(min(maxRowGroupBytes, max(cfg.targetFileSize, 1<<20))))
	return append(opts, cfg.parquetOpts...)
}

// fileWriter writes the data files of one write call.
type fileWriter struct {
	store    objectstore.Store
	schema   *schema.StructType // data schema (no partition columns)
	opts     []parquetio.WriteOption
	suffix   string
	target   int64
	now      func() time.Time
	partCols []string
	// root is the directory the partition directories are in ("": the
	// table root; "_change_data/" for change data files) and prefix the
	// file name's ("part" when empty; "cdc").
	root, prefix string
	// partKeys are the partitionValues keys of partCols (physical names
	// under column mapping): the keys of the add actions and directories.
	partKeys []string

	mu      sync.Mutex
	ratio   float64 // file bytes per estimated raw byte, learned
	rawSum  float64
	fileSum float64
	keys    []string
	fileSeq int
}

// splitPartitionColumns splits the columns of sch into partition columns
// (partCols, in that order: their indexes in sch are pIdx) and data
// columns (the others, in sch's order: indexes dIdx, and data, their
// schema). missing is the first of partCols that sch lacks ("" when none
// does; the other results are then nil).
func splitPartitionColumns(sch *schema.StructType, partCols []string) (pIdx, dIdx []int, data *schema.StructType, missing string) {
	pIdx = make([]int, len(partCols))
	isPart := make([]bool, len(sch.Fields))
	for i, c := range partCols {
		j := sch.FieldIndex(c)
		if j < 0 {
			return nil, nil, nil, c
		}
		pIdx[i] = j
		isPart[j] = true
	}
	data = &schema.StructType{}
	for i, f := range sch.Fields {
		if !isPart[i] {
			data.Fields = append(data.Fields, f)
			dIdx = append(dIdx, i)
		}
	}
	return pIdx, dIdx, data, ""
}

// newFileWriter returns the writer of data files with the columns of data
// (the table's columns without its partition columns) into the table's
// partition directories, with the Parquet options and target file size of
// cfg.
func (t *Table) newFileWriter(cfg writeConfig, data *schema.StructType) *fileWriter {
	var store objectstore.Store = t.store
	if cfg.gate != nil {
		store = objectstore.GateUploads(t.store, cfg.gate, gateHold)
	}
	return &fileWriter{
		store:    store,
		schema:   data,
		opts:     t.parquetOptions(cfg),
		suffix:   cfg.compression.FileSuffix(),
		target:   cfg.targetFileSize,
		now:      t.cfg.now,
		partCols: t.PartitionColumns(),
		partKeys: t.partitionKeys(),
		ratio:    1,
	}
}

func (w *fileWriter) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.keys)
}

func (w *fileWriter) currentRatio() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ratio
}

// fileRows is the input of fileWriter.writeGroup: rows with their
// validation sizes (see fieldChecker), written to a data file a range at a
// time.
type fileRows interface {
	// numRows returns the number of rows.
	numRows() int
	// rowSize returns the validation size of row i.
	rowSize(i int) int64
	// write writes rows [start, end) to pw.
	write(ctx context.Context, pw *parquetio.Writer, start, end int) error
}

// boxedRows is the fileRows of the row path: rows of the data columns.
type boxedRows struct {
	rows  []value.Row
	sizes []int64
}

func (b *boxedRows) numRows() int        { return len(b.rows) }
func (b *boxedRows) rowSize(i int) int64 { return b.sizes[i] }

// write hands the rows to pw in calls of cancelCheckRows rows, checking
// ctx between them.
func (b *boxedRows) write(ctx context.Context, pw *parquetio.Writer, start, end int) error {
	for part := b.rows[start:end]; len(part) > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(part), cancelCheckRows)
		if err := pw.Write(part[:n]); err != nil {
			return err
		}
		part = part[n:]
	}
	return nil
}

// writeGroup writes one partition's rows (with their validation sizes)
// as one or more files, as writeRows does.
func (w *fileWriter) writeGroup(ctx context.Context, values map[string]string, rows []value.Row, sizes []int64) ([]*txlog.Add, error) {
	return w.writeRows(ctx, values, &boxedRows{rows: rows, sizes: sizes}, -1)
}

// writeRows writes one partition's rows as one or more files of about
// w.target bytes (by the validation sizes, times the file bytes per
// validation byte learned so far). total, when not negative, is the
// validation size of all rows: when they fit one file, their sizes are
// not added up again.
func (w *fileWriter) writeRows(ctx context.Context, values map[string]string, src fileRows, total int64) ([]*txlog.Add, error) {
	dir := w.root
	if len(w.partCols) > 0 {
		if !slices.Equal(w.partCols, w.partKeys) {
			pv := make(map[string]string, len(values))
			for i, c := range w.partCols {
				pv[w.partKeys[i]] = values[c]
			}
			values = pv
		}
		dir += partitionDir(w.partKeys, values) + "/"
	}
	var adds []*txlog.Add
	n := src.numRows()
	for start := 0; start < n; {
		ratio := w.currentRatio()
		end, est := start, 0.0
		var raw int64
		if start == 0 && total >= 0 && float64(total)*ratio < float64(w.target) {
			end, raw = n, total
		}
		for end < n {
			s := src.rowSize(end)
			raw += s
			est += float64(s) * ratio
			end++
			if est >= float64(w.target) {
				break
			}
		}
		a, b := start, end
		add, err := w.writeFile(ctx, dir, values, raw, func(pw *parquetio.Writer) error { return src.write(ctx, pw, a, b) })
		if err != nil {
			return nil, err
		}
		adds = append(adds, add)
		start = end
	}
	return adds, nil
}

// writeFile writes one data file whose rows write gives to the Parquet
// writer; raw is their estimated size (see fieldChecker).
func (w *fileWriter) writeFile(ctx context.Context, dir string, values map[string]string, raw int64, write func(*parquetio.Writer) error) (*txlog.Add, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	seq := w.fileSeq
	w.fileSeq++
	w.mu.Unlock()
	prefix := w.prefix
	if prefix == "" {
		prefix = "part"
	}
	name := fmt.Sprintf("%s-%05d-%s-c000", prefix, seq, uuid.NewString())
	if w.suffix != "" {
		name += "." + w.suffix
	}
	rel := dir + name + ".parquet"
	fw, err := parquetio.CreateFile(ctx, w.store, rel, w.schema, w.opts...)
	if err != nil {
		return nil, fmt.Errorf("table: data file %s: %w", rel, err)
	}
	defer fw.Abort() // nothing after Close
	if err := write(fw.Writer()); err != nil {
		return nil, fmt.Errorf("table: data file %s: %w", rel, err)
	}
	w.mu.Lock()
	w.keys = append(w.keys, rel)
	w.mu.Unlock()
	wf, err := fw.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("table: data file: %w", err)
	}
	stats, err := wf.Stats.JSON()
	if err != nil {
		return nil, fmt.Errorf("table: stats of %s: %w", rel, err)
	}
	size := wf.Size
	w.mu.Lock()
	w.rawSum += float64(raw)
	w.fileSum += float64(size)
	if w.rawSum > 0 {
		w.ratio = w.fileSum / w.rawSum
	}
	w.mu.Unlock()
	return &txlog.Add{
		Path:             encodeAddPath(rel),
		PartitionValues:  maps.Clone(values),
		Size:             size,
		ModificationTime: w.now().UnixMilli(),
		DataChange:       true,
		Stats:            stats,
	}, nil
}
