package txlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
)

// liveRows returns sum(numRecords) minus DV cardinalities, and false when a
// file lacks numRecords. (The bitmaps themselves are checked against their
// cardinalities by txlog/dvcodec's TestCorpusDeletionVectors.)
func liveRows(s *Snapshot) (int64, bool) {
	var rows int64
	for _, a := range s.Files() {
		n, ok := a.NumRecords()
		if !ok {
			return 0, false
		}
		rows += n
		if dv := a.DeletionVector; dv != nil {
			rows -= dv.Cardinality
		}
	}
	return rows, true
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestCorpus checks every table of the conformance corpus against its
// expected.json: latest version, protocol, schema, checkpoints, live rows at
// the latest version and per version (time travel), incremental Update, and
// the expected failures.
func TestCorpus(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	var mu sync.Mutex
	var read, refused, failedAsExpected, rowChecks, rowSkips []string
	for _, exp := range testsupport.CorpusTables(t, dir) {
		t.Run(exp.Table, func(t *testing.T) {
			root := filepath.Join(dir, exp.Table, exp.Root)
			store, err := objectstore.NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			snap, err := Load(ctx, store)
			switch exp.Expect {
			case "error":
				if err == nil {
					t.Fatalf("Load succeeded at version %d, want an error", snap.Version())
				}
				if !isTypedLogError(err) {
					t.Fatalf("Load error is not a typed txlog error: %v", err)
				}
				t.Logf("fails as expected: %v", err)
				mu.Lock()
				failedAsExpected = append(failedAsExpected, exp.Table)
				mu.Unlock()
				return
			case "refuse":
				var fe *UnsupportedFeatureError
				if !errors.As(err, &fe) || !errors.Is(err, ErrUnsupportedFeature) {
					t.Fatalf("Load = %v, want *UnsupportedFeatureError", err)
				}
				checkRefusal(t, fe, exp.Protocol.ReaderFeatures)
				mu.Lock()
				refused = append(refused, exp.Table)
				mu.Unlock()
				return
			}
			if err != nil {
				var fe *UnsupportedFeatureError
				if errors.As(err, &fe) && fe.Reader {
					checkRefusal(t, fe, exp.Protocol.ReaderFeatures)
					t.Logf("REFUSED (allowed, gap): %v", err)
					mu.Lock()
					refused = append(refused, exp.Table+" ("+strings.Join(fe.Features, ",")+")")
					mu.Unlock()
					return
				}
				t.Fatalf("Load: %v", err)
			}
			mu.Lock()
			read = append(read, exp.Table)
			mu.Unlock()

			if snap.Version() != exp.LatestVersion {
				t.Errorf("Version() = %d, want %d", snap.Version(), exp.LatestVersion)
			}
			p := snap.Protocol()
			if p.MinReaderVersion != exp.Protocol.MinReaderVersion || p.MinWriterVersion != exp.Protocol.MinWriterVersion {
				t.Errorf("protocol = (%d,%d), want (%d,%d)", p.MinReaderVersion, p.MinWriterVersion,
					exp.Protocol.MinReaderVersion, exp.Protocol.MinWriterVersion)
			}
			if !slices.Equal(sortedCopy(p.ReaderFeatures), sortedCopy(exp.Protocol.ReaderFeatures)) {
				t.Errorf("readerFeatures = %v, want %v", p.ReaderFeatures, exp.Protocol.ReaderFeatures)
			}
			// expected.json lists reader-writer features under readerFeatures only
			if got, want := writerOnly(p.WriterFeatures, p.ReaderFeatures), writerOnly(exp.Protocol.WriterFeatures, p.ReaderFeatures); !slices.Equal(got, want) {
				t.Errorf("writerFeatures = %v, want %v", p.WriterFeatures, exp.Protocol.WriterFeatures)
			}
			if snap.Schema() == nil || len(snap.Schema().Fields) == 0 {
				t.Errorf("Schema() is empty")
			}
			for _, c := range snap.PartitionColumns() {
				if snap.Schema().Field(c) == nil {
					t.Errorf("partition column %q is not in the schema", c)
				}
			}
			// checkpoint used for the latest version: the newest listed one
			wantCP := int64(-1)
			for _, v := range exp.CheckpointVersions {
				if v <= snap.Version() {
					wantCP = max(wantCP, v)
				}
			}
			if snap.CheckpointVersion() != wantCP {
				t.Errorf("CheckpointVersion() = %d, want %d", snap.CheckpointVersion(), wantCP)
			}

			rows, ok := liveRows(snap)
			switch {
			case !ok:
				mu.Lock()
				rowSkips = append(rowSkips, exp.Table)
				mu.Unlock()
			case exp.RowsLatest != nil:
				if rows != *exp.RowsLatest {
					t.Errorf("live rows at latest = %d, want %d", rows, *exp.RowsLatest)
				}
				mu.Lock()
				rowChecks = append(rowChecks, exp.Table)
				mu.Unlock()
			}

			// time travel by version
			versions := make([]int64, 0, len(exp.RowsByVersion))
			for k := range exp.RowsByVersion {
				v, err := strconv.ParseInt(k, 10, 64)
				if err != nil {
					t.Fatalf("rows_by_version key %q", k)
				}
				versions = append(versions, v)
			}
			slices.Sort(versions)
			for _, v := range versions {
				sv, err := Load(ctx, store, AtVersion(v))
				if err != nil {
					t.Errorf("Load(AtVersion(%d)): %v", v, err)
					continue
				}
				if sv.Version() != v {
					t.Errorf("AtVersion(%d).Version() = %d", v, sv.Version())
				}
				if r, ok := liveRows(sv); ok && r != exp.RowsByVersion[strconv.FormatInt(v, 10)] {
					t.Errorf("live rows at version %d = %d, want %d", v, r, exp.RowsByVersion[strconv.FormatInt(v, 10)])
				}
			}
			for _, v := range exp.CheckpointVersions {
				sv, err := Load(ctx, store, AtVersion(v))
				if err != nil {
					t.Errorf("Load(AtVersion(%d)) at a checkpoint: %v", v, err)
					continue
				}
				if sv.CheckpointVersion() != v {
					t.Errorf("AtVersion(%d).CheckpointVersion() = %d, want %d", v, sv.CheckpointVersion(), v)
				}
			}
			// a version after the latest is not found, naming the latest
			_, err = Load(ctx, store, AtVersion(exp.LatestVersion+1))
			var vnf *VersionNotFoundError
			if !errors.As(err, &vnf) || vnf.Latest != exp.LatestVersion {
				t.Errorf("Load(AtVersion(latest+1)) = %v, want *VersionNotFoundError with Latest %d", err, exp.LatestVersion)
			}
			// incremental update from the oldest loadable version reaches the latest state
			if len(versions) > 1 {
				old, err := Load(ctx, store, AtVersion(versions[0]))
				if err != nil {
					t.Fatalf("Load(AtVersion(%d)): %v", versions[0], err)
				}
				up, err := old.Update(ctx)
				if err != nil {
					t.Fatalf("Update from %d: %v", versions[0], err)
				}
				if up.Version() != snap.Version() || !sameFiles(up, snap) {
					t.Errorf("Update from %d: version %d with %d files, want version %d with %d files",
						versions[0], up.Version(), up.NumFiles(), snap.Version(), snap.NumFiles())
				}
				if again, err := up.Update(ctx); err != nil || again != up {
					t.Errorf("second Update = %p, %v; want the same snapshot", again, err)
				}
			}
		})
	}
	sort.Strings(read)
	sort.Strings(refused)
	fmt.Printf("corpus: %d tables: %d read, %d refused, %d failed as expected; live rows checked on %d, skipped on %d (no numRecords)\n",
		len(read)+len(refused)+len(failedAsExpected), len(read), len(refused), len(failedAsExpected), len(rowChecks), len(rowSkips))
	for _, r := range refused {
		fmt.Printf("corpus: REFUSED %s\n", r)
	}
}

func checkRefusal(t *testing.T, fe *UnsupportedFeatureError, readerFeatures []string) {
	t.Helper()
	if !fe.Reader {
		t.Errorf("UnsupportedFeatureError.Reader = false, want true")
	}
	var want []string
	for _, f := range readerFeatures {
		if !slices.Contains(SupportedReaderFeatures(), f) {
			want = append(want, f)
		}
	}
	slices.Sort(want)
	if !slices.Equal(fe.Features, want) {
		t.Errorf("refused features = %v, want %v", fe.Features, want)
	}
	for _, f := range want {
		if !strings.Contains(fe.Error(), f) {
			t.Errorf("error %q does not name %q", fe.Error(), f)
		}
	}
}

// writerOnly returns the sorted features of w that are not in r.
func writerOnly(w, r []string) []string {
	var out []string
	for _, f := range w {
		if !slices.Contains(r, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

func isTypedLogError(err error) bool {
	for _, target := range []error{ErrCorruptLog, ErrNoMetadata, ErrNoProtocol, ErrUnsupportedProtocol,
		ErrUnsupportedFeature, ErrVersionNotFound, ErrTableNotFound} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func sameFiles(a, b *Snapshot) bool {
	fa, fb := a.Files(), b.Files()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i].Key() != fb[i].Key() {
			return false
		}
	}
	return true
}

// copyLogToMem copies a corpus table's _delta_log into an in-memory store.
func copyLogToMem(t *testing.T, root string) *objectstore.Mem {
	t.Helper()
	mem := objectstore.NewMem(filepath.Base(root))
	logDir := filepath.Join(root, "_delta_log")
	err := filepath.WalkDir(logDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		return mem.Put(context.Background(), filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// TestCorpusTimeTravelByTimestamp sets every commit file's modification time
// to its commitInfo.timestamp (git keeps no mtimes) and checks that
// AtTimestamp at each commit's time selects that commit, and that a time
// before the first commit is not found.
func TestCorpusTimeTravelByTimestamp(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	checked := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		root := filepath.Join(dir, e.Name())
		mem := copyLogToMem(t, root)
		latest, err := Load(ctx, mem)
		if err != nil || latest.Version() == 0 || latest.ictActiveAt(latest.Version()) {
			continue // unreadable, single-version or ICT tables are covered elsewhere
		}
		type vt struct {
			v  int64
			ts int64
		}
		var times []vt
		monotonic := true
		for c, err := range Commits(ctx, mem, 0, -1) {
			if err != nil {
				times = nil
				break
			}
			ci := c.CommitInfo()
			if ci == nil || ci.Timestamp == 0 {
				times = nil
				break
			}
			if n := len(times); n > 0 && ci.Timestamp <= times[n-1].ts {
				monotonic = false
			}
			times = append(times, vt{c.Version, ci.Timestamp})
			if err := mem.SetModTime(CommitKey(c.Version), time.UnixMilli(ci.Timestamp)); err != nil {
				t.Fatal(err)
			}
		}
		if len(times) < 2 || !monotonic || times[0].v != 0 {
			continue
		}
		checked++
		t.Run(e.Name(), func(t *testing.T) {
			for _, x := range times {
				s, err := Load(ctx, mem, AtTimestamp(time.UnixMilli(x.ts)))
				if err != nil {
					t.Fatalf("AtTimestamp(%d): %v", x.ts, err)
				}
				if s.Version() != x.v || s.CommitTimestamp().UnixMilli() != x.ts {
					t.Errorf("AtTimestamp(%d) = version %d at %d, want %d", x.ts, s.Version(), s.CommitTimestamp().UnixMilli(), x.v)
				}
			}
			if _, err := Load(ctx, mem, AtTimestamp(time.UnixMilli(times[0].ts-1))); !errors.Is(err, ErrVersionNotFound) {
				t.Errorf("before the first commit: %v", err)
			}
		})
	}
	if checked == 0 {
		t.Error("no corpus table was usable for time travel by timestamp")
	}
	t.Logf("time travel by timestamp checked on %d tables", checked)
}
