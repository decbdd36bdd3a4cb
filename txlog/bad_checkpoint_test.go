package txlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"

	"github.com/deltakit/deltakit/internal/testsupport"
)

// A checkpoint whose page header claims a huge page is refused as corrupt
// before the Parquet decoder allocates anything (one changed byte once made
// parquet-go ask for 32 GB and kill the process).
func TestCheckpointWithDamagedPageHeader(t *testing.T) {
	file := filepath.Join(testsupport.CorpusDir(t), "deltars__simple_table_with_checkpoint", "_delta_log", "00000000000000000010.checkpoint.parquet")
	data, err := os.ReadFile(file)
	if err != nil {
		testsupport.Absent(t, "corpus file: %v", err)
	}
	if err := readCheckpointParquet(file, 10, data, true, func(*Action) {}, nil); err != nil {
		t.Fatalf("intact checkpoint: %v", err)
	}
	if len(data) <= 4487 || data[4487] != 0x02 {
		t.Fatalf("byte 4487 of %s is not the page-size byte this test changes", file)
	}
	data[4487] = 0x0e
	err = readCheckpointParquet(file, 10, data, true, func(*Action) {}, nil)
	var cle *CorruptLogError
	if !errors.As(err, &cle) || cle.Version != 10 {
		t.Fatalf("damaged checkpoint: %v, want a *CorruptLogError for version 10", err)
	}
}

