package parquetio

import (
	"math/big"
	"time"

	"github.com/deltakit/deltakit/value"
)

// The row value model lives in package value; the names below keep
// parquetio's callers compiling until they name value directly.

// Row is one record (value.Row).
//
// Deprecated: use value.Row.
type Row = value.Row

// IndexedRow is a row with its 0-based position in the data file
// (value.IndexedRow).
//
// Deprecated: use value.IndexedRow.
type IndexedRow = value.IndexedRow

// MapEntry is one key/value pair of a map value (value.MapEntry).
//
// Deprecated: use value.MapEntry.
type MapEntry = value.MapEntry

// Date is a Delta date (value.Date).
//
// Deprecated: use value.Date.
type Date = value.Date

// Decimal is an exact Delta decimal (value.Decimal).
//
// Deprecated: use value.Decimal.
type Decimal = value.Decimal

// DateOf returns the date of t's calendar day in t's location.
//
// Deprecated: use value.DateOf.
func DateOf(t time.Time) Date { return value.DateOf(t) }

// NewDecimal returns unscaled × 10^-scale.
//
// Deprecated: use value.NewDecimal.
func NewDecimal(unscaled int64, scale int32) Decimal { return value.NewDecimal(unscaled, scale) }

// ParseDecimal parses plain decimal text into a Decimal.
//
// Deprecated: use value.ParseDecimal.
func ParseDecimal(s string) (Decimal, error) { return value.ParseDecimal(s) }

// MustParseDecimal is ParseDecimal that panics on invalid text.
//
// Deprecated: use value.MustParseDecimal.
func MustParseDecimal(s string) Decimal { return value.MustParseDecimal(s) }

// pow10 returns 10^n; the result must not be modified.
func pow10(n int) *big.Int { return value.Pow10(n) }

func floorDiv(a, b int64) int64 { return value.FloorDiv(a, b) }
