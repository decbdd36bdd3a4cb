package txlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
)

// Checkpoint row types (spec "Checkpoint Schema"). One checkpointRow is one
// row of a checkpoint or sidecar Parquet file; exactly one of its columns is
// non-null. The same types are used to read checkpoints written by Spark,
// Databricks and delta-rs (columns are matched by name, unknown columns are
// skipped, missing ones read as null; the checkpoint reader also reads
// stats_parsed and partitionValues_parsed where the JSON forms are absent)
// and to write classic checkpoints (WriteCheckpoint).
type checkpointRow struct {
	Txn                *rowTxn                `parquet:"txn,optional"`
	Add                *rowAdd                `parquet:"add,optional"`
	Remove             *rowRemove             `parquet:"remove,optional"`
	MetaData           *rowMetaData           `parquet:"metaData,optional"`
	Protocol           *rowProtocol           `parquet:"protocol,optional"`
	DomainMetadata     *rowDomainMetadata     `parquet:"domainMetadata,optional"`
	CheckpointMetadata *rowCheckpointMetadata `parquet:"checkpointMetadata,optional"`
	Sidecar            *rowSidecar            `parquet:"sidecar,optional"`
}

// checkpointRowV1 is the row type WriteCheckpoint writes: a V1-spec classic
// checkpoint has no checkpointMetadata or sidecar column (spec "V1 Spec").
type checkpointRowV1 struct {
	Txn            *rowTxn            `parquet:"txn,optional"`
	Add            *rowAdd            `parquet:"add,optional"`
	Remove         *rowRemove         `parquet:"remove,optional"`
	MetaData       *rowMetaData       `parquet:"metaData,optional"`
	Protocol       *rowProtocol       `parquet:"protocol,optional"`
	DomainMetadata *rowDomainMetadata `parquet:"domainMetadata,optional"`
}

// Inside a non-null action column, fields that always have a value are
// written as required Parquet fields: parquet-go writes the zero value of an
// "optional" non-pointer field as null, and Spark fails on a null dataChange,
// size or txn version. Readers accept both.

// rowTxn is the txn column.
type rowTxn struct {
	AppID       string `parquet:"appId"`
	Version     int64  `parquet:"version"`
	LastUpdated *int64 `parquet:"lastUpdated,optional"`
}

// rowDV is the deletionVector struct inside add/remove.
type rowDV struct {
	StorageType    string `parquet:"storageType"`
	PathOrInlineDv string `parquet:"pathOrInlineDv"`
	Offset         *int32 `parquet:"offset,optional"`
	SizeInBytes    int32  `parquet:"sizeInBytes"`
	Cardinality    int64  `parquet:"cardinality"`
}

// rowAdd is the add column. Stats is the JSON statistics string
// (delta.checkpoint.writeStatsAsJson).
type rowAdd struct {
	Path                    string            `parquet:"path"`
	PartitionValues         map[string]string `parquet:"partitionValues"`
	Size                    int64             `parquet:"size"`
	ModificationTime        int64             `parquet:"modificationTime"`
	DataChange              bool              `parquet:"dataChange"`
	Stats                   *string           `parquet:"stats,optional"`
	Tags                    map[string]string `parquet:"tags,optional"`
	DeletionVector          *rowDV            `parquet:"deletionVector,optional"`
	BaseRowID               *int64            `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64            `parquet:"defaultRowCommitVersion,optional"`
	ClusteringProvider      *string           `parquet:"clusteringProvider,optional"`
}

// rowRemove is the remove column (no stats or tags in checkpoints).
type rowRemove struct {
	Path                    string            `parquet:"path"`
	DeletionTimestamp       *int64            `parquet:"deletionTimestamp,optional"`
	DataChange              bool              `parquet:"dataChange"`
	ExtendedFileMetadata    *bool             `parquet:"extendedFileMetadata,optional"`
	PartitionValues         map[string]string `parquet:"partitionValues,optional"`
	Size                    *int64            `parquet:"size,optional"`
	DeletionVector          *rowDV            `parquet:"deletionVector,optional"`
	BaseRowID               *int64            `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64            `parquet:"defaultRowCommitVersion,optional"`
}