// splitCheckpoint rewrites a single-file checkpoint as the two parts of a
// multi-part one (each part has every column, as Spark writes them).
func splitCheckpoint(t *testing.T, data []byte) (part1, part2 []byte) {
	t.Helper()
	var rows []checkpointRow
	err := readCheckpointParquet("cp", 5, data, true, func(a *Action) {
		row, ok := checkpointRowOf(a)
		if !ok {
			t.Fatalf("no checkpoint row for %+v", a)
		}
		rows = append(rows, row)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	half := len(rows) / 2
	return writeParquet(t, rows[:half]), writeParquet(t, rows[half:])
}

// TestDamagedCheckpointFallsBack: a checkpoint that cannot be read (0 bytes,
// garbage, truncated; single-part or one part of a multi-part set) is
// treated as absent: replay starts from the previous checkpoint or from the
// commits, the snapshot reports it and a warning names it. Only when the
// commits it stands for were cleaned up is it an error, naming the file and
// the missing commits.
func TestDamagedCheckpointFallsBack(t *testing.T) {
	ctx := context.Background()
	damages := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func([]byte) []byte { return bytes.Repeat([]byte("not a parquet file "), 20) }},
		{"magic only", func([]byte) []byte { return []byte("PAR1 garbage between the magic bytes PAR1") }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"tail cut", func(b []byte) []byte { return b[:len(b)-5] }},
	}
	layouts := []struct {
		name    string
		damaged int // 0: single file; n: part n of 2
	}{{"single", 0}, {"part 1 of 2", 1}, {"part 2 of 2", 2}}
	histories := []struct {
		name      string
		older     bool    // a good checkpoint of version 2 exists
		deleted   []int64 // commit versions removed
		wantCP    int64   // checkpoint replay starts from; -2: an error
		wantError string
	}{
		{"all commits", false, nil, -1, ""},
		{"all commits and an older checkpoint", true, nil, 2, ""},
		{"older checkpoint, commits before it cleaned", true, []int64{0, 1}, 2, ""},
		{"commits before it cleaned", false, []int64{0, 1, 2, 3, 4}, -2, "commits 0 to 4 are not in the log"},
		{"older checkpoint, commits after it cleaned", true, []int64{0, 1, 2, 3, 4}, -2, "commits 3 to 4 are not in the log"},
	}
	for _, d := range damages {
		for _, lay := range layouts {
			for _, h := range histories {
				for _, hint := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/%s/hint=%v", d.name, lay.name, h.name, hint)
					t.Run(name, func(t *testing.T) {
						m := newMemTable(t)
						m.commit(0, protocolAction(1, 2), metadataAction(map[string]string{"delta.checkpointInterval": "4"}), addAction("f0", nil))
						for v := int64(1); v <= 7; v++ {
							m.commit(v, addAction(fmt.Sprintf("f%d", v), nil))
						}
						if h.older {
							if err := WriteCheckpoint(ctx, m.mustLoad(AtVersion(2))); err != nil {
								t.Fatal(err)
							}
						}
						good, _, err := EncodeCheckpoint(m.mustLoad(AtVersion(5)))
						if err != nil {
							t.Fatal(err)
						}
						var keys []string
						var bad string
						if lay.damaged == 0 {
							bad = CheckpointKey(5)
							keys = []string{bad}
							m.put(bad, d.damage(good))
						} else {
							p1, p2 := splitCheckpoint(t, good)
							for i, part := range [][]byte{p1, p2} {
								k := fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", LogPrefix, 5, i+1, 2)
								keys = append(keys, k)
								if i+1 == lay.damaged {
									bad, part = k, d.damage(part)
								}
								m.put(k, part)
							}
						}
						if hint {
							m.put(LastCheckpointKey, []byte(`{"version":5,"size":8}`))
						} else if err := m.mem.Delete(ctx, LastCheckpointKey); err != nil && !errors.Is(err, objectstore.ErrNotExist) {
							t.Fatal(err)
						}
						for _, v := range h.deleted {
							if err := m.mem.Delete(ctx, CommitKey(v)); err != nil {
								t.Fatal(err)
							}
						}
						var logBuf bytes.Buffer
						logger := slog.New(slog.NewTextHandler(&logBuf, nil))

						s, err := m.load(WithLoadLogger(logger))
						if h.wantCP == -2 {
							var ce *CorruptLogError
							if !errors.As(err, &ce) || ce.File != bad || ce.Version != 5 ||
								!errors.Is(err, ErrLogGap) || !strings.Contains(err.Error(), h.wantError) {
								t.Fatalf("err = %v, want a corrupt log naming %s and %q, matching ErrLogGap", err, bad, h.wantError)
							}
							if _, err := m.load(AtVersion(6)); !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), bad) {
								t.Fatalf("time travel to 6: err = %v, want one naming %s", err, bad)
							}
							return
						}
						if err != nil {
							t.Fatal(err)
						}
						if s.Version() != 7 || s.NumFiles() != 8 || s.CheckpointVersion() != h.wantCP {
							t.Fatalf("version %d, %d files, checkpoint %d; want 7, 8, %d", s.Version(), s.NumFiles(), s.CheckpointVersion(), h.wantCP)
						}
						sk := s.SkippedCheckpoints()
						if len(sk) != 1 || sk[0].Version != 5 || !slices.Equal(sk[0].Files, keys) || !errors.Is(sk[0].Err, ErrCorruptLog) {
							t.Fatalf("skipped checkpoints %+v, want checkpoint 5 (%v)", sk, keys)
						}
						if out := logBuf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "file="+bad) {
							t.Errorf("log %q does not warn about %s", out, bad)
						}
						// time travel to and after the damaged checkpoint
						for _, v := range []int64{5, 6} {
							tv, err := m.load(AtVersion(v))
							if err != nil || tv.NumFiles() != int(v)+1 || tv.CheckpointVersion() != h.wantCP || len(tv.SkippedCheckpoints()) != 1 {
								t.Fatalf("version %d: %v, err %v", v, tv, err)
							}
						}
						if tv, err := m.load(AtTimestamp(time.Now().Add(time.Hour))); err != nil || tv.Version() != 7 {
							t.Fatalf("time travel by timestamp: %v", err)
						}
						// the next commit writes checkpoint 8, which later loads use
						tx := NewTransaction(s, "WRITE")
						tx.Add(addAction("f8", nil))
						res, err := tx.Commit(ctx)
						if err != nil || !res.Checkpointed || res.CheckpointErr != nil {
							t.Fatalf("commit 8: %+v, %v", res, err)
						}
						s8 := m.mustLoad()
						if s8.Version() != 8 || s8.CheckpointVersion() != 8 || s8.NumFiles() != 9 {
							t.Fatalf("after checkpoint 8: version %d from checkpoint %d, %d files", s8.Version(), s8.CheckpointVersion(), s8.NumFiles())
						}
					})
				}
			}
		}
	}
}

// A few garbage bytes framed like a Parquet file, whose footer length claims
// gigabytes, are refused before parquet-go allocates that length.
func TestCheckpointFrameBeforeAllocation(t *testing.T) {
	data := []byte("PAR1 some garbage bytes \xff\xff\xff\x7fPAR1")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := readCheckpointParquet("cp", 3, data, true, func(*Action) {}, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "footer length") {
		t.Fatalf("err = %v, want a corrupt log about the footer length", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("reading %d bytes allocated %d bytes", len(data), n)
	}
}
