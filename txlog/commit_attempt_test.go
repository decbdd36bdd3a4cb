package txlog

import (
	"context"
	"fmt"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// addRecords is addFile with numRecords n.
func addRecords(path string, n int) Action {
	a := addFile(path, "a")
	a.Add.Stats = fmt.Sprintf(`{"numRecords":%d}`, n)
	return a
}

func readCommitInfo(t *testing.T, store objectstore.Store, v int64) ([]Action, *CommitInfo) {
	t.Helper()
	actions, err := ReadCommit(context.Background(), store, v)
	if err != nil {
		t.Fatalf("read commit %d: %v", v, err)
	}
	if len(actions) == 0 || actions[0].CommitInfo == nil {
		t.Fatalf("commit %d: commitInfo is not the first action: %+v", v, actions)
	}
	return actions, actions[0].CommitInfo
}
