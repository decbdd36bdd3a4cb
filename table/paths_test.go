package table

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/dvcodec"
	"github.com/deltakit/deltakit/value"
)

// countingTransport fails every request and counts them: a test that uses
// it as the S3 client's transport sees any attempt to reach S3.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, errors.New("countingTransport: no network in this test")
}

// putDVFile writes a deletion vector file (format version byte, then one
// DV: big-endian size, bitmap, CRC-32) deleting rows and returns the
// descriptor's offset and size.
func putDVFile(t *testing.T, store objectstore.Store, key string, rows ...uint64) (int32, int32) {
	t.Helper()
	raw, err := dvcodec.EncodeBitmap(roaring64.BitmapOf(rows...))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte{1}
	data = binary.BigEndian.AppendUint32(data, uint32(len(raw)))
	data = append(data, raw...)
	data = binary.BigEndian.AppendUint32(data, crc32.ChecksumIEEE(raw))
	if err := store.Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
	return 1, int32(len(raw))
}

// TestPathsOutsideTable: every spelling of a path outside the table root,
// for data files and deletion vector files, is refused by scans
// (ErrPathOutsideTable, naming the path) before any store is opened for
// it, is reported by Verify, and is read when WithAllowedRoots allows its
// root. Spellings of paths inside the root are read.
func TestPathsOutsideTable(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	otherStore, err := objectstore.NewLocal(other)
	if err != nil {
		t.Fatal(err)
	}
	// A readable data file and DV file outside the table: following the
	// path would succeed, so only a refusal makes the scan fail.
	outFile := newScanFixtureIn(t, otherStore, sch, nil, nil, nil).file("out", value.Row{int64(2)})
	outKey := txlog.DecodePath(outFile.Path) // part-out.snappy.parquet
	dvOff, dvSize := putDVFile(t, otherStore, "dv.bin", 0)
	slash := filepath.ToSlash

	// {root} is the table's directory, {other} the directory next to it.
	tests := []struct {
		name      string
		path      string // add.path; "" keeps the table's own file
		dv        string // DV pathOrInlineDv; "" for none
		dvType    string // "p" (absolute) or "u" (relative)
		inside    bool   // the path is inside the root: the scan reads it
		allowable bool   // WithAllowedRoots({other}) makes it readable (never a relative path)
	}{
		{name: "file:/// outside", path: "file://{other}/" + outKey, allowable: true},
		{name: "file:/ outside", path: "file:{other}/" + outKey, allowable: true},
		{name: "file://localhost/ outside", path: "file://localhost{other}/" + outKey, allowable: true},
		{name: "FILE:/// scheme case", path: "FILE://{other}/" + outKey, allowable: true},
		{name: "rooted path outside", path: "{other}/" + outKey, allowable: true},
		{name: "etc passwd", path: "file:///etc/passwd"},
		{name: "s3 in a local table", path: "s3://other-bucket/t/part-0.parquet"},
		{name: "s3a in a local table", path: "s3a://other-bucket/t/part-0.parquet"},
		{name: "file with a host", path: "file://otherhost{other}/" + outKey},
		{name: "relative ..", path: "../other/" + outKey},
		{name: "percent-encoded %2e%2e", path: "%2e%2e/other/" + outKey},
		{name: "percent-encoded slash", path: "..%2Fother%2F" + outKey},
		{name: "absolute through ..", path: "file://{root}/../other/" + outKey, allowable: true},
		{name: "sibling sharing the root's prefix", path: "file://{root}2/x.parquet"},
		{name: "the root itself", path: "file://{root}"},
		{name: "dv p outside", dv: "file://{other}/dv.bin", dvType: "p", allowable: true},
		{name: "dv p s3", dv: "s3://other-bucket/dv.bin", dvType: "p"},
		{name: "dv p encoded ..", dv: "file://{root}/%2e%2e/other/dv.bin", dvType: "p", allowable: true},
		{name: "dv u with .. prefix", dv: "../^-aqEH.-t@S}K{vb[*k^", dvType: "u"},
		{name: "file:/// inside", path: "file://{root}/part-in.snappy.parquet", inside: true},
		{name: "file:/ inside", path: "file:{root}/part-in.snappy.parquet", inside: true},
		{name: "localhost inside", path: "file://localhost{root}/part-in.snappy.parquet", inside: true},
		{name: "relative with a harmless ..", path: "x/../part-in.snappy.parquet", inside: true},
		{name: "dv p inside", dv: "file://{root}/dv.bin", dvType: "p", inside: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tdir := filepath.Join(dir, fmt.Sprintf("t%02d", i))
			if err := os.MkdirAll(tdir, 0o755); err != nil {
				t.Fatal(err)
			}
			rootStore, err := objectstore.NewLocal(tdir)
			if err != nil {
				t.Fatal(err)
			}
			expand := strings.NewReplacer("{root}", slash(tdir), "{other}", slash(other)).Replace
			f := newScanFixtureIn(t, rootStore, sch, nil, nil, nil)
			in := f.file("in", value.Row{int64(1)}, value.Row{int64(3)})
			putDVFile(t, rootStore, "dv.bin", 0)
			a := *in
			if tc.path != "" {
				a.Path = expand(tc.path)
				if !tc.inside {
					a.Size = outFile.Size
				}
			}
			if tc.dv != "" {
				a.DeletionVector = &txlog.DeletionVectorDescriptor{StorageType: tc.dvType, PathOrInlineDv: expand(tc.dv),
					Offset: &dvOff, SizeInBytes: dvSize, Cardinality: 1}
			}
			f.commit(&a)

			// S3 must never be reached: its client fails and counts requests.
			rt := &countingTransport{}
			s3opts := objectstore.WithS3Options(objectstore.WithHTTPClient(&http.Client{Transport: rt}),
				objectstore.WithRegion("us-east-1"), objectstore.WithCredentials("k", "s"),
				objectstore.WithEndpoint("http://127.0.0.1:1"), objectstore.WithRetry(1, 0))
			tbl, err := Open(ctx, tdir, WithStoreOptions(s3opts))
			if err != nil {
				t.Fatal(err)
			}
			var rows []value.Row
			var scanErr error
			for r, err := range tbl.Scan(ctx) {
				if err != nil {
					scanErr = err
					break
				}
				rows = append(rows, r)
			}
			if rt.n.Load() != 0 {
				t.Errorf("the scan sent %d requests to S3", rt.n.Load())
			}
			rep, err := Verify(ctx, rootStore)
			if err != nil {
				t.Fatal(err)
			}
			var outside []VerifyProblem
			for _, pr := range rep.Problems {
				if pr.Kind == ProblemOutsideTable {
					outside = append(outside, pr)
				}
			}
			if tc.inside {
				if scanErr != nil {
					t.Fatalf("scan: %v", scanErr)
				}
				want := 2
				if tc.dv != "" {
					want = 1
				}
				if len(rows) != want {
					t.Errorf("rows %s, want %d rows", rowsText(rows), want)
				}
				if len(outside) != 0 {
					t.Errorf("verify reports %v", outside)
				}
				return
			}
			if !errors.Is(scanErr, ErrPathOutsideTable) || !errors.Is(scanErr, txlog.ErrPathOutsideTable) {
				t.Fatalf("scan error = %v (rows %s), want ErrPathOutsideTable", scanErr, rowsText(rows))
			}
			var pe *txlog.PathError
			if !errors.As(scanErr, &pe) || pe.Reason == "" || !strings.Contains(scanErr.Error(), "version 0") {
				t.Errorf("scan error %v does not carry the path, the reason and the version", scanErr)
			}
			if tc.dv == "" {
				// Files plans the scan: refused too, before any read.
				if _, err := tbl.Files(ctx); !errors.Is(err, ErrPathOutsideTable) {
					t.Errorf("Files error = %v", err)
				}
			}
			if len(outside) != 1 || rep.OK() {
				t.Errorf("verify problems %v, want one %s", rep.Problems, ProblemOutsideTable)
			}
			// Allowed explicitly (a shallow clone of other), the file is read.
			if !tc.allowable {
				return
			}
			tbl, err = Open(ctx, tdir, WithAllowedRoots("file://"+slash(other)))
			if err != nil {
				t.Fatal(err)
			}
			rows = scanAll(t, tbl)
			want := "2"
			if tc.dv != "" {
				want = "3" // the DV outside deletes row 0 of the table's own file
			}
			if got := rowsText(rows); got != want {
				t.Errorf("with WithAllowedRoots: rows %s, want %s", got, want)
			}
			rep, err = Verify(ctx, rootStore, WithVerifyAllowedRoots("file://"+slash(other)))
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range rep.Problems {
				if pr.Kind == ProblemOutsideTable {
					t.Errorf("verify with the root allowed: %v", pr)
				}
			}
		})
	}
}

