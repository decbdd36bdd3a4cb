package table

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/structcodec"
	"github.com/deltakit/deltakit/txlog"
)

// ErrTableExists is returned by Create when the location already holds a
// Delta table.
var ErrTableExists = errors.New("table already exists")

// ErrSchemaMismatch is wrapped when rows, a Go struct or a new schema do not
// fit the table's schema; the message names the column. It is
// the struct codec's (table/internal/structcodec) sentinel.
var ErrSchemaMismatch = structcodec.ErrSchemaMismatch

// ErrInvalidArgument is wrapped for bad options or input (unknown partition
// column, NOT NULL violated, unsupported Go type, ...). It is
// objectstore.ErrInvalidArgument, so a bad URI ("", "gs://...") or S3
// setting matches it too.
var ErrInvalidArgument = objectstore.ErrInvalidArgument

// Table is one version of a Delta table.
type Table struct {
	store objectstore.Store
	snap  *txlog.Snapshot
	cfg   config
}

type config struct {
	openOpts []objectstore.OpenOption
	store    objectstore.Store
	txnOpts  []txlog.TxnOption
	logger   *slog.Logger
	now      func() time.Time
	version  int64     // -1: latest
	at       time.Time // zero: not by timestamp

	// Create only.
	partitionColumns []string
	properties       map[string]string
	name             string
	description      string

	// allowedRoots are the WithAllowedRoots URIs.
	allowedRoots []string

	// checkpoints writes due checkpoints in the background (bgcheckpoint.go);
	// nil with syncCheckpoints.
	checkpoints     *bgCheckpoints
	syncCheckpoints bool
	// group commits concurrent blind appends together (WithGroupCommit).
	group *groupCommitter
}

// Option configures Create and Open.
type Option func(*config)

// WithStore uses store instead of opening the URI (the URI is then ignored
// and may be ""). Tests use it to wrap a store, e.g. with
// faultstore.New.
func WithStore(store Store) Option { return func(c *config) { c.store = store } }

// WithStoreOptions passes options to objectstore.Open (S3 endpoint,
// path-style addressing, credentials, a mem:// registry).
func WithStoreOptions(opts ...objectstore.OpenOption) Option {
	return func(c *config) { c.openOpts = append(c.openOpts, opts...) }
}

// WithS3Endpoint sends the requests of an s3:// table to url, e.g.
// "http://localhost:9000" for MinIO (objectstore.WithEndpoint). Without it,
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL apply. A localhost or IP-address
// endpoint is addressed in path style unless WithS3PathStyle(false).
func WithS3Endpoint(url string) Option {
	return WithStoreOptions(objectstore.WithS3Options(objectstore.WithEndpoint(url)))
}

// WithS3PathStyle addresses the bucket of an s3:// table in the URL path
// (true) or in the host name (false), overriding
// AWS_VIRTUAL_HOSTED_STYLE_REQUEST and the inference from the endpoint
// (objectstore.WithPathStyle).
func WithS3PathStyle(on bool) Option {
	return WithStoreOptions(objectstore.WithS3Options(objectstore.WithPathStyle(on)))
}

// WithS3Region sets the AWS region of an s3:// table, overriding AWS_REGION,
// AWS_DEFAULT_REGION and the shared config files (objectstore.WithRegion);
// the default is objectstore.DefaultS3Region.
func WithS3Region(region string) Option {
	return WithStoreOptions(objectstore.WithS3Options(objectstore.WithRegion(region)))
}

// WithTxnOptions passes options to every transaction the table commits
// (attempt bounds, backoff, logger).
func WithTxnOptions(opts ...TxnOption) Option {
	return func(c *config) { c.txnOpts = append(c.txnOpts, opts...) }
}

