package txlog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/testenv"
)

// s3Stores returns a constructor of independent clients (each its own
// *objectstore.S3, so its own HTTP connections) on one fresh MinIO prefix.
func s3Stores(t *testing.T) func() objectstore.Store {
	m := testenv.StartMinIO(t)
	prefix := "table-" + t.Name()
	return func() objectstore.Store {
		s, err := objectstore.NewS3(t.Context(), m.Bucket, prefix, m.S3Options()...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// 16 writers, each with its own client, × 50 blind appends: the log ends at
// version 800 with no gap and every commit exactly once (matched by txnId).
func TestContendingBlindAppendsMinIO(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 800 contended commits")
	}
	contend(t, s3Stores(t), 16, 50)
}

// Two overwrites of one partition from one snapshot: exactly one commits, the
// other fails with ErrConcurrentDeleteRead.
func TestConcurrentOverwriteSamePartitionMinIO(t *testing.T) {
	ctx := context.Background()
	newStore := s3Stores(t)
	snap := createTestTable(t, newStore(), nil)
	seed := NewTransaction(snap, "WRITE")
	seed.Add(addFile("a0.parquet", "a"))
	res, err := seed.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	overwrite := func(name string) error {
		snap, err := Load(ctx, newStore(), AtVersion(res.Version))
		if err != nil {
			return err
		}
		tx := NewTransaction(snap, "WRITE")
		for _, f := range tx.ReadFiles(partIs("a")) {
			tx.Add(removeFile(f.Path, "a"))
		}
		tx.Add(addFile(name, "a"))
		_, err = tx.Commit(ctx)
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- overwrite("x.parquet") }()
	go func() { errs <- overwrite("y.parquet") }()
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) {
		t.Fatalf("want exactly one success, got %v and %v", e1, e2)
	}
	lost := errors.Join(e1, e2)
	if !errors.Is(lost, ErrConcurrentDeleteRead) {
		t.Fatalf("loser: %v, want ErrConcurrentDeleteRead", lost)
	}
	final, err := Load(ctx, newStore())
	if err != nil || final.Version() != 2 || final.NumFiles() != 1 {
		t.Fatalf("final: %v version %d files %d", err, final.Version(), final.NumFiles())
	}
}

// A writer whose PUT lands but whose reply is dropped ends with exactly one
// commit and reports success; a 409 is retried and never taken as a lost race.
func TestUnknownOutcomeMinIO(t *testing.T) {
	tests := []struct {
		name  string
		fault faultstore.Fault
	}{
		{"reply dropped", faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Phase: faultstore.After, Kind: faultstore.DropReply}},
		{"409", faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Kind: faultstore.Status, Status: 409}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			newStore := s3Stores(t)
			createTestTable(t, newStore(), nil)
			store := faultstore.New(newStore())
			snap, err := Load(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			store.Inject(tc.fault)
			tx := NewTransaction(snap, "WRITE", WithBackoff(time.Millisecond, 10*time.Millisecond))
			tx.Add(addFile("a.parquet", "a"))
			res, err := tx.Commit(ctx)
			if err != nil || res.Version != 1 || res.Attempts != 2 {
				t.Fatalf("commit: %v %+v", err, res)
			}
			final, err := Load(ctx, newStore())
			if err != nil || final.Version() != 1 || final.NumFiles() != 1 {
				t.Fatalf("final: %v version %d", err, final.Version())
			}
		})
	}
}
