package fileset

import (
	"fmt"
	"net/url"
)

// file is the T of the tests' packing sets: the fields of a txlog add
// that the packed level treats differently (stored per file, kept aside,
// part of the key).
type file struct {
	Path                    string
	PartitionValues         map[string]string
	Size                    int64
	ModificationTime        int64
	DataChange              bool
	Stats                   string
	Tags                    map[string]string
	DeletionVector          *dvDesc
	BaseRowID               *int64
	DefaultRowCommitVersion *int64
	ClusteringProvider      string
}

// fileRare is the R of the tests' codec.
type fileRare struct {
	Tags                    map[string]string
	DeletionVector          *dvDesc
	BaseRowID               *int64
	DefaultRowCommitVersion *int64
	ClusteringProvider      string
}

type dvDesc struct {
	StorageType    string
	PathOrInlineDv string
	Offset         *int32
	SizeInBytes    int32
	Cardinality    int64
}

// Key is the decoded path and the DV's storage type, path and offset, as
// txlog's FileKey is.
func (a *file) Key() Key {
	p, err := url.PathUnescape(a.Path)
	if err != nil {
		p = a.Path
	}
	k := Key{Path: p}
	if d := a.DeletionVector; d != nil {
		k.DV = d.StorageType + d.PathOrInlineDv
		if d.Offset != nil {
			k.DV += fmt.Sprintf("@%d", *d.Offset)
		}
	}
	return k
}

var testCodec = Codec[file, fileRare]{
	Key: (*file).Key,
	Split: func(a *file) (Fields, fileRare, bool) {
		f := Fields{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size, ModificationTime: a.ModificationTime, DataChange: a.DataChange, Stats: a.Stats}
		r := fileRare{Tags: a.Tags, DeletionVector: a.DeletionVector, BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion, ClusteringProvider: a.ClusteringProvider}
		return f, r, r.Tags != nil || r.DeletionVector != nil || r.BaseRowID != nil || r.DefaultRowCommitVersion != nil || r.ClusteringProvider != ""
	},
	Join: func(a *file, f *Fields, r *fileRare) {
		*a = file{Path: f.Path, PartitionValues: f.PartitionValues, Size: f.Size, ModificationTime: f.ModificationTime, DataChange: f.DataChange, Stats: f.Stats}
		if r != nil {
			a.Tags, a.DeletionVector, a.BaseRowID, a.DefaultRowCommitVersion, a.ClusteringProvider = r.Tags, r.DeletionVector, r.BaseRowID, r.DefaultRowCommitVersion, r.ClusteringProvider
		}
	},
}

// tombstone is the T of a set that never packs.
type tombstone struct{ Path string }

func (r *tombstone) Key() Key { return Key{Path: r.Path} }