// WithCheckpointer makes the table's commits hand their due checkpoints to
// cp, which writes them in the background, instead of writing them inside
// the commit (txlog.WithCheckpointer): for long-running writers whose commit
// latency should not include a checkpoint every delta.checkpointInterval
// commits. Without this option each table has a background checkpointer
// of its own (see Close); this one replaces it, for a Checkpointer shared
// by several tables. The caller owns cp and closes it when done writing. A
// nil cp is WithSyncCheckpoints. Tables derived from this one (by writes
// and Refresh) keep the option.
func WithCheckpointer(cp *Checkpointer) Option {
	return func(c *config) {
		c.syncCheckpoints = cp == nil
		c.checkpoints = nil
		if cp != nil {
			c.checkpoints = &bgCheckpoints{cp: cp}
		}
	}
}

// WithLogger sets the logger of the table and of its commits (default
// slog.Default()): at Debug each commit (version, attempts, bytes,
// duration, operation), at Info lost races, conflicts and retries (see
// txlog.WithLogger).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithClock sets the table's one clock (default time.Now), which every
// operation on the table and on the tables derived from it reads: the
// modification times, txn lastUpdated, remove deletion timestamps and
// commitInfo.timestamp of its commits (DML, Optimize, streaming epochs and
// the rest), the time Vacuum measures retention back from and the time
// CleanupLog measures delta.logRetentionDuration back from. It is the
// transactions' clock too (txlog.WithTxnClock), unless WithTxnOptions sets
// another. Verify, which checks a store rather than an opened table, reads
// time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// AtVersion makes Open load version v (time travel). Writes from such a
// table conflict-check against the newer versions as any stale writer does.
func AtVersion(v int64) Option { return func(c *config) { c.version = v } }

// AtTimestamp makes Open load the latest version committed at or before t.
func AtTimestamp(t time.Time) Option { return func(c *config) { c.at = t } }

// WithPartitionColumns sets the partition columns of a new table (Create).
// Each must be a top-level primitive column of the schema.
func WithPartitionColumns(cols ...string) Option {
	return func(c *config) { c.partitionColumns = cols }
}

// WithProperties sets table properties (metaData.configuration) of a new
// table, e.g. "delta.checkpointInterval": "10".
func WithProperties(props map[string]string) Option {
	return func(c *config) { c.properties = maps.Clone(props) }
}

// WithName sets metaData.name of a new table.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithDescription sets metaData.description of a new table.
func WithDescription(d string) Option { return func(c *config) { c.description = d } }

