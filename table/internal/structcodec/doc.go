// Package structcodec is table's reflection codec between Go structs and
// Delta rows: it derives a Delta schema from a struct type (the `delta` tag
// rules documented on table.SchemaOf), binds that plan to a table schema,
// and converts struct values to rows in the value model (package value)
// (Encoder) and back (Decoder).
//
// The work is split in three steps so that rows pay for none of the
// reflection on types:
//   - PlanOf: once per Go type (cached): the fields, their column names and
//     the shape of each Go type (a tree of Node).
//   - BindEncoder / BindDecoder: once per call: the plan against a table
//     schema, checking every field against its column and choosing one
//     converter per field, kind by kind (kinds.go: the table Kind →
//     encoder and decoder binders of encode.go and decode.go).
//   - Encoder.Encode / Decoder.Decode: per row, no type switches on Delta
//     types.
//
// Errors wrap ErrSchemaMismatch or ErrInvalidArgument (the same values as
// table's) and name the Go field and the column. Their text starts with
// "table:" because package table returns them to its callers as they are.
package structcodec

import (
	"errors"

	"github.com/deltakit/deltakit/objectstore"
)

// ErrSchemaMismatch is wrapped when a Go struct does not fit a schema; it
// is table.ErrSchemaMismatch.
var ErrSchemaMismatch = errors.New("schema mismatch")

// ErrInvalidArgument is wrapped for unsupported Go types, bad tags and
// values that do not fit their column; it is table.ErrInvalidArgument
// (objectstore.ErrInvalidArgument).
var ErrInvalidArgument = objectstore.ErrInvalidArgument
