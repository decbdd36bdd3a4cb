package parquetio

import (
	"math/big"

	"github.com/deltakit/deltakit/value"
)

// The row value model (value.Row, value.Date, value.Decimal,
// value.MapEntry) lives in package value; parquetio reads and writes it.

// pow10 returns 10^n; the result must not be modified.
func pow10(n int) *big.Int { return value.Pow10(n) }

func floorDiv(a, b int64) int64 { return value.FloorDiv(a, b) }
