package table

import "testing"

// storeKey maps every spelling of a path under the table root that the scan
// reads (txlog.PathResolver) to the same store key, and none outside it,, so vacuum and verify see the
// file the scan reads.
func TestStoreKey(t *testing.T) {
	tests := []struct {
		uri, path string
		key       string
		ok        bool
	}{
		{"file:///data/t", "part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "a=1/part-0.parquet", "a=1/part-0.parquet", true},
		{"file:///data/t", "file:///data/t/part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "file:/data/t/part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "file://localhost/data/t/part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "/data/t/part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "file:///data/other/part-0.parquet", "", false},
		{"file:///data/t", "file:///data/t2/part-0.parquet", "", false},
		{"s3://b/t", "s3a://b/t/part-0.parquet", "part-0.parquet", true},
		{"s3://b/t", "s3n://b/t/x/part-0.parquet", "x/part-0.parquet", true},
		{"s3://b/t", "s3://b/u/part-0.parquet", "", false},
		{"file:///data/t", "", "", false},
		{"file:///data/t", "a/../part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "../t/part-0.parquet", "", false},
		{"file:///data/t", "file:///data/t/../u/part-0.parquet", "", false},
		{"file:///data/t", "file:///data/t/x/../part-0.parquet", "part-0.parquet", true},
		{"file:///data/t", "file://otherhost/data/t/part-0.parquet", "", false},
		{"file:///data/t", "s3://data/t/part-0.parquet", "", false},
		{"file:///data/t", "file:///data/t", "", false},
		{"file:///data/t/", "file:///data/t/part-0.parquet", "part-0.parquet", true},
		{"mem://m", "mem://m/part-0.parquet", "part-0.parquet", true},
		{"mem://m", "mem://n/part-0.parquet", "", false},
		{"s3://b", "s3://b/part-0.parquet", "part-0.parquet", true},
	}
	for _, tc := range tests {
		key, ok := storeKey(tc.uri, tc.path)
		if key != tc.key || ok != tc.ok {
			t.Errorf("storeKey(%q, %q) = %q, %v; want %q, %v", tc.uri, tc.path, key, ok, tc.key, tc.ok)
		}
	}
}