// TestVerifySymlinkOutside: on the local file system, a referenced data
// file that is a symbolic link inside the root resolving outside it is
// reported (reads follow it); a link that stays inside is not.
func TestVerifySymlinkOutside(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	dir := t.TempDir()
	root, other := filepath.Join(dir, "t"), filepath.Join(dir, "other")
	for _, d := range []string{root, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rootStore, err := objectstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	f := newScanFixtureIn(t, rootStore, sch, nil, nil, nil)
	a := f.file("a", value.Row{int64(1)})
	b := f.file("b", value.Row{int64(2)})
	// a becomes a link to a copy outside the root, b a link inside it.
	outside := filepath.Join(other, "a.parquet")
	if err := os.Rename(filepath.Join(root, a.Path), outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, a.Path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, b.Path), filepath.Join(root, "b-real.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b-real.parquet", filepath.Join(root, b.Path)); err != nil {
		t.Fatal(err)
	}
	f.commit(a, b)
	rep, err := Verify(ctx, rootStore)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemOutsideTable || rep.Problems[0].Path != a.Path ||
		!strings.Contains(rep.Problems[0].Detail, "symbolic link") || !strings.Contains(rep.Problems[0].Detail, outside) {
		t.Errorf("problems %v, want one symbolic link outside for %s", rep.Problems, a.Path)
	}
	// Reads follow links (documented on Scan).
	tbl, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(scanAll(t, tbl)); got != "1 | 2" {
		t.Errorf("rows %s", got)
	}
}

// TestVacuumNeverLeavesRoot: remove tombstones and live files outside the
// table root are never deleted, and a symbolic link inside the root is
// deleted as a link, not its target.
func TestVacuumNeverLeavesRoot(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	dir := t.TempDir()
	root, other := filepath.Join(dir, "t"), filepath.Join(dir, "other")
	for _, d := range []string{root, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rootStore, err := objectstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	victims := []string{filepath.Join(other, "removed.parquet"), filepath.Join(other, "linked.parquet")}
	for _, v := range victims {
		if err := os.WriteFile(v, []byte("not the table's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victims[1], filepath.Join(root, "link.parquet")); err != nil {
		t.Fatal(err)
	}
	f := newScanFixtureIn(t, rootStore, sch, nil, nil, nil)
	f.commit(f.file("a", value.Row{int64(1)}))
	old := time.Now().Add(-time.Hour).UnixMilli()
	for _, p := range []string{"file://" + filepath.ToSlash(victims[0]), "../other/removed.parquet", "%2e%2e/other/removed.parquet"} {
		f.commitActions(txlog.Action{Remove: &txlog.Remove{Path: p, DeletionTimestamp: &old, DataChange: true}})
	}
	tbl, err := Open(ctx, root, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Vacuum(ctx, WithVacuumRetention(0), WithVacuumForce(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Path != "link.parquet" {
			t.Errorf("vacuum deleted %s", f.Path)
		}
	}
	for _, v := range victims {
		if _, err := os.Stat(v); err != nil {
			t.Errorf("file outside the root: %v", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "link.parquet")); !os.IsNotExist(err) {
		t.Errorf("the unreferenced link inside the root is still there: %v", err)
	}
	// verify names the tombstones outside the root
	rep, err := Verify(ctx, rootStore)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range rep.Problems {
		if p.Kind == ProblemOutsideTable && strings.Contains(p.Detail, "remove tombstone") {
			n++
		}
	}
	// "%2e%2e/..." and "../..." are one file (one tombstone)
	if n != 2 {
		t.Errorf("verify problems %v, want 2 remove tombstones outside the root", rep.Problems)
	}
}
