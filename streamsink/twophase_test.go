package streamsink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// newTPSink returns a sink of query q on a new table in a memory store.
func newTPSink(t *testing.T, q string, opts ...Option) (*Sink, *objectstore.Mem) {
	t.Helper()
	mem := objectstore.NewMem(t.Name())
	s, err := New(newTable(t, mem), q, append([]Option{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, mem
}

func prepare(t *testing.T, s *Sink, e int64) *Committable {
	t.Helper()
	c, err := s.Prepare(context.Background(), e, epochRows(e, 5))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func commit(t *testing.T, s *Sink, c *Committable) *CommitResult {
	t.Helper()
	r, err := s.Commit(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// roundTrip encodes and decodes c, as a checkpoint restore does.
func roundTrip(t *testing.T, c *Committable) *Committable {
	t.Helper()
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeCommittable(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func tableVersion(t *testing.T, store objectstore.Store) int64 {
	t.Helper()
	snap, err := txlog.Load(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Version()
}

func TestTwoPhaseCommitIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s, mem := newTPSink(t, "q")
	c := prepare(t, s, 0)
	if v := tableVersion(t, mem); v != 0 {
		t.Fatalf("prepare committed: version %d", v)
	}
	if len(c.Files()) != 1 || c.Rows() != 5 || c.EpochID() != 0 || c.QueryID() != "q" || c.Skipped() {
		t.Fatalf("committable: files %v rows %d epoch %d query %s skipped %v", c.Files(), c.Rows(), c.EpochID(), c.QueryID(), c.Skipped())
	}
	restored := roundTrip(t, c)
	r := commit(t, s, restored)
	if r.AlreadyCommitted || r.Version != 1 || r.Files != 1 || r.Rows != 5 || r.Bytes <= 0 {
		t.Fatalf("first commit: %+v", *r)
	}
	// The commit is WriteEpoch's: txn and STREAMING UPDATE commitInfo.
	actions, err := txlog.ReadCommit(ctx, mem, 1)
	if err != nil {
		t.Fatal(err)
	}
	var txn *txlog.Txn
	var ci *txlog.CommitInfo
	for _, a := range actions {
		if a.Txn != nil {
			txn = a.Txn
		}
		if a.CommitInfo != nil {
			ci = a.CommitInfo
		}
	}
	if txn == nil || txn.AppID != "q" || txn.Version != 0 || txn.LastUpdated == nil {
		t.Fatalf("txn %+v", txn)
	}
	if ci == nil || ci.Operation != Operation || ci.OperationParameters["queryId"] != "q" ||
		ci.OperationParameters["epochId"] != "0" || ci.OperationParameters["outputMode"] != "Append" {
		t.Fatalf("commitInfo %+v", ci)
	}
	// Replays, from the original and from a restored committable: no-ops
	// naming the version that committed the epoch.
	for _, cm := range []*Committable{c, restored, roundTrip(t, c)} {
		r := commit(t, s, cm)
		if !r.AlreadyCommitted || r.ByOtherFiles || r.Version != 1 || r.Files != 0 {
			t.Fatalf("replayed commit: %+v", *r)
		}
	}
	if v := tableVersion(t, mem); v != 1 {
		t.Fatalf("replays committed: version %d", v)
	}
	if n := liveRows(t, mem); n != 5 {
		t.Fatalf("%d rows, want 5", n)
	}
}

// Commit follows WriteEpoch's order rule: any epoch above the txn version
// commits (gaps allowed); an uncommitted epoch below it is refused.
func TestTwoPhaseCommitOrder(t *testing.T) {
	s, mem := newTPSink(t, "q")
	c0, c3, c4, c5 := prepare(t, s, 0), prepare(t, s, 3), prepare(t, s, 4), prepare(t, s, 5)
	tests := []struct {
		c           *Committable
		wantErr     error
		wantAlready bool
		wantVersion int64
	}{
		{c: c0, wantVersion: 1},
		{c: c3, wantVersion: 2}, // a gap: epochs 1 and 2 never existed
		{c: c5, wantVersion: 3}, // another gap, leaving 4 behind
		{c: c4, wantErr: ErrEpochOrder},
		{c: c3, wantAlready: true, wantVersion: 2},
		{c: c0, wantAlready: true, wantVersion: 1},
	}
	for i, tc := range tests {
		r, err := s.Commit(context.Background(), tc.c)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "epoch 4") {
				t.Fatalf("%d: commit epoch %d: %v, want %v", i, tc.c.EpochID(), err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d: commit epoch %d: %v", i, tc.c.EpochID(), err)
		}
		if r.AlreadyCommitted != tc.wantAlready || r.Version != tc.wantVersion || r.ByOtherFiles {
			t.Fatalf("%d: commit epoch %d: %+v", i, tc.c.EpochID(), *r)
		}
	}
	if v := tableVersion(t, mem); v != 3 {
		t.Fatalf("version %d, want 3", v)
	}
}

func TestTwoPhaseMissingFiles(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		damage func(mem *objectstore.Mem, key string) error
		want   string
	}{
		{"vacuumed before commit", func(mem *objectstore.Mem, key string) error { return mem.Delete(ctx, key) }, "does not exist"},
		{"truncated", func(mem *objectstore.Mem, key string) error { return mem.Put(ctx, key, []byte("PAR1")) }, "has 4 bytes, the committable says"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, mem := newTPSink(t, "q", WithWriteOptions(table.WithTargetFileSize(1)))
			c, err := s.Prepare(ctx, 0, epochRows(0, 40))
			if err != nil {
				t.Fatal(err)
			}
			keys := c.Files()
			if len(keys) < 2 {
				t.Fatalf("%d files, want several", len(keys))
			}
			if err := tc.damage(mem, keys[1]); err != nil {
				t.Fatal(err)
			}
			_, err = s.Commit(ctx, c)
			var mf *MissingFilesError
			if !errors.Is(err, ErrMissingFiles) || !errors.As(err, &mf) {
				t.Fatalf("commit: %v, want ErrMissingFiles", err)
			}
			if len(mf.Keys) != 1 || !strings.HasPrefix(mf.Keys[0], keys[1]) || !strings.Contains(err.Error(), tc.want) || mf.Epoch != 0 {
				t.Fatalf("missing %v (%v), want %s %s", mf.Keys, err, keys[1], tc.want)
			}
			if v := tableVersion(t, mem); v != 0 {
				t.Fatalf("committed version %d", v)
			}
		})
	}
}

func TestTwoPhaseAbort(t *testing.T) {
	ctx := context.Background()
	s, mem := newTPSink(t, "q")
	exists := func(key string) bool {
		_, err := mem.Stat(ctx, key)
		if err != nil && !errors.Is(err, objectstore.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}

	// A committable that never commits: Abort deletes its files; a later
	// Commit of it is refused, naming them.
	c0 := prepare(t, s, 0)
	r, err := s.Abort(ctx, c0)
	if err != nil || r.Deleted != 1 || exists(c0.Files()[0]) {
		t.Fatalf("abort: %+v, %v; file exists %v", r, err, exists(c0.Files()[0]))
	}
	if _, err := s.Commit(ctx, c0); !errors.Is(err, ErrMissingFiles) {
		t.Fatalf("commit after abort: %v", err)
	}

	// A committed epoch: Abort deletes nothing.
	c1 := prepare(t, s, 1)
	commit(t, s, c1)
	if _, err := s.Abort(ctx, roundTrip(t, c1)); !errors.Is(err, ErrEpochCommitted) || !exists(c1.Files()[0]) {
		t.Fatalf("abort of a committed epoch: %v; file exists %v", err, exists(c1.Files()[0]))
	}

	// Two Prepares of one epoch (a replay before its checkpoint): the one
	// committed keeps its files, the other is reported committed by other
	// files and can be aborted.
	c2a, c2b := prepare(t, s, 2), prepare(t, s, 2)
	commit(t, s, c2a)
	r2 := commit(t, s, c2b)
	if !r2.AlreadyCommitted || !r2.ByOtherFiles || r2.Version != 2 {
		t.Fatalf("commit of the other prepare: %+v", *r2)
	}
	if r, err := s.Abort(ctx, c2b); err != nil || r.Deleted != 1 || exists(c2b.Files()[0]) || !exists(c2a.Files()[0]) {
		t.Fatalf("abort of the other prepare: %+v, %v", r, err)
	}
	if _, err := s.Abort(ctx, c2a); !errors.Is(err, ErrEpochCommitted) {
		t.Fatalf("abort of the committed prepare: %v", err)
	}
	rep, err := table.Verify(ctx, mem)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if n := liveRows(t, mem); n != 10 {
		t.Fatalf("%d rows, want 10 (epochs 1 and 2)", n)
	}
}

func TestTwoPhasePrepareOfCommittedEpoch(t *testing.T) {
	ctx := context.Background()
	s, mem := newTPSink(t, "q")
	commit(t, s, prepare(t, s, 0))
	count := func() int {
		n := 0
		for _, err := range mem.List(ctx, "", "") {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	before := count()
	c := roundTrip(t, prepare(t, s, 0))
	if !c.Skipped() || len(c.Files()) != 0 || count() != before {
		t.Fatalf("prepare of a committed epoch: skipped %v, files %v, %d objects, want %d", c.Skipped(), c.Files(), count(), before)
	}
	r := commit(t, s, c)
	if !r.AlreadyCommitted || r.ByOtherFiles || r.Version != 1 {
		t.Fatalf("commit: %+v", *r)
	}
	if r, err := s.Abort(ctx, c); err != nil || r.Deleted != 0 {
		t.Fatalf("abort: %+v, %v", r, err)
	}
}

func TestTwoPhaseCompleteMode(t *testing.T) {
	s, mem := newTPSink(t, "q", WithOutputMode(Complete))
	commit(t, s, roundTrip(t, prepare(t, s, 0)))
	r := commit(t, s, roundTrip(t, prepare(t, s, 1)))
	if r.AlreadyCommitted || r.Version != 2 {
		t.Fatalf("commit: %+v", *r)
	}
	counts, err := epochCounts(context.Background(), s.Table())
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || len(counts[1]) != 5 || liveRows(t, mem) != 5 {
		t.Fatalf("table holds %v, want only epoch 1's 5 rows", counts)
	}
}

func TestTwoPhaseRefusesForeignCommittables(t *testing.T) {
	ctx := context.Background()
	s, mem := newTPSink(t, "q")
	other, _ := newTPSink(t, "other")
	sameQuery, _ := newTPSink(t, "q")
	tests := []struct {
		name string
		c    *Committable
		want string
	}{
		{"nil", nil, "nil"},
		{"another query", prepare(t, other, 0), "committable of query other"},
		{"another table", roundTrip(t, prepare(t, sameQuery, 0)), "prepared for table id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Commit(ctx, tc.c); !errors.Is(err, ErrInvalidCommittable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("commit: %v, want ErrInvalidCommittable (%s)", err, tc.want)
			}
			if _, err := s.Abort(ctx, tc.c); !errors.Is(err, ErrInvalidCommittable) {
				t.Fatalf("abort: %v, want ErrInvalidCommittable", err)
			}
			if v := tableVersion(t, mem); v != 0 {
				t.Fatalf("version %d", v)
			}
		})
	}
}

func TestDecodeCommittableRejectsBadBytes(t *testing.T) {
	s, _ := newTPSink(t, "q")
	good, err := prepare(t, s, 3).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// body returns the committable's JSON as a map, to edit and seal again.
	body := func() map[string]any {
		var env committableEnvelope
		if err := json.Unmarshal(good, &env); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(env.Committable, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	seal := func(m map[string]any) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out, err := json.Marshal(committableEnvelope{Committable: b, SHA256: hex.EncodeToString(sum[:])})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	with := func(k string, v any) []byte {
		m := body()
		m[k] = v
		return seal(m)
	}
	withPath := func(p string) []byte {
		m := body()
		m["adds"].([]any)[0].(map[string]any)["path"] = p
		return seal(m)
	}
	flipped := slices.Clone(good)
	i := strings.Index(string(flipped), `epochId\":3`)
	if i < 0 {
		i = strings.Index(string(flipped), "epochId")
	}
	flipped[i+2] ^= 0x01
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not JSON"},
		{"truncated", good[:len(good)/2], "not JSON"},
		{"foreign JSON", []byte(`{"hello":"world"}`), "no committable or sha256"},
		{"damaged byte", flipped, "sha256 mismatch"},
		{"another format", with("format", "flink.committable"), `format "flink.committable"`},
		{"newer format version", with("formatVersion", 2), "format version 2"},
		{"negative epoch", with("epochId", -1), "epoch -1"},
		{"no query", with("queryId", ""), "empty query id"},
		{"unknown mode", with("outputMode", "Update"), `unknown output mode "Update"`},
		{"path outside the table", withPath("../other/part-0.parquet"), "not a file under the table root"},
		{"absolute path", withPath("s3://bucket/t/part-0.parquet"), "not a file under the table root"},
		{"log file", withPath("_delta_log/00000000000000000000.json"), "not a file under the table root"},
		{"no path", withPath(""), "has no path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeCommittable(tc.data)
			if !errors.Is(err, ErrInvalidCommittable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decode: %v, %v; want ErrInvalidCommittable (%s)", c, err, tc.want)
			}
		})
	}
	// The untouched bytes, re-sealed unchanged, still decode: the table
	// cases fail for their edit, not for sealing.
	if _, err := DecodeCommittable(seal(body())); err != nil {
		t.Fatalf("resealed: %v", err)
	}
}
