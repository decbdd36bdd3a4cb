package table

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// vacuumFixture builds a partitioned table whose latest version has two live
// files (after an overwrite), four removed files (removed now), an orphan
// data file never committed (written now) and files vacuum must never touch
// (hidden ones, the log), and a change data file never committed (written
// now).
type vacuumFixture struct {
	tbl     *Table
	mem     *objectstore.Mem
	live    []string
	removed []string
	orphan  string
	// changeData is a change data file: never live, deleted like an
	// orphan once older than the retention.
	changeData string
	hidden     []string
	rows       []string
}

func newVacuumFixture(t *testing.T, props map[string]string) *vacuumFixture {
	t.Helper()
	ctx := context.Background()
	tbl, mem := maintTable(t, true, props)
	tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams", "ber"))
	tbl = maintAppend(t, tbl, maintRowsFor(10, 10, "ams", "ber"))
	removed := maintLiveKeys(tbl)
	tbl, err := tbl.OverwriteRows(ctx, maintRowsFor(100, 5, "ams", "ber"))
	if err != nil {
		t.Fatal(err)
	}
	f := &vacuumFixture{tbl: tbl, mem: mem, live: maintLiveKeys(tbl), removed: removed,
		orphan:     "city=ams/part-00000-orphan-c000.snappy.parquet",
		changeData: "_change_data/city=ams/cdc-00000-x-c000.snappy.parquet",
		hidden:     []string{"_hidden/part-0.parquet", "city=ams/.part-0.parquet.crc", "_change_data/.cdc-0.parquet.crc"}}
	for _, k := range append([]string{f.orphan, f.changeData}, f.hidden...) {
		if err := mem.Put(ctx, k, []byte("PAR1 not really PAR1")); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.live) != 2 || len(f.removed) != 4 {
		t.Fatalf("fixture: %d live, %d removed files", len(f.live), len(f.removed))
	}
	f.rows = maintScan(t, tbl)
	return f
}

func TestVacuum(t *testing.T) {
	const day = 24 * time.Hour
	type want int
	const (
		none want = iota
		removedAndOrphan
	)
	cases := []struct {
		name    string
		props   map[string]string
		clock   func() time.Time // the table's WithClock; nil: time.Now
		opts    []VacuumOption
		wantErr error
		want    want
	}{
		{name: "within default retention", clock: maintAt(time.Hour), want: none},
		{name: "after default retention", clock: maintAt(8 * day), want: removedAndOrphan},
		{name: "dry run deletes nothing", clock: maintAt(8 * day), opts: []VacuumOption{WithVacuumDryRun(true)}, want: removedAndOrphan},
		{name: "retention below the table's is refused", clock: maintAt(2 * time.Hour), opts: []VacuumOption{WithVacuumRetention(time.Hour)}, wantErr: ErrRetentionTooShort},
		{name: "retention below the table's with force", clock: maintAt(2 * time.Hour), opts: []VacuumOption{WithVacuumRetention(time.Hour), WithVacuumForce(true)}, want: removedAndOrphan},
		{name: "zero retention with force", clock: maintAt(time.Second), opts: []VacuumOption{WithVacuumRetention(0), WithVacuumForce(true)}, want: removedAndOrphan},
		{name: "longer retention keeps files removed 8 days ago", clock: maintAt(8 * day), opts: []VacuumOption{WithVacuumRetention(30 * day)}, want: none},
		{name: "longer retention after it passed", clock: maintAt(31 * day), opts: []VacuumOption{WithVacuumRetention(30 * day)}, want: removedAndOrphan},
		{name: "table property 1 day, 12 hours later", props: map[string]string{txlog.PropDeletedFileRetentionDuration: "interval 1 day"}, clock: maintAt(12 * time.Hour), want: none},
		{name: "table property 1 day, 2 days later", props: map[string]string{txlog.PropDeletedFileRetentionDuration: "interval 1 day"}, clock: maintAt(2 * day), want: removedAndOrphan},
		{name: "table property 1 day, retention 1 hour refused", props: map[string]string{txlog.PropDeletedFileRetentionDuration: "interval 1 day"}, opts: []VacuumOption{WithVacuumRetention(time.Hour)}, wantErr: ErrRetentionTooShort},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newVacuumFixture(t, tc.props)
			before := maintKeys(t, f.mem)
			tbl := f.tbl
			if tc.clock != nil {
				tbl = reopenAt(t, tbl, tc.clock)
			}
			res, err := tbl.Vacuum(ctx, tc.opts...)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if got := maintKeys(t, f.mem); !slices.Equal(got, before) {
					t.Errorf("a refused vacuum changed the store: %v -> %v", before, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var wantPaths []string
			if tc.want == removedAndOrphan {
				wantPaths = append(slices.Clone(f.removed), f.orphan, f.changeData)
				slices.Sort(wantPaths)
			}
			var got []string
			for _, vf := range res.Files {
				got = append(got, vf.Path)
				isRemoved := slices.Contains(f.removed, vf.Path)
				if isRemoved == vf.Removed.IsZero() {
					t.Errorf("%s: Removed = %v, want set only for removed files", vf.Path, vf.Removed)
				}
			}
			if !slices.Equal(got, wantPaths) {
				t.Errorf("vacuum files = %v, want %v", got, wantPaths)
			}
			after := maintKeys(t, f.mem)
			dry := res.DryRun
			for _, k := range before {
				deleted := !slices.Contains(after, k)
				shouldGo := !dry && slices.Contains(wantPaths, k)
				if deleted != shouldGo {
					t.Errorf("%s: deleted = %v, want %v", k, deleted, shouldGo)
				}
			}
			for _, k := range append(slices.Clone(f.hidden), f.live...) {
				if !slices.Contains(after, k) {
					t.Errorf("vacuum deleted %s", k)
				}
			}
			for _, k := range before {
				if len(k) > len(txlog.LogPrefix) && k[:len(txlog.LogPrefix)] == txlog.LogPrefix && !slices.Contains(after, k) {
					t.Errorf("vacuum deleted log file %s", k)
				}
			}
			maintAssertLive(t, f.tbl)
			if rows := maintScan(t, f.tbl); !slices.Equal(rows, f.rows) {
				t.Errorf("rows after vacuum = %v, want %v", rows, f.rows)
			}
			if res.Version != f.tbl.Version() {
				t.Errorf("Version = %d, want %d", res.Version, f.tbl.Version())
			}
		})
	}
}

