package txlog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// TestConflictMessages: a conflict names each file once. Two DELETEs of
// the same file (each read and removes it) said "version 2 removed
// a0.parquet, which this transaction read; version 2 also removed
// a0.parquet" (issue 31 item 6); now one reason names it for both kinds,
// and the error still matches both.
func TestConflictMessages(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// the loser reads the files of partition "a" and removes these
		removes []string
		// the winner removes these
		winner      []string
		wantDetails []string
		wantKinds   []error
	}{
		{"both remove the file read", []string{"a0.parquet"}, []string{"a0.parquet"},
			[]string{"version 2 removed a0.parquet, which this transaction read and removes"},
			[]error{ErrConcurrentDeleteRead, ErrConcurrentDeleteDelete}},
		{"the winner removes a file read, the loser another", []string{"a1.parquet"}, []string{"a0.parquet"},
			[]string{"version 2 removed a0.parquet, which this transaction read"},
			[]error{ErrConcurrentDeleteRead}},
		{"both remove both", []string{"a0.parquet", "a1.parquet"}, []string{"a0.parquet", "a1.parquet"},
			[]string{"version 2 removed a0.parquet, which this transaction read and removes"},
			[]error{ErrConcurrentDeleteRead, ErrConcurrentDeleteDelete}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			seed := NewTransaction(createTestTable(t, mem, nil), "WRITE")
			seed.Add(addFile("a0.parquet", "a"), addFile("a1.parquet", "a"))
			res, err := seed.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			del := func(paths []string) *Transaction {
				tx := NewTransaction(res.Snapshot, "DELETE")
				for _, f := range tx.ReadFiles(partIs("a")) {
					if slices.Contains(paths, f.Path) {
						tx.Add(Action{Remove: f.RemoveAt(1700000000000)})
					}
				}
				return tx
			}
			winner, loser := del(tc.winner), del(tc.removes)
			if _, err := winner.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			_, err = loser.Commit(ctx)
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("loser: %v, want a *ConflictError", err)
			}
			if !slices.Equal(ce.Details, tc.wantDetails) {
				t.Errorf("details %q, want %q", ce.Details, tc.wantDetails)
			}
			if !slices.Equal(ce.Kinds, tc.wantKinds) {
				t.Errorf("kinds %v, want %v", ce.Kinds, tc.wantKinds)
			}
			for _, k := range tc.wantKinds {
				if !errors.Is(err, k) {
					t.Errorf("error does not match %v: %v", k, err)
				}
			}
			want := "txlog: concurrent modification: transaction read version 1, version 2 (DELETE) conflicts after 1 attempt(s): " + tc.wantDetails[0]
			if err.Error() != want {
				t.Errorf("error\n %s\nwant\n %s", err, want)
			}
		})
	}
}
