package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
)

// groupRun is one side of P10: wall time and versions used by n appends.
type groupRun struct {
	wall     time.Duration
	versions int64
}

// groupSide appends batches (one table.Append[Flight] each) to a new table
// on MinIO: one after another when serial, else from one goroutine per
// batch on one shared *Table, opened WithGroupCommit when group is set.
// It checks that the table then holds every row once (by the files'
// numRecords and the versions' count).
func groupSide(ctx context.Context, s3 *testenv.MinIO, batches [][]Flight, serial, group bool) (*groupRun, error) {
	store, err := s3.StoreAt(ctx, uniquePrefix("p10"))
	if err != nil {
		return nil, err
	}
	opts := []table.Option{table.WithStore(store), table.WithLogger(slog.New(slog.DiscardHandler))}
	if group {
		opts = append(opts, table.WithGroupCommit())
	}
	tbl, err := table.Create(ctx, "", FlightsSchema(), opts...)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if serial {
		for _, b := range batches {
			if tbl, err = table.Append(ctx, tbl, b); err != nil {
				return nil, err
			}
		}
	} else {
		var wg sync.WaitGroup
		errs := make([]error, len(batches))
		for i, b := range batches {
			wg.Go(func() { _, errs[i] = table.Append(ctx, tbl, b) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
	}
	wall := time.Since(t0)
	if err := tbl.Close(ctx); err != nil {
		return nil, err
	}
	latest, err := tbl.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	var rows, want int64
	for _, f := range latest.Snapshot().Files() {
		n, _ := f.NumRecords()
		rows += n
	}
	for _, b := range batches {
		want += int64(len(b))
	}
	if rows != want {
		return nil, fmt.Errorf("bench: P10: table holds %d rows, want %d", rows, want)
	}
	return &groupRun{wall: wall, versions: latest.Version()}, nil
}

// GroupCommitFigure measures P10: Config.GroupWriters goroutines each
// appending one batch of Config.GroupRows flights to one table on MinIO
// (table.Append[Flight] on one shared *Table), with table.WithGroupCommit
// and without it, vs the same appends one after another; wall time and
// versions used, Config.GroupReps repetitions per side in rotating order,
// median counted.
func GroupCommitFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P10", Title: "group commit: concurrent appends of one process",
		Setup: fmt.Sprintf("MinIO on localhost; %d goroutines each appending one batch of %d flights rows (table.Append[Flight]) "+
			"to one shared *table.Table opened WithGroupCommit (grouped_*) and without it (concurrent_*), vs the same %d appends "+
			"one after another (serial_*); %d repetitions per side in rotating order, median; every run checked to hold each row once",
			cfg.GroupWriters, cfg.GroupRows, cfg.GroupWriters, cfg.GroupReps)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	flights, _ := GenerateFlights(0, cfg.GroupWriters*cfg.GroupRows)
	batches := make([][]Flight, cfg.GroupWriters)
	for i := range batches {
		batches[i] = flights[i*cfg.GroupRows : (i+1)*cfg.GroupRows]
	}
	type side struct {
		name          string
		serial, group bool
		walls         []time.Duration
		versions      []int64
	}
	sides := []*side{{name: "serial", serial: true}, {name: "grouped", group: true}, {name: "concurrent"}}
	for rep := range cfg.GroupReps {
		for k := range sides {
			s := sides[(rep+k)%len(sides)]
			r, err := groupSide(ctx, env.S3, batches, s.serial, s.group)
			if err != nil {
				return fig, fmt.Errorf("%s: %w", s.name, err)
			}
			s.walls = append(s.walls, r.wall)
			s.versions = append(s.versions, r.versions)
		}
	}
	med := func(s *side) (time.Duration, int64) {
		slices.Sort(s.versions)
		return quantile(s.walls, 0.5), s.versions[len(s.versions)/2]
	}
	serialWall, serialVersions := med(sides[0])
	for _, s := range sides {
		w, v := med(s)
		fig.add(s.name+"_wall", ms(w), "ms")
		fig.add(s.name+"_versions", float64(v), "versions")
		if s != sides[0] {
			fig.add(s.name+"_wall_ratio", ratio(w, serialWall), "x")
		}
	}
	fig.note("versions: the appends' commits (version 0 is the CREATE); serial uses one per append (%d)", serialVersions)
	fig.note("concurrent_*: the same goroutines without group commit: each append commits alone and loses races to the others " +
		"(txlog's retries and backoff), as a service without the option does")
	return fig, nil
}
