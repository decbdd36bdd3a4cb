package table

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/deltakit/deltakit/txlog"
)

// The maintenance settings are the table's properties when set, Spark's
// defaults when unset, and a value that is not an interval gives the
// default (what CleanupLog applies) with an error naming the property.
func TestMaintenanceSettings(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name         string
		props        map[string]string
		interval     int64
		logRet       time.Duration
		fileRet      time.Duration
		logErr, fErr bool
	}{
		{"defaults", nil, 10, 30 * 24 * time.Hour, 7 * 24 * time.Hour, false, false},
		{"set", map[string]string{PropCheckpointInterval: "25", PropLogRetentionDuration: "interval 2 days",
			PropDeletedFileRetentionDuration: "interval 36 hours"}, 25, 48 * time.Hour, 36 * time.Hour, false, false},
		{"not intervals", map[string]string{PropCheckpointInterval: "-3", PropLogRetentionDuration: "a month",
			PropDeletedFileRetentionDuration: "soon"}, 10, 30 * 24 * time.Hour, 7 * 24 * time.Hour, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbl, _ := maintTable(t, false, nil)
			if tc.props != nil {
				// Through txlog: Create and SetProperties refuse bad values,
				// a table another writer wrote may still hold them.
				tx := txlog.NewTransaction(tbl.Snapshot(), "SET TBLPROPERTIES")
				m := *tbl.Snapshot().Metadata()
				m.Configuration = maps.Clone(tc.props)
				tx.UpdateMetadata(&m)
				if _, err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				var err error
				if tbl, err = tbl.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := tbl.CheckpointInterval(); got != tc.interval {
				t.Errorf("CheckpointInterval = %d, want %d", got, tc.interval)
			}
			d, err := tbl.LogRetention()
			if d != tc.logRet || (err != nil) != tc.logErr || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
				t.Errorf("LogRetention = %v, %v; want %v, error %t", d, err, tc.logRet, tc.logErr)
			}
			d, err = tbl.DeletedFileRetention()
			if d != tc.fileRet || (err != nil) != tc.fErr || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
				t.Errorf("DeletedFileRetention = %v, %v; want %v, error %t", d, err, tc.fileRet, tc.fErr)
			}
		})
	}
}
