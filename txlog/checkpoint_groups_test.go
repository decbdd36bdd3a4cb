package txlog

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// TestCheckpointGroupRows: a checkpoint's row groups are as few as
// maxCheckpointGroupRows allows and of equal size, so parallel decoders
// get equal shares.
func TestCheckpointGroupRows(t *testing.T) {
	for _, tc := range []struct {
		rows int
		want int64
	}{
		{0, 32_768},
		{1, 32_768},
		{32_768, 32_768},
		{32_769, 16_385},
		{65_536, 32_768},
		{99_902, 24_976},
		{200_002, 28_572},
		{1_000_002, 32_259},
	} {
		if got := checkpointGroupRows(tc.rows); got != tc.want {
			t.Errorf("checkpointGroupRows(%d) = %d; want %d", tc.rows, got, tc.want)
		}
	}
}

// TestCheckpointEvenRowGroups: the checkpoint of a 99,900-file snapshot
// (99,902 rows with protocol and metaData) has row groups of 24,976,
// 24,976, 24,976 and 24,974 rows, not three of 32,768 and one of 1,598.
func TestCheckpointEvenRowGroups(t *testing.T) {
	const n = 99_900
	actions := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &Metadata{ID: "t", Format: Format{Provider: "parquet"}, SchemaString: `{"type":"struct","fields":[]}`}}}
	for i := range n {
		actions = append(actions, Action{Add: &Add{Path: fmt.Sprintf("part-%05d.parquet", i),
			PartitionValues: map[string]string{}, Size: int64(i), ModificationTime: 1_700_000_000_000, DataChange: true}})
	}
	snap, err := advance(nil, nil, []versionedActions{{version: 0, actions: actions}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	data, lc, err := EncodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, g := range pf.RowGroups() {
		got = append(got, g.NumRows())
	}
	want := []int64{24_976, 24_976, 24_976, 24_974}
	if fmt.Sprint(got) != fmt.Sprint(want) || lc.Size != n+2 {
		t.Errorf("row groups %v, %d rows; want %v, %d rows", got, lc.Size, want, n+2)
	}
}
