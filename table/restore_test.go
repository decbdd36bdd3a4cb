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

func TestRestore(t *testing.T) {
	ctx := context.Background()
	for _, dv := range []bool{false, true} {
		for _, partitioned := range []bool{false, true} {
			t.Run(map[bool]string{false: "cow", true: "dv"}[dv]+map[bool]string{false: "", true: "/partitioned"}[partitioned], func(t *testing.T) {
				var props map[string]string
				if dv {
					props = dvProps
				}
				tbl, _ := maintTable(t, partitioned, props)
				tbl = maintAppend(t, tbl, maintRowsFor(0, 20, "ams", "ber"))
				v1 := tbl.Version()
				want := maintScan(t, tbl)
				tbl = maintAppend(t, tbl, maintRowsFor(20, 10, "cph"))
				var err error
				if tbl, _, err = tbl.Delete(ctx, Col("id").Lt(3)); err != nil {
					t.Fatal(err)
				}
				if tbl, _, err = tbl.Update(ctx, Col("city").Eq("ber"), map[string]Value{"v": Lit(9.0)}); err != nil {
					t.Fatal(err)
				}
				latest := tbl.Version()
				nt, res, err := tbl.Restore(ctx, ToVersion(v1))
				if err != nil {
					t.Fatal(err)
				}
				if !res.Committed || nt.Version() != latest+1 {
					t.Fatalf("restore committed %v at %d", res.Committed, nt.Version())
				}
				re, err := Open(ctx, "", WithStore(nt.Store()))
				if err != nil {
					t.Fatal(err)
				}
				if got := maintScan(t, re); !slices.Equal(got, want) {
					t.Fatalf("rows after restore:\n got %v\nwant %v", got, want)
				}
				ci := lastCommitInfo(t, re)
				if ci.Operation != "RESTORE" || ci.OperationParameters["version"] != "1" || ci.OperationMetrics["numOfFilesAfterRestore"] == nil {
					t.Errorf("commitInfo %s params %v metrics %v", ci.Operation, ci.OperationParameters, ci.OperationMetrics)
				}
				// The versions in between stay readable.
				mid, err := Open(ctx, "", WithStore(nt.Store()), AtVersion(latest))
				if err != nil || len(maintScan(t, mid)) != 27 {
					t.Fatalf("version %d after restore: %v", latest, err)
				}
				// Restoring again to the same version changes nothing.
				if _, res, err := re.Restore(ctx, ToVersion(v1)); err != nil || res.Committed {
					t.Fatalf("second restore: committed %v, %v", res != nil && res.Committed, err)
				}
			})
		}
	}
}

func TestRestoreBadInput(t *testing.T) {
	ctx := context.Background()
	tbl, mem := maintTable(t, false, nil)
	tbl = maintAppend(t, tbl, maintRowsFor(0, 5, "ams"))
	v1 := tbl.Version()
	tbl, _, err := tbl.Delete(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The file of version 1 is vacuumed by hand.
	gone := txlog.DecodePath(mustOpen(t, mem, v1).Snapshot().Files()[0].Path)
	cases := []struct {
		name string
		to   RestoreTarget
		prep func()
		want error
		msg  string
	}{
		{"future version", ToVersion(99), nil, ErrInvalidArgument, "99"},
		{"current version", ToVersion(tbl.Version()), nil, ErrInvalidArgument, "not before"},
		{"negative", ToVersion(-1), nil, ErrInvalidArgument, "negative"},
		{"future timestamp", ToTimestamp(time.Now().Add(24 * time.Hour)), nil, ErrInvalidArgument, "after the latest commit"},
		{"vacuumed file", ToVersion(v1), func() {
			if err := mem.Delete(ctx, gone); err != nil {
				t.Fatal(err)
			}
		}, objectstore.ErrNotExist, gone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.prep != nil {
				c.prep()
			}
			before := maintKeys(t, mem)
			_, _, err := tbl.Restore(ctx, c.to)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v naming %q", err, c.want, c.msg)
			}
			if got := maintKeys(t, mem); !slices.Equal(got, before) {
				t.Fatalf("store changed")
			}
		})
	}
	// An append-only table refuses a restore that removes files.
	ao, _ := maintTable(t, false, map[string]string{"delta.appendOnly": "true"})
	ao = maintAppend(t, ao, maintRowsFor(0, 5, "ams"))
	ao = maintAppend(t, ao, maintRowsFor(5, 5, "ams"))
	if _, _, err := ao.Restore(ctx, ToVersion(1)); !errors.Is(err, ErrAppendOnly) {
		t.Fatalf("restore of an append-only table: %v, want ErrAppendOnly", err)
	}
}

func mustOpen(t *testing.T, store objectstore.Store, v int64) *Table {
	t.Helper()
	tbl, err := Open(context.Background(), "", WithStore(store), AtVersion(v))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
