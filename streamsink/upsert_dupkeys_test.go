package streamsink

import (
	"context"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// TestUpsertDuplicatedTargetKeys: a target that holds key 1 twice has both
// rows updated to the epoch's last row of key 1 (both kept); key 2, twice in
// the epoch, is inserted once, with its last row.
func TestUpsertDuplicatedTargetKeys(t *testing.T) {
	ctx := context.Background()
	tbl, err := table.Create(ctx, "", eventSchema, table.WithStore(objectstore.NewMem("dupkeys")))
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.AppendRows(ctx, []value.Row{ev(1, 0, "a"), ev(1, 0, "b")}); err != nil {
		t.Fatal(err)
	}
	s, err := New(tbl, "q", WithMergeKeys("id"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteEpoch(ctx, 1, []value.Row{ev(1, 1, "x"), ev(2, 1, "y"), ev(1, 1, "z"), ev(2, 1, "w")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for r, err := range s.Table().Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r[2].(string))
	}
	slices.Sort(got)
	if want := []string{"w", "z", "z"}; !slices.Equal(got, want) {
		t.Fatalf("payloads %v, want %v", got, want)
	}
}
