package value

import (
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Row is one record: a value per field of the schema it was read with or is
// written with, in the schema's (logical) field order. See the package
// documentation for the Go type of each Delta type.
type Row = []any

// IndexedRow is a row together with its 0-based position in the data file,
// counted over all row groups. Deletion vectors name rows by this index.
type IndexedRow struct {
	Index int64 // 0-based row position in the file
	Row   Row
}

// MapEntry is one key/value pair of a Delta map value. Maps are slices of
// entries, in file order, because keys may be []byte or other values that Go
// maps cannot hold.
type MapEntry struct {
	Key   any // never nil in valid data
	Value any // nil for a null value
}

// Date is a Delta date: days since 1970-01-01 (negative before it), with no
// time zone.
type Date int32

// DateOf returns the date of t's calendar day in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	u := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return Date(floorDiv(u.Unix(), 86400))
}

// Time returns midnight UTC of the date.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String returns the date as "YYYY-MM-DD".
func (d Date) String() string { return d.Time().Format(time.DateOnly) }

// Decimal is an exact Delta decimal value: Unscaled × 10^-Scale. A nil
// Unscaled is zero.
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// NewDecimal returns unscaled × 10^-scale.
func NewDecimal(unscaled int64, scale int32) Decimal {
	return Decimal{Unscaled: big.NewInt(unscaled), Scale: scale}
}

// ParseDecimal parses plain decimal text ("-12.340", "7", "+0.5") into a
// Decimal whose Scale is the number of digits after the point. Exponents are
// not accepted.
func ParseDecimal(s string) (Decimal, error) {
	t := s
	neg := false
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	intPart, frac, _ := strings.Cut(t, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return Decimal{}, fmt.Errorf("value: invalid decimal %q", s)
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Decimal{}, fmt.Errorf("value: invalid decimal %q", s)
	}
	if neg {
		u.Neg(u)
	}
	return Decimal{Unscaled: u, Scale: int32(len(frac))}, nil
}

// MustParseDecimal is ParseDecimal for literals in code and tests; it panics
// on invalid text.
func MustParseDecimal(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

// String returns the exact value in plain notation with exactly Scale digits
// after the point ("1.00", "-0.005", "12"); a negative Scale appends zeros.
func (d Decimal) String() string {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	s := u.String()
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	switch {
	case d.Scale < 0:
		if s != "0" {
			s += strings.Repeat("0", int(-d.Scale))
		}
	case d.Scale > 0:
		sc := int(d.Scale)
		if len(s) <= sc {
			s = strings.Repeat("0", sc-len(s)+1) + s
		}
		s = s[:len(s)-sc] + "." + s[len(s)-sc:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Rescale returns d with the given scale if that is exact, that is if scale
// >= d.Scale or the digits dropped are zeros; ok is false otherwise.
func (d Decimal) Rescale(scale int32) (Decimal, bool) {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	switch {
	case scale == d.Scale:
		return Decimal{Unscaled: u, Scale: scale}, true
	case scale > d.Scale:
		m := pow10(int(scale - d.Scale))
		return Decimal{Unscaled: new(big.Int).Mul(u, m), Scale: scale}, true
	default:
		m := pow10(int(d.Scale - scale))
		q, r := new(big.Int).QuoRem(u, m, new(big.Int))
		if r.Sign() != 0 {
			return Decimal{}, false
		}
		return Decimal{Unscaled: q, Scale: scale}, true
	}
}

// Cmp compares d and e numerically: -1 if d < e, 0 if equal, +1 if d > e.
func (d Decimal) Cmp(e Decimal) int {
	a, b := d, e
	if a.Scale < b.Scale {
		a, _ = a.Rescale(b.Scale)
	} else if b.Scale < a.Scale {
		b, _ = b.Rescale(a.Scale)
	}
	ua, ub := a.Unscaled, b.Unscaled
	if ua == nil {
		ua = new(big.Int)
	}
	if ub == nil {
		ub = new(big.Int)
	}
	return ua.Cmp(ub)
}

var pow10Cache = func() []*big.Int {
	out := make([]*big.Int, 77)
	ten := big.NewInt(10)
	out[0] = big.NewInt(1)
	for i := 1; i < len(out); i++ {
		out[i] = new(big.Int).Mul(out[i-1], ten)
	}
	return out
}()

// Pow10 returns 10^n for n >= 0. The result must not be modified.
func Pow10(n int) *big.Int { return pow10(n) }

func pow10(n int) *big.Int {
	if n >= 0 && n < len(pow10Cache) {
		return pow10Cache[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// FloorDiv returns a/b rounded toward negative infinity (b != 0).
func FloorDiv(a, b int64) int64 { return floorDiv(a, b) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
