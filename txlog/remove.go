package txlog

import "maps"

// RemoveAt returns the remove action that deletes a logically at
// deletionTimestamp (milliseconds since the Unix epoch) with dataChange true
// (spec "Add File and Remove File"): it carries the path, partition values,
// size, stats, tags and deletion vector of a, and extendedFileMetadata true,
// so readers and vacuum know the removed file without reading it.
func (a *Add) RemoveAt(deletionTimestamp int64) *Remove {
	ext := true
	size := a.Size
	return &Remove{
		Path:                    a.Path,
		DeletionTimestamp:       &deletionTimestamp,
		DataChange:              true,
		ExtendedFileMetadata:    &ext,
		PartitionValues:         maps.Clone(a.PartitionValues),
		Size:                    &size,
		Stats:                   a.Stats,
		Tags:                    maps.Clone(a.Tags),
		DeletionVector:          a.DeletionVector,
		BaseRowID:               a.BaseRowID,
		DefaultRowCommitVersion: a.DefaultRowCommitVersion,
	}
}