func newConfig(opts []Option) config {
	c := config{version: -1, now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	// The table's logger and clock are the transactions' too, unless
	// WithTxnOptions sets others (later options win).
	c.txnOpts = append([]txlog.TxnOption{txlog.WithLogger(c.logger), txlog.WithTxnClock(c.now)}, c.txnOpts...)
	c.setupCheckpoints()
	return c
}

func (c *config) openStore(ctx context.Context, uri string) (objectstore.Store, error) {
	if c.store != nil {
		return c.store, nil
	}
	return objectstore.Open(ctx, uri, c.openOpts...)
}

// Open opens the Delta table at uri ("file:///path", a plain path,
// "s3://bucket/prefix", "mem://name") at its latest version, or at the
// version AtVersion/AtTimestamp select. Errors are txlog's:
// txlog.ErrTableNotFound, *txlog.VersionNotFoundError,
// *txlog.UnsupportedFeatureError (a reader feature deltakit lacks, by name),
// *txlog.CorruptLogError; a URI that names no store (an unknown scheme, a
// local path that is a file) is objectstore.ErrInvalidArgument. Every error
// starts with "table: open <uri>: ".
func Open(ctx context.Context, uri string, opts ...Option) (*Table, error) {
	cfg := newConfig(opts)
	store, err := cfg.openStore(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("table: open %s: %w", uri, err)
	}
	lopts := []txlog.LoadOption{txlog.WithLoadLogger(cfg.logger)}
	switch {
	case !cfg.at.IsZero():
		lopts = append(lopts, txlog.AtTimestamp(cfg.at))
	case cfg.version >= 0:
		lopts = append(lopts, txlog.AtVersion(cfg.version))
	}
	snap, err := txlog.Load(ctx, store, lopts...)
	if err != nil {
		return nil, fmt.Errorf("table: open %s: %w", store.URI(), err)
	}
	return &Table{store: store, snap: snap, cfg: cfg}, nil
}

// Create creates a Delta table at uri with schema sch and commits version 0
// (protocol and metaData). The protocol is the lowest the schema and
// properties need (txlog.ProtocolFor, txlog.UpgradeProtocol, as Spark's
// CREATE TABLE): (1,2) without features; a legacy pair when it implies
// exactly the features used with (1,2)'s appendOnly and invariants ((1,3)
// for delta.constraints.*); else writer 7 listing every feature used,
// legacy ones included, at reader 1, at reader 2 when column mapping is the
// only reader feature (delta.columnMapping.mode: (2,7) listing
// appendOnly, columnMapping, invariants), or at reader 3 with the
// reader-writer features listed when a column is timestamp_ntz or a
// property turns on deletion vectors, v2 checkpoints or type widening. Which
// property turns on which feature, and whether deltakit writes it, is the
// writer feature table txlog.WriterFeatures: delta.enableDeletionVectors,
// delta.enableRowTracking, delta.enableInCommitTimestamps,
// delta.enableTypeWidening, delta.checkpointPolicy=v2 (checkpoints are
// then classic-named V2 checkpoints) and delta.feature.<name>=supported of
// a supported feature are created with the feature in the protocol;
// delta.enableIcebergCompatV1/V2, an unknown or refused
// delta.feature.<name> return an *txlog.UnsupportedFeatureError
// (txlog.ErrUnsupportedFeature) naming the feature, with nothing written.
// Returns ErrTableExists when a table is
// already there (also when another writer created it concurrently, or when
// log cleanup removed its first commits; CreateOrOpen appends to such a
// table instead), ErrInvalidArgument for bad partition columns and bad
// property values (a delta.* boolean, number, interval or policy that does
// not parse).
// delta.enableChangeDataFeed=true makes a change data feed table: DELETE,
// UPDATE and MERGE then write change data files, and Changes reads the
// feed. With
// delta.columnMapping.mode name or id every column (nested ones too) gets
// a column mapping id and a "col-<uuid>" physical name and
// delta.columnMapping.maxColumnId is set (spec "Column Mapping"); another
// mode value is ErrInvalidArgument. SetProperties changes properties of an
// existing table (and enables column mapping mode name on one).
func Create(ctx context.Context, uri string, sch *schema.StructType, opts ...Option) (*Table, error) {
	cfg := newConfig(opts)
	store, err := cfg.openStore(ctx, uri)
	if err != nil {
		return nil, err
	}
	return create(ctx, store, sch, cfg)
}

// checkNewTable checks what Create checks before writing anything: the
// partition columns, the column names, the protocol the properties need and
// that every CHECK constraint and invariant can be evaluated
// (ErrUnsupportedConstraint naming it otherwise).
func checkNewTable(store objectstore.Store, sch *schema.StructType, cfg config) (*txlog.Protocol, error) {
	if err := validatePartitionColumns(sch, cfg.partitionColumns); err != nil {
		return nil, err
	}
	if err := checkColumnNames(sch); err != nil {
		return nil, err
	}
	p, err := protocolFor(sch, cfg.properties)
	if err != nil {
		return nil, fmt.Errorf("table: create %s: %w", store.URI(), err)
	}
	// A CHECK constraint every later write would refuse to evaluate is
	// refused now, by name (Spark refuses unknown columns and bad SQL at
	// ADD CONSTRAINT too).
	if _, err := tableConstraints(&txlog.Metadata{Configuration: cfg.properties}, sch); err != nil {
		return nil, fmt.Errorf("table: create %s: %w", store.URI(), err)
	}
	return p, nil
}

func create(ctx context.Context, store objectstore.Store, sch *schema.StructType, cfg config) (*Table, error) {
	p, err := checkNewTable(store, sch, cfg)
	if err != nil {
		return nil, err
	}
	if exists, err := hasLog(ctx, store); err != nil {
		return nil, fmt.Errorf("table: create %s: %w", store.URI(), err)
	} else if exists {
		// Also after log cleanup removed commit 0: version 0 must not be
		// written again over a table whose later versions exist.
		return nil, fmt.Errorf("table: create %s: %w", store.URI(), ErrTableExists)
	}
	// Column mapping: every column gets its id and physical name.
	sch, props, err := assignColumnMapping(sch, maps.Clone(cfg.properties))
	if err != nil {
		return nil, fmt.Errorf("table: create %s: %w", store.URI(), err)
	}
	schemaString, err := schema.Marshal(sch)
	if err != nil {
		return nil, err
	}
	created := cfg.now().UnixMilli()
	m := &txlog.Metadata{
		ID:               uuid.NewString(),
		Name:             cfg.name,
		Description:      cfg.description,
		Format:           txlog.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     schemaString,
		PartitionColumns: slices.Clone(cfg.partitionColumns),
		Configuration:    props,
		CreatedTime:      &created,
	}
	if m.PartitionColumns == nil {
		m.PartitionColumns = []string{}
	}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	op := beginCreate(store, "CREATE TABLE", p, m, cfg)
	op.params = createParams(m, cfg)
	return commitCreate(ctx, store, cfg, op)
}

// createParams are the operationParameters of Spark's CREATE TABLE and
// CREATE TABLE AS SELECT of a table with metadata m.
func createParams(m *txlog.Metadata, cfg config) map[string]string {
	return map[string]string{
		"isManaged":   "false",
		"description": cfg.description,
		"partitionBy": jsonString(nonNil(m.PartitionColumns)),
		"properties":  jsonString(m.Configuration),
	}
}

// hasLog reports whether store holds any commit or checkpoint file.
func hasLog(ctx context.Context, store objectstore.Store) (bool, error) {
	for info, err := range store.List(ctx, txlog.LogPrefix, "") {
		if err != nil {
			return false, err
		}
		name := strings.TrimPrefix(info.Key, txlog.LogPrefix)
		if name != "" && name[0] >= '0' && name[0] <= '9' {
			return true, nil
		}
		if name > "9" {
			break // sorted: no versioned file follows
		}
	}
	return false, nil
}

// protocolFor returns the protocol of a new table with this schema and these
// properties: txlog.ProtocolFor, which lists every feature the schema and
// properties use (NOT NULL columns: invariants; timestamp_ntz; every
// property of the writer feature table, txlog.WriterFeatures, such as
// delta.appendOnly, delta.enableDeletionVectors, delta.checkpointPolicy=v2,
// delta.enableIcebergCompatV2; delta.constraints.*; "delta.feature.<name>"
// properties), checked against that table (txlog.CheckWritableProtocol):
// a feature it refuses or does not list returns an
// *txlog.UnsupportedFeatureError naming it, rather than a table other
// engines would misread. Bad property values are ErrInvalidArgument.
func protocolFor(sch *schema.StructType, props map[string]string) (*txlog.Protocol, error) {
	return protocolForChange(nil, sch, props)
}

// protocolForChange is protocolFor for a table whose protocol is cur (nil
// for a new table): the protocol never loses a feature cur has.
func protocolForChange(cur *txlog.Protocol, sch *schema.StructType, props map[string]string) (*txlog.Protocol, error) {
	if err := checkPropertyValues(props); err != nil {
		return nil, err
	}
	if err := checkMappingMode(props[txlog.PropColumnMappingMode]); err != nil {
		return nil, err
	}
	p := txlog.ProtocolFor(cur, sch, props)
	if err := txlog.CheckWritableProtocol(p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkPropertyValues refuses table properties whose values deltakit and
// other engines would fail to parse later: numbers, booleans and intervals
// of the delta.* properties it interprets.
func checkPropertyValues(props map[string]string) error {
	for k, v := range props {
		var err error
		switch k {
		case txlog.PropCheckpointInterval:
			var n int64
			if n, err = strconv.ParseInt(v, 10, 64); err == nil && n <= 0 {
				err = errors.New("must be a positive number of commits")
			}
		case "delta.dataSkippingNumIndexedCols":
			var n int64
			if n, err = strconv.ParseInt(v, 10, 32); err == nil && n < -1 {
				err = errors.New("must be -1 or more")
			}
		case txlog.PropAppendOnly, txlog.PropEnableChangeDataFeed, txlog.PropEnableDeletionVectors,
			txlog.PropEnableRowTracking, txlog.PropEnableInCommitTimestamps, "delta.enableTypeWidening",
			"delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2":
			_, err = strconv.ParseBool(v)
		case "delta.checkpointPolicy":
			if !strings.EqualFold(v, "classic") && !strings.EqualFold(v, "v2") {
				err = errors.New("must be classic or v2")
			}
		case txlog.PropLogRetentionDuration, txlog.PropDeletedFileRetentionDuration, txlog.PropSetTransactionRetentionDuration:
			_, err = txlog.ParseInterval(v)
		case txlog.PropIsolationLevel:
			if v != "Serializable" && v != "WriteSerializable" {
				err = errors.New("must be Serializable or WriteSerializable")
			}
		}
		if err != nil {
			return fmt.Errorf("%w: table property %s=%q: %v", ErrInvalidArgument, k, v, err)
		}
	}
	return nil
}

// minimalProtocol returns the lowest protocol a new table with this schema
// and no properties needs (spec "Protocol Evolution"; txlog.ProtocolFor):
// (1,2) without features (NOT NULL columns are legacy invariants, implied by
// writer version 2); (3,7) listing timestampNtz, appendOnly and
// invariants when any column, at any depth, is timestamp_ntz.
func minimalProtocol(sch *schema.StructType) *Protocol {
	return txlog.ProtocolFor(nil, sch, nil)
}

// Version returns the table version this *Table shows.
func (t *Table) Version() int64 {
	if t == nil {
		return -1
	}
	return t.snap.Version()
}

// Snapshot returns the log snapshot behind the table.
func (t *Table) Snapshot() *Snapshot {
	if t == nil {
		return nil
	}
	return t.snap
}

// Schema returns the table schema (logical column names).
func (t *Table) Schema() *schema.StructType {
	if t == nil {
		return nil
	}
	return t.snap.Schema()
}

// PartitionColumns returns the partition column names in order.
func (t *Table) PartitionColumns() []string {
	if t == nil {
		return nil
	}
	return t.snap.PartitionColumns()
}

// Store returns the store rooted at the table.
func (t *Table) Store() Store {
	if t == nil {
		return nil
	}
	return t.store
}

// URI returns the table's location.
func (t *Table) URI() string {
	if t == nil {
		return ""
	}
	return t.store.URI()
}

// Refresh returns the table at its latest version, reading only the commits
// newer than t (incremental; t itself is returned when nothing is new).
func (t *Table) Refresh(ctx context.Context) (*Table, error) {
	if t == nil {
		return nil, nilTableError("refresh")
	}
	snap, err := t.snap.Update(ctx)
	if err != nil {
		return nil, err
	}
	if snap == t.snap {
		return t, nil
	}
	return t.with(snap), nil
}

// with returns a table sharing t's store and options at snapshot snap.
func (t *Table) with(snap *txlog.Snapshot) *Table {
	return &Table{store: t.store, snap: snap, cfg: t.cfg}
}
