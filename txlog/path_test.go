package txlog

import (
	"errors"
	"testing"
)

// TestPathResolver: relative and absolute paths of the log map to keys
// under the table root (all spellings of one location alike), under an
// allowed root, or to a *PathError (ErrPathOutsideTable).
func TestPathResolver(t *testing.T) {
	r, err := NewPathResolver("file:///data/t", "s3a://src/base/", "file://localhost/clones/src")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		root string // "" for refused
		key  string
	}{
		{"a=1/part-0.parquet", "file:///data/t", "a=1/part-0.parquet"},
		{"a/./b/../part-0.parquet", "file:///data/t", "a/part-0.parquet"},
		{"file:///data/t/part-0.parquet", "file:///data/t", "part-0.parquet"},
		{"file:/data/t/part-0.parquet", "file:///data/t", "part-0.parquet"},
		{"file://localhost/data/t/part-0.parquet", "file:///data/t", "part-0.parquet"},
		{"File://LOCALHOST/data/t/part-0.parquet", "file:///data/t", "part-0.parquet"},
		{"/data/t/part-0.parquet", "file:///data/t", "part-0.parquet"},
		{"file:////data//t/part-0.parquet", "file:///data/t", "part-0.parquet"},
		{"s3://src/base/x/part-0.parquet", "s3://src/base", "x/part-0.parquet"},
		{"s3n://src/base/part-0.parquet", "s3://src/base", "part-0.parquet"},
		{"file:/clones/src/part-0.parquet", "file:///clones/src", "part-0.parquet"},
		{"", "", ""},
		{".", "", ""},
		{"..", "", ""},
		{"../t/part-0.parquet", "", ""},
		{"a/../../part-0.parquet", "", ""},
		{"file:///data/t", "", ""},
		{"file:///data/t/", "", ""},
		{"file:///data/t/..", "", ""},
		{"file:///data/t/../u/part-0.parquet", "", ""},
		{"file:///data/t2/part-0.parquet", "", ""},
		{"file:///etc/passwd", "", ""},
		{"/etc/passwd", "", ""},
		{"file://host/data/t/part-0.parquet", "", ""},
		{"s3://data/t/part-0.parquet", "", ""},
		{"s3://src/base/../other/part-0.parquet", "", ""},
		{"s3://src/basement/part-0.parquet", "", ""},
		{"mem://data/t/part-0.parquet", "", ""},
	}
	for _, tc := range tests {
		loc, err := r.Resolve(tc.path)
		if tc.root == "" {
			var pe *PathError
			if !errors.Is(err, ErrPathOutsideTable) || !errors.As(err, &pe) || pe.Path != tc.path || pe.Reason == "" {
				t.Errorf("Resolve(%q) = %+v, %v; want a *PathError", tc.path, loc, err)
			}
			continue
		}
		if err != nil || loc.Root != tc.root || loc.Key != tc.key || loc.InTable != (tc.root == "file:///data/t") {
			t.Errorf("Resolve(%q) = %+v, %v; want %s %s", tc.path, loc, err, tc.root, tc.key)
		}
	}
	if _, err := NewPathResolver("relative/dir"); err == nil {
		t.Error("NewPathResolver accepts a relative root")
	}
	for _, root := range []string{"file:///", "mem://m", "s3://b"} {
		r, err := NewPathResolver(root)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := r.InTable(root + "/x/y.parquet"); !ok || k != "x/y.parquet" {
			t.Errorf("root %s: InTable = %q, %v", root, k, ok)
		}
	}
}