// TestVacuumNeverDeletesLiveFiles ages every object by 100 days and vacuums
// with zero retention: the files of the latest snapshot must all survive,
// also when vacuum is called on an older version of the table.
func TestVacuumNeverDeletesLiveFiles(t *testing.T) {
	ctx := context.Background()
	f := newVacuumFixture(t, nil)
	for _, k := range maintKeys(t, f.mem) {
		if err := f.mem.SetModTime(k, time.Now().Add(-100*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	old, err := Open(ctx, "", WithStore(f.mem), AtVersion(1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := old.Vacuum(ctx, WithVacuumRetention(0), WithVacuumForce(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != f.tbl.Version() {
		t.Errorf("vacuum worked on version %d, want the latest %d", res.Version, f.tbl.Version())
	}
	if len(res.Files) != len(f.removed)+2 {
		t.Errorf("deleted %d files, want %d (the removed ones, the orphan, the change data file)", len(res.Files), len(f.removed)+2)
	}
	maintAssertLive(t, f.tbl)
	if rows := maintScan(t, f.tbl); !slices.Equal(rows, f.rows) {
		t.Errorf("rows after vacuum = %v, want %v", rows, f.rows)
	}
	rep, err := Verify(ctx, f.mem)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("verify after vacuum: %v", rep.Problems)
	}
}

// Vacuum deletes change data files older than the retention, as Spark's
// VACUUM does (they are never live in a snapshot), and keeps newer ones:
// the feed of the versions whose files are kept still reads, the table's
// rows are unchanged.
func TestVacuumChangeData(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("vacuum-cdf")
	c := buildCDFTable(t, mem, "vacuum", true, false)
	rows := maintScan(t, c.tbl)
	// Version 9's change data files (the MERGE) stay recent; every other
	// version's are aged past the default retention.
	recent := map[string]bool{}
	for _, cd := range cdcActions(t, c.tbl, 9) {
		recent[txlog.DecodePath(cd.Path)] = true
	}
	var aged []string
	for _, k := range maintKeys(t, mem) {
		if strings.HasPrefix(k, "_change_data/") && !recent[k] {
			aged = append(aged, k)
		}
	}
	if len(aged) == 0 || len(recent) == 0 {
		t.Fatalf("fixture: %d aged, %d recent change data files", len(aged), len(recent))
	}
	// Within the retention nothing goes.
	res, err := reopenAt(t, c.tbl, maintAt(time.Hour)).Vacuum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 0 {
		t.Fatalf("vacuum within the retention deleted %v", res.Files)
	}
	for _, k := range aged {
		if err := mem.SetModTime(k, time.Now().Add(-8*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if res, err = c.tbl.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Files {
		got = append(got, f.Path)
	}
	slices.Sort(aged)
	if !slices.Equal(got, aged) {
		t.Errorf("vacuum deleted %v, want the aged change data files %v", got, aged)
	}
	after := maintKeys(t, mem)
	for k := range recent {
		if !slices.Contains(after, k) {
			t.Errorf("vacuum deleted the recent change data file %s", k)
		}
	}
	if got := maintScan(t, c.tbl); !slices.Equal(got, rows) {
		t.Errorf("rows after vacuum %v, want %v", got, rows)
	}
	feed, err := c.tbl.Changes(ctx, 9, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(slices.Concat(c.byVersion[9], c.byVersion[10])))
	if got := feedKeys(t, feed, nil); !slices.Equal(got, want) {
		t.Errorf("changes 9..10 after vacuum:\n%s", diffRows(got, want))
	}
}
