package txlog

import (
	"slices"
	"testing"
)

// TestWriterFeatureTable: every feature of the table appears once, the
// supported list is derived from it, and a refused feature is named by
// CheckWritableTable.
func TestWriterFeatureTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range WriterFeatures() {
		if seen[f.Name] || f.Name == "" || f.Property == "" {
			t.Errorf("feature row %+v duplicated or incomplete", f)
		}
		seen[f.Name] = true
		if f.Support == WriterRefused && f.Note == "" {
			t.Errorf("refused feature %s has no reason", f.Name)
		}
		p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{f.Name}}
		err := checkWritable(p)
		if featureRequirements[f.Name].readerWriter {
			p.MinReaderVersion, p.ReaderFeatures = 3, []string{f.Name}
			err = checkWritable(p)
			if !readerFeatureSupported(f.Name) {
				continue // unreadable: refused for reading already
			}
		}
		if (err == nil) != (f.Support != WriterRefused) {
			t.Errorf("%s (%v): checkWritable = %v", f.Name, f.Support, err)
		}
		if got := slices.Contains(supportedWriterFeatures(), f.Name); got != (f.Support != WriterRefused) {
			t.Errorf("%s in supportedWriterFeatures = %v", f.Name, got)
		}
	}
	for _, f := range []string{FeatureInCommitTimestamp, FeatureRowTracking, FeatureClustering} {
		if writerFeatureSupport(f) != WriterSupported {
			t.Errorf("%s is %v", f, writerFeatureSupport(f))
		}
	}
}
