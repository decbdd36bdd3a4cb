package maint

import "testing"

func TestHiddenKey(t *testing.T) {
	for key, want := range map[string]bool{
		"part-0.parquet":                  false,
		"city=ams/part-0.parquet":         false,
		"_city=ams/part-0.parquet":        false,
		"_delta_log/00000.json":           true,
		"_change_data/x.parquet":          false,
		"_change_data/city=ams/x.parquet": false,
		"_change_data/_SUCCESS":           true,
		"city=ams/.part-0.parquet.crc":    true,
		".hidden/part-0.parquet":          true,
		"deletion_vector_0000.bin":        false,
		"city=ams/_SUCCESS":               true,
		"a=1/b=_x/part-0.snappy.parquet":  false,
	} {
		if got := hiddenKey(key); got != want {
			t.Errorf("hiddenKey(%q) = %v, want %v", key, got, want)
		}
	}
}
