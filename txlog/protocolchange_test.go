package txlog

import (
	"slices"
	"testing"
)

// TestUpgradeProtocol: the one protocol decision. Each expected protocol
// is worked out from the spec ("Table Features", "Column Mapping", "Reader
// Version Requirements", "Writer Version Requirements"): the result
// supports cur's features plus the new ones (and their dependencies), at
// the versions the most demanding of them needs (never below cur's),
// legacy when a legacy pair implies exactly that set, else writer 7 listing
// all of them, with readerFeatures (reader-writer features) only at reader
// version 3. The comments give the reasoning; where the spec allows more
// than one form, Spark 4.4's choice is the one expected (the same rule).
func TestUpgradeProtocol(t *testing.T) {
	legacy := func(r, w int32) *Protocol { return &Protocol{MinReaderVersion: r, MinWriterVersion: w} }
	tf := func(r int32, reader, writer []string) *Protocol {
		return &Protocol{MinReaderVersion: r, MinWriterVersion: 7, ReaderFeatures: reader, WriterFeatures: writer}
	}
	// Spark's CREATE TABLE of a column-mapping table (issue 38).
	sparkCM := tf(2, nil, []string{"columnMapping", "invariants", "appendOnly"})
	tests := []struct {
		name     string
		cur      *Protocol
		features []string
		want     *Protocol // nil: cur itself
	}{
		// Nothing new: cur itself, whatever its form.
		{"reader 2 table features, columnMapping already supported", sparkCM, []string{"columnMapping", "invariants"}, nil},
		{"reader 2 table features, nothing asked", sparkCM, nil, nil},
		{"legacy (2,5) implies changeDataFeed", legacy(2, 5), []string{"changeDataFeed", "columnMapping"}, nil},
		{"legacy (1,2) implies invariants", legacy(1, 2), []string{"invariants", "appendOnly"}, nil},
		{"reader 3 without reader features stays as it is", tf(3, []string{}, []string{"rowTracking", "domainMetadata"}), []string{"rowTracking"}, nil},

		// Issue 38: reader version 2 covers columnMapping; writer-only
		// features are added to writerFeatures and reader version 2 stays.
		{"reader 2 + changeDataFeed", sparkCM, []string{"changeDataFeed"},
			tf(2, nil, []string{"appendOnly", "changeDataFeed", "columnMapping", "invariants"})},
		{"reader 2 + inCommitTimestamp", tf(2, nil, []string{"appendOnly", "changeDataFeed", "columnMapping", "invariants"}), []string{"inCommitTimestamp"},
			tf(2, nil, []string{"appendOnly", "changeDataFeed", "columnMapping", "inCommitTimestamp", "invariants"})},
		{"reader 2 + checkConstraints (legacy writer feature at writer 7)", sparkCM, []string{"checkConstraints"},
			tf(2, nil, []string{"appendOnly", "checkConstraints", "columnMapping", "invariants"})},
		// A reader feature reader version 2 does not cover: reader 3, and
		// columnMapping is listed in readerFeatures too (spec: a
		// reader-writer feature is listed in both lists at reader 3).
		{"reader 2 + deletionVectors", sparkCM, []string{"deletionVectors"},
			tf(3, []string{"columnMapping", "deletionVectors"}, []string{"appendOnly", "columnMapping", "deletionVectors", "invariants"})},
		{"reader 2 + timestampNtz", sparkCM, []string{"timestampNtz"},
			tf(3, []string{"columnMapping", "timestampNtz"}, []string{"appendOnly", "columnMapping", "invariants", "timestampNtz"})},
		{"reader 2 + typeWidening", sparkCM, []string{"typeWidening"},
			tf(3, []string{"columnMapping", "typeWidening"}, []string{"appendOnly", "columnMapping", "invariants", "typeWidening"})},
		{"reader 2 + v2Checkpoint", sparkCM, []string{"v2Checkpoint"},
			tf(3, []string{"columnMapping", "v2Checkpoint"}, []string{"appendOnly", "columnMapping", "invariants", "v2Checkpoint"})},

		// Legacy tables. (1,2) implies appendOnly and invariants; (1,3) adds
		// checkConstraints: exactly the set, so legacy (1,3).
		{"(1,2) + checkConstraints", legacy(1, 2), []string{"checkConstraints"}, legacy(1, 3)},
		// (1,4) would also imply checkConstraints and generatedColumns,
		// which the table does not use: writer 7 with the three listed.
		{"(1,2) + changeDataFeed", legacy(1, 2), []string{"changeDataFeed"}, tf(1, nil, []string{"appendOnly", "changeDataFeed", "invariants"})},
		{"(1,2) + columnMapping", legacy(1, 2), []string{"columnMapping"}, tf(2, nil, []string{"appendOnly", "columnMapping", "invariants"})},
		// (1,4) implies five features; with columnMapping the six (2,5)
		// implies.
		{"(1,4) + columnMapping", legacy(1, 4), []string{"columnMapping"}, legacy(2, 5)},
		{"(1,3) + changeDataFeed + generatedColumns", legacy(1, 3), []string{"changeDataFeed", "generatedColumns"}, legacy(1, 4)},
		// A legacy table upgraded to table features lists every implied
		// feature (spec: assume each implied feature was used).
		{"(2,5) + inCommitTimestamp stays reader 2", legacy(2, 5), []string{"inCommitTimestamp"},
			tf(2, nil, []string{"appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "generatedColumns", "inCommitTimestamp", "invariants"})},
		{"(2,5) + deletionVectors", legacy(2, 5), []string{"deletionVectors"},
			tf(3, []string{"columnMapping", "deletionVectors"},
				[]string{"appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "deletionVectors", "generatedColumns", "invariants"})},
		{"(1,2) + deletionVectors", legacy(1, 2), []string{"deletionVectors"},
			tf(3, []string{"deletionVectors"}, []string{"appendOnly", "deletionVectors", "invariants"})},
		// (1,1) implies nothing: checkConstraints alone is no legacy set.
		{"(1,1) + checkConstraints", legacy(1, 1), []string{"checkConstraints"}, tf(1, nil, []string{"checkConstraints"})},
		// (1,5) cannot imply columnMapping (it needs reader 2).
		{"(1,5) + columnMapping", legacy(1, 5), []string{"columnMapping"}, legacy(2, 5)},

		// Dependencies: rowTracking and clustering need domainMetadata.
		{"(1,2) + rowTracking", legacy(1, 2), []string{"rowTracking"},
			tf(1, nil, []string{"appendOnly", "domainMetadata", "invariants", "rowTracking"})},
		{"writer 7 + clustering", tf(1, nil, []string{"appendOnly"}), []string{"clustering"},
			tf(1, nil, []string{"appendOnly", "clustering", "domainMetadata"})},

		// Table-features tables keep their form: reader 3 stays 3 and lists
		// columnMapping when it is supported.
		{"(3,7) + changeDataFeed", tf(3, []string{"columnMapping", "deletionVectors"}, []string{"columnMapping", "deletionVectors"}), []string{"changeDataFeed"},
			tf(3, []string{"columnMapping", "deletionVectors"}, []string{"changeDataFeed", "columnMapping", "deletionVectors"})},
		{"(3,7) with columnMapping only + changeDataFeed: reader 3 not lowered", tf(3, []string{"columnMapping"}, []string{"columnMapping"}), []string{"changeDataFeed"},
			tf(3, []string{"columnMapping"}, []string{"changeDataFeed", "columnMapping"})},
		{"(1,7) + timestampNtz", tf(1, nil, []string{"domainMetadata"}), []string{"timestampNtz"},
			tf(3, []string{"timestampNtz"}, []string{"domainMetadata", "timestampNtz"})},
		// A feature deltakit does not know is kept where it is listed.
		{"unknown reader-writer feature kept", tf(3, []string{"fancy"}, []string{"fancy"}), []string{"changeDataFeed"},
			tf(3, []string{"fancy"}, []string{"changeDataFeed", "fancy"})},

		// New tables start from (1,2).
		{"new table", nil, nil, legacy(1, 2)},
		{"new table, invariants", nil, []string{"invariants"}, legacy(1, 2)},
		{"new table, columnMapping", nil, []string{"columnMapping"}, tf(2, nil, []string{"appendOnly", "columnMapping", "invariants"})},
		{"new table, columnMapping + timestampNtz", nil, []string{"columnMapping", "timestampNtz"},
			tf(3, []string{"columnMapping", "timestampNtz"}, []string{"appendOnly", "columnMapping", "invariants", "timestampNtz"})},
		{"new table, checkConstraints", nil, []string{"checkConstraints"}, legacy(1, 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cur.Clone()
			got := UpgradeProtocol(tc.cur, tc.features...)
			if tc.want == nil {
				if got != tc.cur {
					t.Fatalf("UpgradeProtocol = %+v, want cur %+v itself", got, tc.cur)
				}
				return
			}
			if got == tc.cur {
				t.Fatalf("UpgradeProtocol returned cur %+v unchanged, want %+v", got, tc.want)
			}
			wantR := sortedFeatureList(tc.want.ReaderFeatures)
			if tc.want.MinReaderVersion >= 3 && wantR == nil {
				wantR = []string{}
			}
			if got.MinReaderVersion != tc.want.MinReaderVersion || got.MinWriterVersion != tc.want.MinWriterVersion ||
				!slices.Equal(got.ReaderFeatures, wantR) || (got.ReaderFeatures == nil) != (wantR == nil) ||
				!slices.Equal(got.WriterFeatures, sortedFeatureList(tc.want.WriterFeatures)) {
				t.Fatalf("UpgradeProtocol = %+v, want %+v", got, tc.want)
			}
			// Never a feature lost, cur untouched.
			for _, f := range tc.cur.SupportedFeatures() {
				if !slices.Contains(got.SupportedFeatures(), f) {
					t.Errorf("feature %s of cur lost", f)
				}
			}
			if tc.cur != nil && !protocolsEqual(tc.cur, before) {
				t.Errorf("cur changed to %+v", tc.cur)
			}
			// The result is the decision's fixed point: asking it again for
			// the same features changes nothing.
			if again := UpgradeProtocol(got, tc.features...); again != got {
				t.Errorf("UpgradeProtocol of its result = %+v, want the result itself", again)
			}
		})
	}
}

// TestFeatureRequirementsCoverKnownFeatures: every feature of the writer
// feature table and every reader feature deltakit reads has its protocol
// requirement, and the reader features are reader-writer ones.
func TestFeatureRequirementsCoverKnownFeatures(t *testing.T) {
	for _, f := range WriterFeatures() {
		if _, ok := featureRequirements[f.Name]; !ok {
			t.Errorf("writer feature %s has no featureRequirements entry", f.Name)
		}
	}
	for _, f := range SupportedReaderFeatures() {
		if r, ok := featureRequirements[f]; !ok || !r.readerWriter {
			t.Errorf("reader feature %s: requirement %+v, %v; want a reader-writer feature", f, r, ok)
		}
	}
	for name, r := range featureRequirements {
		if r.readerWriter != (r.minReader >= 2) || (r.minReader >= 3 && r.minWriter != 7) {
			t.Errorf("%s: requirement %+v is inconsistent", name, r)
		}
	}
}

func sortedFeatureList(s []string) []string {
	if s == nil {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func protocolsEqual(a, b *Protocol) bool {
	return a.MinReaderVersion == b.MinReaderVersion && a.MinWriterVersion == b.MinWriterVersion &&
		slices.Equal(a.ReaderFeatures, b.ReaderFeatures) && slices.Equal(a.WriterFeatures, b.WriterFeatures)
}
