package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// G1 growth (issue 17 item 7): how the cost of opening, committing and
// refreshing grows with the table, on the local filesystem with tables
// generated as P5's (10,000 files per commit, a classic checkpoint at the
// last version):
//
//   - open time and peak RSS of a fresh process (P5's child) loading the
//     latest snapshot of tables of Config.GrowthFiles live files;
//   - commit p50 of one-file blind appends (txlog, no checkpoint in the
//     commit: the table default writes them in the background) on a table
//     of 1,000 files and one of Config.GrowthCommitFiles files,
//     interleaved;
//   - Snapshot.Update after k new commits of 10 files (k in
//     Config.GrowthRefresh) on the table of Config.GrowthCommitFiles files.

// GrowthFigure measures G1.
func GrowthFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "G1", Title: "growth: open, commit and refresh as the table grows",
		Setup: fmt.Sprintf("local filesystem; generated tables (10,000 files per commit, stats on every file, classic checkpoint at the last version) "+
			"of %v live files: open time and VmHWM of a child process loading the latest snapshot; commit p50 of %d one-file blind appends "+
			"on 1,000 and %s files, interleaved (no checkpoint inside the commit); Snapshot.Update after k commits of 10 files, k in %v, on the %s-file table (median of %d)",
			cfg.GrowthFiles, cfg.GrowthCommits, groupDigits(cfg.GrowthCommitFiles), cfg.GrowthRefresh, groupDigits(cfg.GrowthCommitFiles), growthRefreshReps)}
	if skipWithoutChild(fig, env.MemoryChild) {
		return fig, nil
	}
	if len(cfg.GrowthFiles) == 0 || len(cfg.GrowthRefresh) == 0 || cfg.GrowthCommitFiles <= 0 {
		fig.Skipped = "no growth sizes configured"
		return fig, nil
	}
	small, err := newGrowthTable(ctx, env, 1_000)
	if err != nil {
		return fig, err
	}
	defer small.remove()

	opens := map[int]float64{}
	rss := map[int]float64{}
	sizes := slices.Sorted(slices.Values(append(slices.Clone(cfg.GrowthFiles), cfg.GrowthCommitFiles)))
	sizes = slices.Compact(sizes)
	for _, n := range sizes {
		g, err := newGrowthTable(ctx, env, n)
		if err != nil {
			return fig, err
		}
		env.logf("G1: %s-file table generated in %v", groupDigits(n), g.generated.Round(time.Millisecond))
		if slices.Contains(cfg.GrowthFiles, n) {
			r, err := runMemoryChild(ctx, env, g.dir)
			if err != nil {
				g.remove()
				return fig, err
			}
			if r.Files != n {
				g.remove()
				return fig, fmt.Errorf("bench: growth child loaded %d files, want %d", r.Files, n)
			}
			opens[n], rss[n] = r.LoadSeconds, float64(r.PeakRSSKB)/1024
			fig.add("open_"+countName(n), r.LoadSeconds*1000, "ms")
			fig.add("peak_rss_"+countName(n), rss[n], "MiB")
			fig.add("open_per_file_"+countName(n), r.LoadSeconds*1e9/float64(n), "ns")
		}
		if n == cfg.GrowthCommitFiles {
			if err := growthCommits(ctx, fig, cfg, small, g); err != nil {
				g.remove()
				return fig, err
			}
			if err := growthRefresh(ctx, fig, cfg, g); err != nil {
				g.remove()
				return fig, err
			}
		}
		g.remove()
	}
	// Growth ratios of consecutive sizes: linear growth gives the ratio of
	// the sizes.
	for i := 1; i < len(cfg.GrowthFiles); i++ {
		a, b := cfg.GrowthFiles[i-1], cfg.GrowthFiles[i]
		if opens[a] > 0 {
			m := fig.add(fmt.Sprintf("open_growth_%s_%s", countName(a), countName(b)), opens[b]/opens[a], "x")
			fig.note("%s: %s files is %.0f× %s; linear growth would give %.0f", m.Name, groupDigits(b), float64(b)/float64(a), groupDigits(a), float64(b)/float64(a))
			fig.add(fmt.Sprintf("rss_growth_%s_%s", countName(a), countName(b)), rss[b]/rss[a], "x")
		}
	}
	fig.note("rss_growth_*: peak RSS ratio of the two sizes (the ~30 MiB a process starts with included)")
	return fig, nil
}

