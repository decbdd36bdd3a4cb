package txlog

import (
	"slices"
)

// featureRequirement is what the spec requires of a protocol that supports
// a table feature: the lowest reader and writer versions ("Reader Version
// Requirements", "Writer Version Requirements"; 3 and 7 for the features
// that exist only as table features), whether readers must support it too
// (a reader-writer feature, listed in readerFeatures as well at reader
// version 3: spec "Supported Features"), and the features it needs
// supported with it (rowTracking and clustering write domainMetadata
// actions, spec "Row Tracking", "Clustered Table"; Iceberg compatibility
// needs column mapping; catalogManaged needs in-commit timestamps and the
// VACUUM protocol check).
type featureRequirement struct {
	minReader, minWriter int32
	readerWriter         bool
	requires             []string
}

// featureRequirements is the table of known features. A feature that is
// not listed is treated as a writer feature at writer version 7, or a
// reader-writer one at (3,7) when the protocol lists it in readerFeatures.
var featureRequirements = map[string]featureRequirement{
	// Legacy features: implied by a legacy version pair.
	FeatureAppendOnly:       {1, 2, false, nil},
	FeatureInvariants:       {1, 2, false, nil},
	FeatureCheckConstraints: {1, 3, false, nil},
	FeatureChangeDataFeed:   {1, 4, false, nil},
	FeatureGeneratedColumns: {1, 4, false, nil},
	FeatureColumnMapping:    {2, 5, true, nil},
	FeatureIdentityColumns:  {1, 6, false, nil},
	// Writer features that exist only as table features.
	FeatureDomainMetadata:       {1, 7, false, nil},
	FeatureRowTracking:          {1, 7, false, []string{FeatureDomainMetadata}},
	FeatureClustering:           {1, 7, false, []string{FeatureDomainMetadata}},
	FeatureInCommitTimestamp:    {1, 7, false, nil},
	FeatureColumnDefaults:       {1, 7, false, nil},
	FeatureIcebergCompatV1:      {1, 7, false, []string{FeatureColumnMapping}},
	FeatureIcebergCompatV2:      {1, 7, false, []string{FeatureColumnMapping}},
	FeatureCheckpointProtection: {1, 7, false, nil},
	// Reader-writer features that exist only as table features.
	FeatureDeletionVectors:     {3, 7, true, nil},
	FeatureTimestampNTZ:        {3, 7, true, nil},
	FeatureV2Checkpoint:        {3, 7, true, nil},
	FeatureVacuumProtocolCheck: {3, 7, true, nil},
	FeatureTypeWidening:        {3, 7, true, nil},
	FeatureTypeWideningPreview: {3, 7, true, nil},
	FeatureVariantType:         {3, 7, true, nil},
	FeatureCatalogManaged:      {3, 7, true, []string{FeatureInCommitTimestamp, FeatureVacuumProtocolCheck}},
}

// requirement returns the requirement of feature name on a protocol whose
// readerFeatures are reader (for features not in featureRequirements).
func requirement(name string, reader []string) featureRequirement {
	if r, ok := featureRequirements[name]; ok {
		return r
	}
	if slices.Contains(reader, name) {
		return featureRequirement{minReader: 3, minWriter: 7, readerWriter: true}
	}
	return featureRequirement{minReader: 1, minWriter: 7}
}

