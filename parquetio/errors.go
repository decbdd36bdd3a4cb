package parquetio

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by errors about Parquet files that cannot be decoded:
// a bad footer, inconsistent levels, a page that fails to decode, and any
// panic recovered inside the Parquet library.
var ErrCorrupt = errors.New("corrupt parquet file")

// ErrSchemaMismatch is wrapped by errors about a file column whose Parquet
// type cannot be read as the Delta type the read schema asks for.
var ErrSchemaMismatch = errors.New("parquet column does not match the Delta type")

// ErrInvalidValue is wrapped by Writer errors about a row value whose Go type
// or range does not fit the Delta type of its field, and about a null in a
// non-nullable field.
var ErrInvalidValue = errors.New("invalid value for the Delta type")

// FileError records the Parquet file and the operation that failed. Match its
// cause with errors.Is (ErrCorrupt, ErrSchemaMismatch, objectstore.ErrNotExist,
// context.Canceled, ...) or errors.As.
type FileError struct {
	Op   string // "open", "read" or "write"
	File string // the store key or the name the caller gave
	Err  error
}

// Error returns "parquetio: <op> <file>: <cause>".
func (e *FileError) Error() string {
	return fmt.Sprintf("parquetio: %s %s: %v", e.Op, e.File, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *FileError) Unwrap() error { return e.Err }

func fileErr(op, file string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FileError
	if errors.As(err, &fe) && fe.File == file {
		return err
	}
	return &FileError{Op: op, File: file, Err: err}
}