// rowFormat is metaData.format.
type rowFormat struct {
	Provider string            `parquet:"provider"`
	Options  map[string]string `parquet:"options"`
}

// rowMetaData is the metaData column.
type rowMetaData struct {
	ID               string            `parquet:"id"`
	Name             *string           `parquet:"name,optional"`
	Description      *string           `parquet:"description,optional"`
	Format           *rowFormat        `parquet:"format,optional"`
	SchemaString     string            `parquet:"schemaString"`
	PartitionColumns []string          `parquet:"partitionColumns,list"`
	Configuration    map[string]string `parquet:"configuration"`
	CreatedTime      *int64            `parquet:"createdTime,optional"`
}

// rowProtocol is the protocol column. The feature lists are kept for
// (3, 7) tables (delta-rs#2288 lost them once).
type rowProtocol struct {
	MinReaderVersion int32    `parquet:"minReaderVersion"`
	MinWriterVersion int32    `parquet:"minWriterVersion"`
	ReaderFeatures   []string `parquet:"readerFeatures,optional,list"`
	WriterFeatures   []string `parquet:"writerFeatures,optional,list"`
}

// rowDomainMetadata is the domainMetadata column.
type rowDomainMetadata struct {
	Domain        string `parquet:"domain"`
	Configuration string `parquet:"configuration"`
	Removed       bool   `parquet:"removed"`
}

// rowCheckpointMetadata is the checkpointMetadata column (v2 spec).
type rowCheckpointMetadata struct {
	Version int64             `parquet:"version"`
	Tags    map[string]string `parquet:"tags,optional"`
}

// rowSidecar is the sidecar column (v2 spec).
type rowSidecar struct {
	Path             string            `parquet:"path"`
	SizeInBytes      int64             `parquet:"sizeInBytes"`
	ModificationTime int64             `parquet:"modificationTime"`
	Tags             map[string]string `parquet:"tags,optional"`
}

// dvFromRow converts a checkpoint DV struct.
func dvFromRow(d *rowDV) *DeletionVectorDescriptor {
	if d == nil || d.StorageType == "" {
		return nil
	}
	return &DeletionVectorDescriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		Offset: d.Offset, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
}

