package txlog

import (
	"encoding/json"
	"testing"
)

// TestPartitionValuesJSON checks that PartitionValues writes the bytes
// json.Marshal writes for the map[string]*string with "" as nil, escaping
// included, and that file actions write nil partitionValues as {} (add,
// cdc) or not at all (remove).
func TestPartitionValuesJSON(t *testing.T) {
	for _, pv := range []map[string]string{
		nil, {}, {"day": "2024-01-01"}, {"day": ""}, {"b": "x", "a": "", "c": "z"},
		{"k<&>": "v\"\\\n\t", "é": "東京", "bad": "\xff", "sep": "\u2028"},
	} {
		want := map[string]*string{}
		for k, v := range pv {
			if v != "" {
				want[k] = &v
			} else {
				want[k] = nil
			}
		}
		wb, _ := json.Marshal(want)
		got, err := json.Marshal(PartitionValues(pv))
		if err != nil || string(got) != string(wb) {
			t.Errorf("%q: got %s, %v; want %s", pv, got, err, wb)
		}
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{Add{Path: "p"}, `{"path":"p","partitionValues":{},"size":0,"modificationTime":0,"dataChange":false}`},
		{AddCDCFile{Path: "p"}, `{"path":"p","partitionValues":{},"size":0,"dataChange":false}`},
		{Remove{Path: "p"}, `{"path":"p","dataChange":false}`},
		{Remove{Path: "p", PartitionValues: map[string]string{}}, `{"path":"p","dataChange":false,"partitionValues":{}}`},
		{Remove{Path: "p", PartitionValues: map[string]string{"d": ""}}, `{"path":"p","dataChange":false,"partitionValues":{"d":null}}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%T: got %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
}