// growthRefreshReps is how many times each refresh is measured.
const growthRefreshReps = 3

// growthTable is a generated table of the growth figure.
type growthTable struct {
	dir       string
	store     objectstore.Store
	files     int
	version   int64
	generated time.Duration
}

func newGrowthTable(ctx context.Context, env *Env, files int) (*growthTable, error) {
	const perCommit = 10_000
	commits := max(1, files/perCommit)
	spec := TableSpec{Commits: int64(commits), FilesPerCommit: files / commits, CheckpointAt: int64(commits)}
	dir, store, err := env.tempLocalStore("g1-table-")
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := GenerateTable(ctx, store, spec); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The commits before the checkpoint are not read by an open: drop them
	// (as log cleanup would) so the 3,000,000-file table does not keep
	// 1.6 GB of JSON on disk.
	for v := int64(1); v < spec.CheckpointAt; v++ {
		_ = store.Delete(ctx, txlog.CommitKey(v))
	}
	return &growthTable{dir: dir, store: store, files: int(spec.Commits) * spec.FilesPerCommit, version: spec.Commits,
		generated: time.Since(t0)}, nil
}

func (g *growthTable) remove() { os.RemoveAll(g.dir) }

// growthCommits measures commit p50 on the small and the large table,
// interleaved, and their ratio.
func growthCommits(ctx context.Context, fig *Figure, cfg Config, small, large *growthTable) error {
	tables := []*growthTable{small, large}
	snaps := make([]*txlog.Snapshot, 2)
	for i, g := range tables {
		s, err := txlog.Load(ctx, g.store)
		if err != nil {
			return err
		}
		snaps[i] = s
	}
	lat := make([][]time.Duration, 2)
	for c := range cfg.GrowthCommits {
		for i := range tables {
			idx := (i + c) % 2 // alternate which table goes first
			tx := txlog.NewTransaction(snaps[idx], "WRITE", txlog.WithoutAutoCheckpoint())
			tx.Add(txlog.Action{Add: genAdd(9_000_000+int64(c), idx, time.Now().UnixMilli())})
			t0 := time.Now()
			res, err := tx.Commit(ctx)
			if err != nil {
				return fmt.Errorf("bench: growth commit %d on the %d-file table: %w", c, tables[idx].files, err)
			}
			lat[idx] = append(lat[idx], time.Since(t0))
			if res.Snapshot == nil {
				return fmt.Errorf("bench: growth commit %d returned no snapshot", c)
			}
			snaps[idx] = res.Snapshot
		}
	}
	p1, p2 := median(lat[0]), median(lat[1])
	fig.add("commit_p50_"+countName(small.files), ms(p1), "ms")
	fig.add("commit_p50_"+countName(large.files), ms(p2), "ms")
	m := fig.add("commit_growth", ratio(p2, p1), "x")
	fig.note("%s: commit p50 on %s files / on %s files (%.0f× the files)", m.Name, groupDigits(large.files), groupDigits(small.files),
		float64(large.files)/float64(small.files))
	return nil
}

// growthRefresh measures Snapshot.Update after k commits of 10 files.
func growthRefresh(ctx context.Context, fig *Figure, cfg Config, g *growthTable) error {
	base, err := txlog.Load(ctx, g.store)
	if err != nil {
		return err
	}
	v := base.Version()
	var first time.Duration
	for _, k := range cfg.GrowthRefresh {
		var ds []time.Duration
		for range growthRefreshReps {
			for range k {
				v++
				if err := putCommit(ctx, g.store, v, dataCommit(v, 10)); err != nil {
					return err
				}
			}
			t0 := time.Now()
			s, err := base.Update(ctx)
			if err != nil {
				return err
			}
			ds = append(ds, time.Since(t0))
			if s.Version() != v {
				return fmt.Errorf("bench: refresh reached version %d, want %d", s.Version(), v)
			}
			base = s
		}
		d := median(ds)
		fig.add(fmt.Sprintf("refresh_%d", k), ms(d), "ms")
		if first == 0 {
			first = d
		} else {
			fig.add(fmt.Sprintf("refresh_growth_%d", k), ratio(d, first), "x")
		}
	}
	fig.note("refresh_growth_k: refresh after k commits / after %d", cfg.GrowthRefresh[0])
	return nil
}

// countName is 1k, 100k, 1m, 3m.
func countName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dm", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return fmt.Sprint(n)
}
