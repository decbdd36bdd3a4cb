package txlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

// buildAgedTable commits versions 1..25 (checkpoints at 10 and 20) and sets
// the modification time of every log file of version v to age(v) ago.
func buildAgedTable(t *testing.T, conf map[string]string, now time.Time, age func(v int64) time.Duration) *objectstore.Mem {
	t.Helper()
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	conf["delta.checkpointInterval"] = "10"
	snap := createTestTable(t, mem, conf)
	for i := 1; i <= 25; i++ {
		tx := NewTransaction(snap, "WRITE")
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	for info, err := range mem.List(ctx, LogPrefix, "") {
		if err != nil {
			t.Fatal(err)
		}
		f, ok := parseLogKey(info.Key)
		if !ok {
			continue
		}
		if err := mem.SetModTime(info.Key, now.Add(-age(f.version))); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

func TestCleanupLog(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name     string
		conf     map[string]string
		age      func(v int64) time.Duration
		keepFrom int64
		deleted  int // files deleted: commits + checkpoints
	}{
		{"everything expired", map[string]string{}, func(int64) time.Duration { return 40 * day }, 20, 20 + 1},
		{"commits from 15 on are fresh", map[string]string{}, func(v int64) time.Duration {
			if v >= 15 {
				return day
			}
			return 40 * day
		}, 10, 10},
		{"nothing expired", map[string]string{}, func(int64) time.Duration { return day }, 0, 0},
		{"retention from the table property", map[string]string{"delta.logRetentionDuration": "interval 1 days"},
			func(int64) time.Duration { return 2 * day }, 20, 21},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := buildAgedTable(t, tc.conf, now, tc.age)
			snap, err := Load(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			dry, err := CleanupLog(ctx, snap, now, true)
			if err != nil {
				t.Fatal(err)
			}
			if dry.KeepFrom != tc.keepFrom || len(dry.Deleted) != tc.deleted {
				t.Fatalf("dry run: keep from %d, %d deletions %v; want %d and %d", dry.KeepFrom, len(dry.Deleted), dry.Deleted, tc.keepFrom, tc.deleted)
			}
			if _, err := mem.Stat(ctx, CommitKey(0)); err != nil && tc.deleted > 0 {
				t.Fatalf("dry run deleted commit 0: %v", err)
			}
			res, err := CleanupLog(ctx, snap, now, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range res.Deleted {
				if _, err := mem.Stat(ctx, k); !errors.Is(err, objectstore.ErrNotExist) {
					t.Errorf("%s still there: %v", k, err)
				}
			}
			// Every kept version is still reconstructable, and the latest too.
			latest, err := Load(ctx, mem)
			if err != nil || latest.Version() != 25 || latest.NumFiles() != 25 {
				t.Fatalf("latest after cleanup: %v", err)
			}
			for v := tc.keepFrom; v <= 25; v++ {
				s, err := Load(ctx, mem, AtVersion(v))
				if err != nil {
					t.Fatalf("version %d after cleanup: %v", v, err)
				}
				if s.NumFiles() != int(v) {
					t.Fatalf("version %d has %d files", v, s.NumFiles())
				}
			}
			if tc.keepFrom > 0 {
				_, err := Load(ctx, mem, AtVersion(tc.keepFrom-1))
				var vnf *VersionNotFoundError
				if !errors.As(err, &vnf) || vnf.Earliest != tc.keepFrom {
					t.Fatalf("version %d after cleanup: %v, want VersionNotFound with earliest %d", tc.keepFrom-1, err, tc.keepFrom)
				}
			}
		})
	}
}

// A crash after the checkpoint file is written but before _last_checkpoint
// is updated leaves a readable table that uses the new checkpoint.
func TestCrashBetweenCheckpointAndLastCheckpoint(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	createTestTable(t, mem, map[string]string{"delta.checkpointInterval": "5"})
	store := faultstore.New(mem)
	snap, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	store.Inject(faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: LastCheckpointKey, Nth: 2, Phase: faultstore.Before, Kind: faultstore.Crash})
	for i := 1; i <= 10; i++ {
		tx := NewTransaction(snap, "WRITE")
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
		if i == 10 && (res.CheckpointErr == nil || !errors.Is(res.CheckpointErr, faultstore.ErrCrashed)) {
			t.Fatalf("checkpoint at 10: %v, want the injected crash", res.CheckpointErr)
		}
	}
	hint, err := readLastCheckpoint(ctx, mem)
	if err != nil || hint == nil || hint.Version != 5 {
		t.Fatalf("_last_checkpoint: %+v %v, want version 5", hint, err)
	}
	if _, err := mem.Stat(ctx, CheckpointKey(10)); err != nil {
		t.Fatalf("checkpoint 10: %v", err)
	}
	loaded, err := Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Version() != 10 || loaded.NumFiles() != 10 || loaded.CheckpointVersion() != 10 {
		t.Fatalf("loaded version %d, %d files, checkpoint %d", loaded.Version(), loaded.NumFiles(), loaded.CheckpointVersion())
	}
}

// A checkpoint the snapshot could not read is never the oldest one kept:
// cleanup would delete the commits that replay goes around it with.
func TestCleanupLogKeepsCommitsBeforeUnreadableCheckpoint(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	mem := buildAgedTable(t, map[string]string{}, now, func(int64) time.Duration { return 40 * 24 * time.Hour })
	if err := mem.Put(ctx, CheckpointKey(20), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if err := mem.SetModTime(CheckpointKey(20), now.Add(-40*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(ctx, mem, WithLoadLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion() != 10 || len(snap.SkippedCheckpoints()) != 1 {
		t.Fatalf("loaded from checkpoint %d, skipped %+v", snap.CheckpointVersion(), snap.SkippedCheckpoints())
	}
	res, err := CleanupLog(ctx, snap, now, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.KeepFrom != 10 || len(res.Deleted) != 10 {
		t.Fatalf("keep from %d, deleted %v; want 10 and commits 0..9", res.KeepFrom, res.Deleted)
	}
	after, err := Load(ctx, mem, WithLoadLogger(slog.New(slog.DiscardHandler)))
	if err != nil || after.Version() != 25 || after.NumFiles() != 25 {
		t.Fatalf("after cleanup: %v, %v", after, err)
	}
}
