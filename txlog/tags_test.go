package txlog

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// TestSetTags: commitInfo.tags holds what SetTags set (a copy), next to
// readVersion; without SetTags there is no tags field.
func TestSetTags(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, nil)
	tags := map[string]string{"delta.rowTracking.preserved": "true"}
	tx := NewTransaction(snap, "WRITE")
	tx.SetTags(tags)
	tags["later"] = "ignored"
	tx.Add(addFile("a.parquet", "a"))
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, ci := readCommitInfo(t, store, res.Version)
	var got map[string]string
	if err := json.Unmarshal(ci.Extra["tags"], &got); err != nil {
		t.Fatalf("tags %s: %v", ci.Extra["tags"], err)
	}
	if want := map[string]string{"delta.rowTracking.preserved": "true"}; !maps.Equal(got, want) {
		t.Errorf("tags %v, want %v", got, want)
	}
	if _, ok := ci.Extra["readVersion"]; !ok {
		t.Error("readVersion lost")
	}
	tx = NewTransaction(res.Snapshot, "WRITE")
	tx.Add(addFile("b.parquet", "a"))
	if res, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ci := readCommitInfo(t, store, res.Version); ci.Extra["tags"] != nil {
		t.Errorf("tags without SetTags: %s", ci.Extra["tags"])
	}
}
