package objectstore

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// The modes Local creates files and directories with, before the process
// umask applies: those of other writers of tables on a local filesystem
// (Spark through Hadoop's RawLocalFileSystem, delta-rs through object_store,
// cp, any open(2) with O_CREAT), so that a reader running as another user
// (a Spark job, a service account) can read the table as far as the umask
// allows (0644 and 0755 with the usual umask 022). os.CreateTemp's 0600
// would make every table private to its writer.
const (
	localFileMode fs.FileMode = 0o666
	localDirMode  fs.FileMode = 0o777
)

// createTemp creates a new temporary file (".tmp-<random>", never listed)
// in dir, mode localFileMode masked by the umask, open for writing.
func createTemp(dir string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, localTempPrefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, localFileMode)
		if errors.Is(err, fs.ErrExist) {
			continue // taken by another writer's temporary file
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, localTempPrefix+"*"), Err: fs.ErrExist}
}
