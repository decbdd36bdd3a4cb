package txlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
)

//go:generate go run ./internal/ckgen

// The checkpoint row types (checkpointRow, checkpointRowV1, rowAdd, ...),
// the conversion from actions to rows (checkpointRowOf; its inverse
// checkpointRow.action, which only tests use, goes to
// checkpoint_rows_back_test.go), the reader's per-field setters (plainFields,
// mapFields, listFields) and the add fields packed file sets keep aside
// are generated into checkpoint_rows.go from one field table,
// internal/ckgen/fields.go (spec "Checkpoint Schema"). The same columns are
// read from checkpoints written by Spark, Databricks and delta-rs
// (checkpoint_read.go: columns are matched by name, unknown columns are
// skipped, missing ones read as null; stats_parsed and
// partitionValues_parsed are read where the JSON forms are absent) and
// written to classic checkpoints (WriteCheckpoint).

func dvToRow(d *DeletionVectorDescriptor) *rowDV {
	if d == nil {
		return nil
	}
	return &rowDV{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		Offset: d.Offset, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
}

func ptrString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nonNilList returns l, or an empty list for nil.
func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// readCheckpoint reads every action of checkpoint cp (all parts, and the
// sidecars of a v2 checkpoint) and calls fn for each, in file order; with pb
// set, add actions go into pb instead. Errors are *CorruptLogError for
// unreadable files and store errors, wrapped.
func readCheckpoint(ctx context.Context, store objectstore.Store, cp checkpointRef, fn func(*Action), pb *packBuilder) error {
	var sidecars []*Sidecar
	collect := func(a *Action) {
		if pb != nil && a.Add != nil {
			pb.Add(a.Add)
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
		if !f.json && f.size > rangedCheckpointBytes {
			src, err := newRangedSource(ctx, store, f.key, f.size)
			if err != nil {
				if errors.Is(err, objectstore.ErrNotExist) {
					return corrupt(f.key, cp.version, err, "missing checkpoint file")
				}
				return fmt.Errorf("txlog: reading checkpoint %s: %w", f.key, err)
			}
			if err := readCheckpointParquetAt(f.key, cp.version, src, f.size, src, true, collect, pb); err != nil {
				if serr := src.failure(); serr != nil {
					return fmt.Errorf("txlog: reading checkpoint %s: %w", f.key, serr)
				}
				return err
			}
			continue
		}
		data, err := store.Get(ctx, f.key, objectstore.FullObject)
		if err != nil {
			if errors.Is(err, objectstore.ErrNotExist) {
				return corrupt(f.key, cp.version, err, "missing checkpoint file")
			}
			return fmt.Errorf("txlog: reading checkpoint %s: %w", f.key, err)
		}
		if f.json {
			actions, err := decodeCommit(cp.version, data, true)
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
// unless it already names a newer version. On a table supporting
// v2Checkpoint it is a classic-named V2-spec checkpoint: one
// checkpointMetadata action first, all file actions inline (spec "V2
// Checkpoint", "Checkpoint Naming Scheme"). The commit of snap's version must
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

// maxCheckpointGroupRows bounds the rows of one checkpoint row group, so
// that readers decode a large checkpoint on several cores.
const maxCheckpointGroupRows = 32_768

// checkpointGroupRows returns the rows per row group for a checkpoint of
// rows rows: as few groups as maxCheckpointGroupRows allows, of equal size
// (the last may be smaller by less than the number of groups), so that
// parallel decoders get equal shares: 99,902 rows become 4 groups of
// 24,976 rather than 3 of 32,768 and one of 1,598 (two workers then decode
// 49,951 rows each instead of 65,536 and 34,366; P3 in BENCHMARKS.md).
func checkpointGroupRows(rows int) int64 {
	if rows <= maxCheckpointGroupRows {
		return maxCheckpointGroupRows
	}
	groups := (rows + maxCheckpointGroupRows - 1) / maxCheckpointGroupRows
	return int64((rows + groups - 1) / groups)
}

// encodeCheckpoint writes a classic checkpoint of snap to out and returns
// the matching _last_checkpoint content.
func encodeCheckpoint(snap *Snapshot, out io.Writer) (*LastCheckpoint, error) {
	cw := &countingWriter{w: out}
	// A table supporting v2Checkpoint gets a classic-named V2-spec
	// checkpoint: its rows include one checkpointMetadata action (spec
	// "V2 Checkpoint": classic-named checkpoints of such a table must be
	// V2 checkpoints); other tables a V1-spec one, without the column.
	v2 := snap.protocol != nil && slices.Contains(snap.protocol.EffectiveWriterFeatures(), FeatureV2Checkpoint)
	txns := snap.Txns()
	tombstones := snap.Tombstones()
	rowCount := 2 + len(txns) + len(snap.domains) + snap.NumFiles() + len(tombstones)
	if v2 {
		rowCount++
	}
	opts := []parquet.WriterOption{parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(checkpointGroupRows(rowCount))}
	var (
		write  func(rows []checkpointRow) error
		closeW func() error
	)
	if v2 {
		w := parquet.NewGenericWriter[checkpointRow](cw, opts...)
		write = func(rows []checkpointRow) error { _, err := w.Write(rows); return err }
		closeW = w.Close
	} else {
		w := parquet.NewGenericWriter[checkpointRowV1](cw, opts...)
		var v1 []checkpointRowV1
		write = func(rows []checkpointRow) error {
			v1 = v1[:0]
			for _, row := range rows {
				v1 = append(v1, row.checkpointRowV1)
			}
			_, err := w.Write(v1)
			return err
		}
		closeW = w.Close
	}
	var rows []checkpointRow
	numAdds := int64(0)
	size := int64(0)
	flush := func(force bool) error {
		if len(rows) == 0 || (!force && len(rows) < 4096) {
			return nil
		}
		if err := write(rows); err != nil {
			return fmt.Errorf("txlog: encoding checkpoint: %w", err)
		}
		size += int64(len(rows))
		rows = rows[:0]
		return nil
	}
	push := func(a Action) error {
		row, ok := checkpointRowOf(&a)
		if !ok || row.Sidecar != nil {
			return nil
		}
		rows = append(rows, row)
		return flush(false)
	}
	if v2 {
		if err := push(Action{CheckpointMetadata: &CheckpointMetadata{Version: snap.version}}); err != nil {
			return nil, err
		}
	}
	if err := push(Action{Protocol: snap.protocol}); err != nil {
		return nil, err
	}
	if err := push(Action{Metadata: snap.metadata}); err != nil {
		return nil, err
	}
	// Txns and domains in key order: the same snapshot gives the same
	// checkpoint bytes.
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		if err := push(Action{Txn: txns[id]}); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(snap.domains)) {
		if err := push(Action{DomainMetadata: snap.domains[name]}); err != nil {
			return nil, err
		}
	}
	for a := range snap.AllFiles() {
		if err := push(Action{Add: a}); err != nil {
			return nil, err
		}
		numAdds++
	}
	for _, r := range tombstones {
		// checkpointRowOf keeps no stats or tags of removes
		if err := push(Action{Remove: r}); err != nil {
			return nil, err
		}
	}
	if err := flush(true); err != nil {
		return nil, err
	}
	if err := closeW(); err != nil {
		return nil, fmt.Errorf("txlog: encoding checkpoint: %w", err)
	}
	n := cw.n
	return &LastCheckpoint{Version: snap.version, Size: size, SizeInBytes: &n, NumOfAddFiles: &numAdds}, nil
}
