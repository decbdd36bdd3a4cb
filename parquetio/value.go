package parquetio

import (
	"math/big"
	"time"

	"github.com/deltakit/deltakit/value"
)

// The row value model lives in package value; the names below keep
// parquetio's callers compiling until they name value directly. They carry
// no "Deprecated:" paragraph yet, because staticcheck (SA1019, run by CI)
// would flag each of the ~900 uses the mechanical rename is to replace.

// Row is one record (value.Row).
//
// New code uses value.Row; this alias goes once callers are renamed.
type Row = value.Row

// IndexedRow is a row with its 0-based position in the data file
// (value.IndexedRow).
//
// New code uses value.IndexedRow; this alias goes once callers are renamed.
type IndexedRow = value.IndexedRow

// MapEntry is one key/value pair of a map value (value.MapEntry).
//
// New code uses value.MapEntry; this alias goes once callers are renamed.
type MapEntry = value.MapEntry

// Date is a Delta date (value.Date).
//
// New code uses value.Date; this alias goes once callers are renamed.
type Date = value.Date

// Decimal is an exact Delta decimal (value.Decimal).
//
// New code uses value.Decimal; this alias goes once callers are renamed.
type Decimal = value.Decimal

// DateOf returns the date of t's calendar day in t's location.
//
// New code uses value.DateOf; this alias goes once callers are renamed.
func DateOf(t time.Time) Date { return value.DateOf(t) }

// NewDecimal returns unscaled × 10^-scale.
//
// New code uses value.NewDecimal; this alias goes once callers are renamed.
func NewDecimal(unscaled int64, scale int32) Decimal { return value.NewDecimal(unscaled, scale) }

// ParseDecimal parses plain decimal text into a Decimal.
//
// New code uses value.ParseDecimal; this alias goes once callers are renamed.
func ParseDecimal(s string) (Decimal, error) { return value.ParseDecimal(s) }

// MustParseDecimal is ParseDecimal that panics on invalid text.
//
// New code uses value.MustParseDecimal; this alias goes once callers are renamed.
func MustParseDecimal(s string) Decimal { return value.MustParseDecimal(s) }

// pow10 returns 10^n; the result must not be modified.
func pow10(n int) *big.Int { return value.Pow10(n) }

func floorDiv(a, b int64) int64 { return value.FloorDiv(a, b) }
