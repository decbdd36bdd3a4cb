package bench

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
)

// genStart is the commit time of version 0 of generated tables.
var genStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// TableSpec describes a generated table: version 0 creates it (flights
// schema, protocol 3/7 with timestampNtz), versions 1..Commits each add
// FilesPerCommit files with realistic paths and stats, and a classic
// checkpoint is written at CheckpointAt (none when < 0).
type TableSpec struct {
	Commits        int64
	FilesPerCommit int
	CheckpointAt   int64
}

// GenerateTable writes the table of spec into store quickly: commits are
// encoded with txlog.EncodeCommit and written with Put, several at once;
// the checkpoint with txlog.WriteCheckpoint. Data files are not written
// (opening a table never reads them). Errors are store and encoding errors.
func GenerateTable(ctx context.Context, store objectstore.Store, spec TableSpec) error {
	v0, err := createActions()
	if err != nil {
		return err
	}
	if err := putCommit(ctx, store, 0, v0); err != nil {
		return err
	}
	// Eight puts at once; the first error cancels the others.
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for v := int64(1); v <= spec.Commits && gctx.Err() == nil; v++ {
		eg.Go(func() error { return putCommit(gctx, store, v, dataCommit(v, spec.FilesPerCommit)) })
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if spec.CheckpointAt >= 0 {
		snap, err := txlog.Load(ctx, store, txlog.AtVersion(spec.CheckpointAt))
		if err != nil {
			return fmt.Errorf("bench: load version %d for its checkpoint: %w", spec.CheckpointAt, err)
		}
		if err := txlog.WriteCheckpoint(ctx, snap); err != nil {
			return err
		}
	}
	return nil
}

func putCommit(ctx context.Context, store objectstore.Store, v int64, actions []txlog.Action) error {
	data, err := txlog.EncodeCommit(actions)
	if err != nil {
		return err
	}
	return store.Put(ctx, txlog.CommitKey(v), data)
}

// createActions returns version 0 of a flights table: protocol 3/7 with
// timestampNtz (the schema has a timestamp_ntz column) and metadata.
func createActions() ([]txlog.Action, error) {
	sch, err := schema.Marshal(FlightsSchema())
	if err != nil {
		return nil, err
	}
	created := genStart.UnixMilli()
	return []txlog.Action{
		{CommitInfo: &txlog.CommitInfo{Timestamp: created, Operation: "CREATE TABLE", EngineInfo: txlog.EngineInfo}},
		{Protocol: &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{txlog.FeatureTimestampNTZ}, WriterFeatures: []string{txlog.FeatureTimestampNTZ}}},
		{Metadata: &txlog.Metadata{ID: "0b1e4d6a-5f3c-4e2a-9d7b-bench0000001", Name: "flights",
			Format: txlog.Format{Provider: "parquet"}, SchemaString: sch, CreatedTime: &created}},
	}, nil
}

// dataCommit returns the actions of data commit v: a commitInfo and n adds
// of 1,000-row files with flights stats.
func dataCommit(v int64, n int) []txlog.Action {
	ts := genStart.Add(time.Duration(v) * time.Second).UnixMilli()
	actions := make([]txlog.Action, 0, n+1)
	actions = append(actions, txlog.Action{CommitInfo: &txlog.CommitInfo{Timestamp: ts, Operation: "WRITE",
		OperationParameters: map[string]any{"mode": "Append"}, EngineInfo: txlog.EngineInfo}})
	for i := range n {
		actions = append(actions, txlog.Action{Add: genAdd(v, i, ts)})
	}
	return actions
}

// genAdd returns file i of commit v: a 1,000-row file of about 24 KB.
func genAdd(v int64, i int, ts int64) *txlog.Add {
	row := int(v)*1000 + i // first departure of the file, in 30 s steps
	lo := flightsStart.Add(time.Duration(row) * 30 * time.Second)
	hi := lo.Add(999 * 30 * time.Second)
	h := uint64(v)*1_000_003 + uint64(i)
	o1, o2 := airports[h%7], airports[20+h%40]
	stats := fmt.Sprintf(`{"numRecords":1000,"minValues":{"date":%q,"delay":%d,"distance":%d,"origin":%q,"destination":%q},`+
		`"maxValues":{"date":%q,"delay":%d,"distance":%d,"origin":%q,"destination":%q},`+
		`"nullCount":{"date":0,"delay":0,"distance":0,"origin":0,"destination":0}}`,
		lo.Format("2006-01-02T15:04:05.000"), -8-int(h%10), 100+h%50, o1, airports[h%5],
		hi.Format("2006-01-02T15:04:05.000"), 300+h%600, 2700+h%100, o2, airports[30+h%30])
	return &txlog.Add{
		Path: fmt.Sprintf("part-%05d-%08x-%04x-4%03x-8%03x-%012x-c000.snappy.parquet",
			i, uint32(v*2654435761), uint16(i), uint16(v)&0xfff, uint16(i*7)&0xfff, h*0x9e3779b97f4a7c15>>16),
		PartitionValues:  map[string]string{},
		Size:             24_000 + int64(h%4096),
		ModificationTime: ts,
		DataChange:       true,
		Stats:            stats,
	}
}
