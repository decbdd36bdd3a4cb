package txlog

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/deltakit/deltakit/txlog/internal/z85"
)

// The deletion vector codec (bitmaps, DV files, reading and writing them)
// is package txlog/dvcodec; replay needs only the descriptor's unique id
// (actions.go) and the location of its file (AbsolutePath here, Locate in
// path.go, for vacuum and verify).

// AbsolutePath returns the location of an on-disk DV (spec "Derived
// Fields"): for storage type 'u' the table-relative path
// "<prefix>/deletion_vector_<uuid>.bin" (no prefix directory when the prefix
// is empty), for 'p' the URI-decoded absolute path. Inline DVs ('i') have no
// path: it returns an error, as for a malformed descriptor.
func (dv *DeletionVectorDescriptor) AbsolutePath() (string, error) {
	switch dv.StorageType {
	case "u":
		s := dv.PathOrInlineDv
		if len(s) < 20 {
			return "", fmt.Errorf("deletion vector: pathOrInlineDv %q is shorter than a z85 UUID", s)
		}
		prefix, enc := s[:len(s)-20], s[len(s)-20:]
		raw, err := z85.Decode(enc)
		if err != nil {
			return "", fmt.Errorf("deletion vector: bad UUID: %w", err)
		}
		h := hex.EncodeToString(raw)
		name := "deletion_vector_" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32] + ".bin"
		if prefix == "" {
			return name, nil
		}
		return prefix + "/" + name, nil
	case "p":
		return DecodePath(dv.PathOrInlineDv), nil
	case "i":
		return "", errors.New("deletion vector: an inline DV has no path")
	}
	return "", fmt.Errorf("deletion vector: unknown storageType %q", dv.StorageType)
}