func dvToRow(d *DeletionVectorDescriptor) *rowDV {
	if d == nil {
		return nil
	}
	return &rowDV{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		Offset: d.Offset, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptrString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Action converts the row to its action; ok is false for a row with no
// column set.
func (r *checkpointRow) Action() (Action, bool) {
	switch {
	case r.Add != nil:
		a := r.Add
		return Action{Add: &Add{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size,
			ModificationTime: a.ModificationTime, DataChange: a.DataChange, Stats: derefString(a.Stats),
			Tags: a.Tags, DeletionVector: dvFromRow(a.DeletionVector), BaseRowID: a.BaseRowID,
			DefaultRowCommitVersion: a.DefaultRowCommitVersion, ClusteringProvider: derefString(a.ClusteringProvider)}}, true
	case r.Remove != nil:
		x := r.Remove
		return Action{Remove: &Remove{Path: x.Path, DeletionTimestamp: x.DeletionTimestamp, DataChange: x.DataChange,
			ExtendedFileMetadata: x.ExtendedFileMetadata, PartitionValues: x.PartitionValues, Size: x.Size,
			DeletionVector: dvFromRow(x.DeletionVector), BaseRowID: x.BaseRowID,
			DefaultRowCommitVersion: x.DefaultRowCommitVersion}}, true
	case r.MetaData != nil:
		m := r.MetaData
		md := &Metadata{ID: m.ID, Name: derefString(m.Name), Description: derefString(m.Description),
			SchemaString: m.SchemaString, PartitionColumns: m.PartitionColumns, Configuration: m.Configuration,
			CreatedTime: m.CreatedTime}
		if m.Format != nil {
			md.Format = Format{Provider: m.Format.Provider, Options: m.Format.Options}
		}
		if md.PartitionColumns == nil {
			md.PartitionColumns = []string{}
		}
		if md.Configuration == nil {
			md.Configuration = map[string]string{}
		}
		return Action{Metadata: md}, true
	case r.Protocol != nil:
		p := r.Protocol
		return Action{Protocol: &Protocol{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion,
			ReaderFeatures: p.ReaderFeatures, WriterFeatures: p.WriterFeatures}}, true
	case r.Txn != nil:
		return Action{Txn: &Txn{AppID: r.Txn.AppID, Version: r.Txn.Version, LastUpdated: r.Txn.LastUpdated}}, true
	case r.DomainMetadata != nil:
		d := r.DomainMetadata
		return Action{DomainMetadata: &DomainMetadata{Domain: d.Domain, Configuration: d.Configuration, Removed: d.Removed}}, true
	case r.CheckpointMetadata != nil:
		return Action{CheckpointMetadata: &CheckpointMetadata{Version: r.CheckpointMetadata.Version, Tags: r.CheckpointMetadata.Tags}}, true
	case r.Sidecar != nil:
		s := r.Sidecar
		return Action{Sidecar: &Sidecar{Path: s.Path, SizeInBytes: s.SizeInBytes, ModificationTime: s.ModificationTime, Tags: s.Tags}}, true
	}
	return Action{}, false
}

// checkpointRowOf converts an action to a checkpoint row; ok is false for
// actions that checkpoints do not hold (commitInfo, cdc).
func checkpointRowOf(a *Action) (checkpointRow, bool) {
	switch {
	case a.Add != nil:
		x := a.Add
		return checkpointRow{Add: &rowAdd{Path: x.Path, PartitionValues: x.PartitionValues, Size: x.Size,
			ModificationTime: x.ModificationTime, DataChange: x.DataChange, Stats: ptrString(x.Stats), Tags: x.Tags,
			DeletionVector: dvToRow(x.DeletionVector), BaseRowID: x.BaseRowID,
			DefaultRowCommitVersion: x.DefaultRowCommitVersion, ClusteringProvider: ptrString(x.ClusteringProvider)}}, true
	case a.Remove != nil:
		x := a.Remove
		return checkpointRow{Remove: &rowRemove{Path: x.Path, DeletionTimestamp: x.DeletionTimestamp,
			DataChange: x.DataChange, ExtendedFileMetadata: x.ExtendedFileMetadata, PartitionValues: x.PartitionValues,
			Size: x.Size, DeletionVector: dvToRow(x.DeletionVector), BaseRowID: x.BaseRowID,
			DefaultRowCommitVersion: x.DefaultRowCommitVersion}}, true
	case a.Metadata != nil:
		m := a.Metadata
		pc := m.PartitionColumns
		if pc == nil {
			pc = []string{}
		}
		return checkpointRow{MetaData: &rowMetaData{ID: m.ID, Name: ptrString(m.Name), Description: ptrString(m.Description),
			Format: &rowFormat{Provider: m.Format.Provider, Options: m.Format.Options}, SchemaString: m.SchemaString,
			PartitionColumns: pc, Configuration: m.Configuration, CreatedTime: m.CreatedTime}}, true
	case a.Protocol != nil:
		p := a.Protocol
		return checkpointRow{Protocol: &rowProtocol{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion,
			ReaderFeatures: p.ReaderFeatures, WriterFeatures: p.WriterFeatures}}, true
	case a.Txn != nil:
		return checkpointRow{Txn: &rowTxn{AppID: a.Txn.AppID, Version: a.Txn.Version, LastUpdated: a.Txn.LastUpdated}}, true
	case a.DomainMetadata != nil:
		d := a.DomainMetadata
		return checkpointRow{DomainMetadata: &rowDomainMetadata{Domain: d.Domain, Configuration: d.Configuration, Removed: d.Removed}}, true
	case a.CheckpointMetadata != nil:
		return checkpointRow{CheckpointMetadata: &rowCheckpointMetadata{Version: a.CheckpointMetadata.Version, Tags: a.CheckpointMetadata.Tags}}, true
	case a.Sidecar != nil:
		s := a.Sidecar
		return checkpointRow{Sidecar: &rowSidecar{Path: s.Path, SizeInBytes: s.SizeInBytes, ModificationTime: s.ModificationTime, Tags: s.Tags}}, true
	}
	return checkpointRow{}, false
}

// readCheckpoint reads every action of checkpoint cp (all parts, and the
// sidecars of a v2 checkpoint) and calls fn for each, in file order; with pb
// set, add actions go into pb instead. Errors are *CorruptLogError for
// unreadable files and store errors, wrapped.
func readCheckpoint(ctx context.Context, store objectstore.Store, cp checkpointRef, fn func(*Action), pb *packBuilder) error {
	var sidecars []*Sidecar
	collect := func(a *Action) {
		if pb != nil && a.Add != nil {
			pb.addAction(a.Add)
			return
		}
		if a.Sidecar != nil {
			sidecars = append(sidecars, a.Sidecar)
			return
		}
		if a.CheckpointMetadata != nil {
			return
		}
		fn(a)
	}
	for _, f := range cp.files {
		data, err := store.Get(ctx, f.key, objectstore.FullObject)
		if err != nil {
			if errors.Is(err, objectstore.ErrNotExist) {
				return corrupt(f.key, cp.version, err, "missing checkpoint file")
			}
			return fmt.Errorf("txlog: reading checkpoint %s: %w", f.key, err)
		}
		if f.json {
			actions, err := DecodeCommit(cp.version, data)
			if err != nil {
				var ce *CorruptLogError
				if errors.As(err, &ce) {
					ce.File = f.key
				}
				return err
			}
			for i := range actions {
				collect(&actions[i])
			}
			continue
		}
		if err := readCheckpointParquet(f.key, cp.version, data, true, collect, pb); err != nil {
			return err
		}
	}
	for _, sc := range sidecars {
		key := sidecarKey(sc.Path)
		data, err := store.Get(ctx, key, objectstore.FullObject)
		if err != nil {
			if errors.Is(err, objectstore.ErrNotExist) {
				return corrupt(key, cp.version, err, "missing sidecar file of checkpoint %d", cp.version)
			}
			return fmt.Errorf("txlog: reading sidecar %s: %w", key, err)
		}
		err = readCheckpointParquet(key, cp.version, data, false, func(a *Action) {
			if a.Add != nil || a.Remove != nil {
				fn(a)
			}
		}, pb)
		if err != nil {
			return err
		}
	}
	return nil
}

// sidecarKey returns the store key of a sidecar path (a file name under
// "_delta_log/_sidecars/", possibly URI-encoded or a full path).
func sidecarKey(p string) string {
	p = DecodePath(p)
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return LogPrefix + "_sidecars/" + p
}

// -- writing --------------------------------------------------------------

// WriteCheckpoint writes a classic single-file V1 checkpoint of snap
// ("_delta_log/%020d.checkpoint.parquet", spec "Checkpoints") holding its
// protocol, metadata, txns, domain metadata, live files (stats as JSON
// strings) and unexpired tombstones, then updates "_delta_log/_last_checkpoint"
// unless it already names a newer version. The commit of snap's version must
// exist (it does for a loaded snapshot). Errors are store or Parquet encoding
// errors, wrapped.
//
// The checkpoint is streamed to the store as it is encoded
// (objectstore.StartUpload: S3 multipart parts, a local temporary file),
// so a checkpoint of many files is never whole in memory; it appears
// under its key only once complete.
func WriteCheckpoint(ctx context.Context, snap *Snapshot) error {
	key := CheckpointKey(snap.Version())
	up, err := objectstore.StartUpload(ctx, snap.store, key)
	if err != nil {
		return fmt.Errorf("txlog: writing checkpoint %s: %w", key, err)
	}
	defer up.Abort(context.WithoutCancel(ctx)) // nothing after Commit
	lc, err := encodeCheckpoint(snap, up)
	if err != nil {
		return fmt.Errorf("txlog: writing checkpoint %s: %w", key, err)
	}
	if err := up.Commit(ctx); err != nil {
		return fmt.Errorf("txlog: writing checkpoint %s: %w", key, err)
	}
	old, err := readLastCheckpoint(ctx, snap.store)
	if err != nil {
		return err
	}
	if old != nil && old.Version > lc.Version {
		return nil
	}
	hint, err := json.Marshal(lc)
	if err != nil {
		return err
	}
	if err := snap.store.Put(ctx, LastCheckpointKey, hint); err != nil {
		return fmt.Errorf("txlog: writing %s: %w", LastCheckpointKey, err)
	}
	return nil
}

// EncodeCheckpoint returns the bytes of a classic checkpoint of snap and the
// matching _last_checkpoint content, without writing anything.
func EncodeCheckpoint(snap *Snapshot) ([]byte, *LastCheckpoint, error) {
	var buf bytes.Buffer
	lc, err := encodeCheckpoint(snap, &buf)
	if err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), lc, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encodeCheckpoint writes a classic checkpoint of snap to out and returns
// the matching _last_checkpoint content.
func encodeCheckpoint(snap *Snapshot, out io.Writer) (*LastCheckpoint, error) {
	cw := &countingWriter{w: out}
	// Row groups of at most 32,768 rows let readers decode large checkpoints
	// in parallel.
	w := parquet.NewGenericWriter[checkpointRowV1](cw, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(32_768))
	var rows []checkpointRowV1
	numAdds := int64(0)
	size := int64(0)
	flush := func(force bool) error {
		if len(rows) == 0 || (!force && len(rows) < 4096) {
			return nil
		}
		if _, err := w.Write(rows); err != nil {
			return fmt.Errorf("txlog: encoding checkpoint: %w", err)
		}
		size += int64(len(rows))
		rows = rows[:0]
		return nil
	}
	push := func(a Action) error {
		row, ok := checkpointRowOf(&a)
		if !ok || row.CheckpointMetadata != nil || row.Sidecar != nil {
			return nil
		}
		rows = append(rows, checkpointRowV1{Txn: row.Txn, Add: row.Add, Remove: row.Remove, MetaData: row.MetaData,
			Protocol: row.Protocol, DomainMetadata: row.DomainMetadata})
		return flush(false)
	}
	if err := push(Action{Protocol: snap.protocol}); err != nil {
		return nil, err
	}
	if err := push(Action{Metadata: snap.metadata}); err != nil {
		return nil, err
	}
	for _, t := range snap.Txns() {
		if err := push(Action{Txn: t}); err != nil {
			return nil, err
		}
	}
	for _, d := range snap.domains {
		if err := push(Action{DomainMetadata: d}); err != nil {
			return nil, err
		}
	}
	for a := range snap.AllFiles() {
		if err := push(Action{Add: a}); err != nil {
			return nil, err
		}
		numAdds++
	}
	for _, r := range snap.Tombstones() {
		// checkpointRowOf keeps no stats or tags of removes
		if err := push(Action{Remove: r}); err != nil {
			return nil, err
		}
	}
	if err := flush(true); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("txlog: encoding checkpoint: %w", err)
	}
	n := cw.n
	return &LastCheckpoint{Version: snap.version, Size: size, SizeInBytes: &n, NumOfAddFiles: &numAdds}, nil
}