// impliedFeatures returns, sorted, the legacy features a protocol without
// table features implies (spec "Reader Version Requirements", "Writer
// Version Requirements"): each legacy feature whose reader and writer
// versions it reaches (columnMapping needs reader version 2 as well as
// writer version 5). A protocol at writer version 7, or at reader
// version 3, implies none: it lists what it supports.
func impliedFeatures(reader, writer int32) []string {
	if writer >= 7 || reader >= 3 {
		return nil
	}
	var out []string
	for name, r := range featureRequirements {
		if r.minWriter < 7 && r.minReader <= reader && r.minWriter <= writer {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// SupportedFeatures returns, sorted, every table feature p supports (spec
// "Supported Features"): the features implied by a legacy version pair, or
// the features listed in readerFeatures and writerFeatures.
func (p *Protocol) SupportedFeatures() []string {
	if p == nil {
		return nil
	}
	out := impliedFeatures(p.MinReaderVersion, p.MinWriterVersion)
	if p.MinWriterVersion >= 7 || p.MinReaderVersion >= 3 {
		out = slices.Concat(p.ReaderFeatures, p.WriterFeatures)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// UpgradeProtocol is the one decision of deltakit's protocol changes: it
// returns the protocol for a table whose protocol is cur (nil for a new
// table) that must also support features. Every protocol deltakit commits
// comes from it (ProtocolFor is it for the features a schema and
// configuration use; the commit path runs it on every commit that changes
// metadata or protocol).
//
// When cur already supports every feature of features, and every feature
// they require (featureRequirements), the result is cur itself (the same
// pointer): the operation changes nothing in the protocol, whatever the
// form of cur.
//
// Otherwise the result supports exactly what cur supports plus the new
// features (a protocol never loses a feature: spec "Supported Features"),
// in the weakest form the spec allows, which is also how Spark (delta-spark
// 4.4) merges protocols:
//
//   - reader and writer versions are the highest that any supported
//     feature requires, never lower than cur's. So a table at reader
//     version 2 (column mapping without reader features) stays at 2 while
//     no feature that needs reader version 3 (deletionVectors,
//     timestampNtz, typeWidening, v2Checkpoint, ...) is added: a reader of
//     reader version 2 with column mapping reads it before and after.
//   - a legacy version pair (writer below 7) when the features it implies
//     are exactly the supported ones ((1,2) with a CHECK constraint becomes
//     (1,3)); else writer version 7 with every supported feature listed in
//     writerFeatures, the legacy ones cur implied included (spec "Table
//     Features for New and Existing Tables": a client must assume an
//     implied feature was used).
//   - at reader version 3 every supported reader-writer feature is listed
//     in readerFeatures too (columnMapping included); below it
//     readerFeatures is absent.
//
// A new table starts from (1,2), which implies appendOnly and invariants:
// (1,2) itself when nothing else is needed, and those two listed at writer
// version 7 (as Spark's CREATE TABLE lists them). Unlike Spark's
// normalization, the versions of cur are never lowered (Spark turns
// (3,7) with only writer features into (1,7)): an operation changes the
// protocol only by what it adds. Feature lists are sorted.
func UpgradeProtocol(cur *Protocol, features ...string) *Protocol {
	base := cur
	if base == nil {
		base = &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	}
	have := base.SupportedFeatures()
	all := slices.Clone(have)
	var add func(name string)
	add = func(name string) {
		if slices.Contains(all, name) {
			return
		}
		all = append(all, name)
		for _, dep := range requirement(name, base.ReaderFeatures).requires {
			add(dep)
		}
	}
	for _, f := range features {
		add(f)
	}
	if cur != nil && len(all) == len(have) {
		return cur
	}
	slices.Sort(all)
	reader, writer := base.MinReaderVersion, base.MinWriterVersion
	for _, f := range all {
		r := requirement(f, base.ReaderFeatures)
		reader, writer = max(reader, r.minReader), max(writer, r.minWriter)
	}
	if writer < 7 && reader < 3 && slices.Equal(impliedFeatures(reader, writer), all) {
		return &Protocol{MinReaderVersion: reader, MinWriterVersion: writer}
	}
	p := &Protocol{MinReaderVersion: reader, MinWriterVersion: 7, WriterFeatures: all}
	if reader >= 3 {
		p.ReaderFeatures = []string{}
		for _, f := range all {
			if requirement(f, base.ReaderFeatures).readerWriter {
				p.ReaderFeatures = append(p.ReaderFeatures, f)
			}
		}
	}
	return p
}
