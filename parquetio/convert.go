package parquetio

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// leafConv turns one non-null Parquet value into the Go value of a Delta type.
type leafConv func(v *parquet.Value) (any, error)

// julianDayOfEpoch is the Julian day number of 1970-01-01, used by INT96.
const julianDayOfEpoch = 2440588

const microsPerDay = 86_400_000_000

func isUnsignedInt(p *pnode) bool {
	if it, ok := p.elem.LogicalType.Value.(*format.IntType); ok {
		return !it.IsSigned
	}
	if ct, ok := p.convertedType(); ok {
		switch ct {
		case deprecated.Uint8, deprecated.Uint16, deprecated.Uint32, deprecated.Uint64:
			return true
		}
	}
	return false
}

// makeConv returns the conversion of file leaf p to Delta type t, or an
// error saying why the column cannot be read as t.
func makeConv(t schema.Type, p *pnode) (leafConv, error) {
	phys := p.physical()
	if dt, ok := t.(*schema.DecimalType); ok {
		return decimalConv(dt, p)
	}
	pt, ok := t.(*schema.PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("type %s is not primitive", t)
	}
	bad := func() (leafConv, error) {
		return nil, fmt.Errorf("cannot read physical type %s (%s) as %s", phys, annotation(p), pt.Name)
	}
	switch {
	case pt.Name == schema.Long && phys == format.Int32 && isUnsignedInt(p):
		return func(v *parquet.Value) (any, error) { return int64(uint32(v.Int32())), nil }, nil
	case pt.Name == schema.String && (phys == format.ByteArray || phys == format.FixedLenByteArray):
		c := &value.Interner{}
		return func(v *parquet.Value) (any, error) { return c.Bytes(v.ByteArray()), nil }, nil
	case pt.Name == schema.Timestamp || pt.Name == schema.TimestampNTZ:
		return timestampConv(p, bad)
	case pt.Name == schema.Variant:
		return nil, errors.New("the variant type is not supported")
	}
	if c, ok := plainConvs[convKey{pt.Name, phys}]; ok {
		return c, nil
	}
	return bad()
}

// convKey is a Delta primitive type name and the physical type of a file
// column read as it.
type convKey struct {
	delta string
	phys  format.Type
}

func binaryConv(v *parquet.Value) (any, error) { return append([]byte{}, v.ByteArray()...), nil }

// plainConvs are the conversions that depend on the Delta type and the
// physical type alone (makeConv handles those that depend on the column's
// annotation or keep state).
var plainConvs = map[convKey]leafConv{
	{schema.Boolean, format.Boolean}:          func(v *parquet.Value) (any, error) { return v.Boolean(), nil },
	{schema.Byte, format.Int32}:               func(v *parquet.Value) (any, error) { return int8(v.Int32()), nil },
	{schema.Short, format.Int32}:              func(v *parquet.Value) (any, error) { return int16(v.Int32()), nil },
	{schema.Integer, format.Int32}:            func(v *parquet.Value) (any, error) { return v.Int32(), nil },
	{schema.Long, format.Int64}:               func(v *parquet.Value) (any, error) { return v.Int64(), nil },
	{schema.Long, format.Int32}:               func(v *parquet.Value) (any, error) { return int64(v.Int32()), nil },
	{schema.Float, format.Float}:              func(v *parquet.Value) (any, error) { return v.Float(), nil },
	{schema.Double, format.Double}:            func(v *parquet.Value) (any, error) { return v.Double(), nil },
	{schema.Double, format.Float}:             func(v *parquet.Value) (any, error) { return float64(v.Float()), nil },
	{schema.Double, format.Int32}:             func(v *parquet.Value) (any, error) { return float64(v.Int32()), nil },
	{schema.Double, format.Int64}:             func(v *parquet.Value) (any, error) { return float64(v.Int64()), nil },
	{schema.Binary, format.ByteArray}:         binaryConv,
	{schema.Binary, format.FixedLenByteArray}: binaryConv,
	{schema.Date, format.Int32}:               func(v *parquet.Value) (any, error) { return value.Date(v.Int32()), nil },
}

// annotation describes p's logical or converted type for messages.
func annotation(p *pnode) string {
	if s := p.elem.LogicalType.String(); s != "" {
		return s
	}
	if ct, ok := p.convertedType(); ok {
		return fmt.Sprintf("converted type %d", ct)
	}
	return "no annotation"
}

// timestampUnit returns the unit of an INT64 timestamp column; microseconds
// when it has no annotation.
func timestampUnit(p *pnode) time.Duration {
	if ts, ok := p.elem.LogicalType.Value.(*format.TimestampType); ok && ts.Unit.Value != nil {
		return ts.Unit.Value.Duration()
	}
	if ct, ok := p.convertedType(); ok && ct == deprecated.TimestampMillis {
		return time.Millisecond
	}
	return time.Microsecond
}

func timestampConv(p *pnode, bad func() (leafConv, error)) (leafConv, error) {
	switch p.physical() {
	case format.Int96:
		return func(v *parquet.Value) (any, error) {
			x := v.Int96()
			nanos := uint64(x[1])<<32 | uint64(x[0])
			days := int64(x[2]) - julianDayOfEpoch
			// Keep the result within what microseconds in an int64 hold.
			if days < -100_000_000 || days > 100_000_000 || nanos > 2*86_400_000_000_000 {
				return nil, fmt.Errorf("%w: INT96 timestamp out of range (julian day %d, nanos %d)", ErrCorrupt, x[2], nanos)
			}
			return time.UnixMicro(days*microsPerDay + int64(nanos/1000)).UTC(), nil
		}, nil
	case format.Int64:
		switch timestampUnit(p) {
		case time.Millisecond:
			return func(v *parquet.Value) (any, error) { return time.UnixMilli(v.Int64()).UTC(), nil }, nil
		case time.Nanosecond:
			return func(v *parquet.Value) (any, error) {
				return time.UnixMicro(floorDiv(v.Int64(), 1000)).UTC(), nil
			}, nil
		default:
			return func(v *parquet.Value) (any, error) { return time.UnixMicro(v.Int64()).UTC(), nil }, nil
		}
	case format.Int32:
		// A date column read as a timestamp (type widening date -> timestamp_ntz).
		if _, ok := p.elem.LogicalType.Value.(*format.DateType); ok {
			return func(v *parquet.Value) (any, error) { return value.Date(v.Int32()).Time(), nil }, nil
		}
		if ct, ok := p.convertedType(); ok && ct == deprecated.Date {
			return func(v *parquet.Value) (any, error) { return value.Date(v.Int32()).Time(), nil }, nil
		}
	}
	return bad()
}

// decimalScale returns the scale the file stores decimal column p with: the
// DECIMAL annotation's, or 0 for an integer column read as a decimal.
func decimalScale(p *pnode) (int32, bool) {
	if d, ok := p.elem.LogicalType.Value.(*format.DecimalType); ok {
		return d.Scale, true
	}
	if ct, ok := p.convertedType(); ok && ct == deprecated.Decimal {
		s, _ := p.elem.Scale.Get()
		return s, true
	}
	switch p.physical() {
	case format.Int32, format.Int64:
		return 0, true
	}
	return 0, false
}

func decimalConv(t *schema.DecimalType, p *pnode) (leafConv, error) {
	fileScale, ok := decimalScale(p)
	if !ok {
		return nil, fmt.Errorf("cannot read %s (%s) as %s", p.physical(), annotation(p), t)
	}
	target := int32(t.Scale)
	if fileScale > target {
		return nil, fmt.Errorf("file scale %d is larger than the type's scale %d", fileScale, target)
	}
	var mul *big.Int
	if fileScale < target {
		mul = pow10(int(target - fileScale))
	}
	finish := func(u *big.Int) (any, error) {
		if mul != nil {
			u.Mul(u, mul)
		}
		return value.Decimal{Unscaled: u, Scale: target}, nil
	}
	switch p.physical() {
	case format.Int32:
		if isUnsignedInt(p) {
			return func(v *parquet.Value) (any, error) { return finish(big.NewInt(int64(uint32(v.Int32())))) }, nil
		}
		return func(v *parquet.Value) (any, error) { return finish(big.NewInt(int64(v.Int32()))) }, nil
	case format.Int64:
		return func(v *parquet.Value) (any, error) { return finish(big.NewInt(v.Int64())) }, nil
	case format.FixedLenByteArray, format.ByteArray:
		return func(v *parquet.Value) (any, error) { return finish(bigFromTwosComplement(v.ByteArray())) }, nil
	}
	return nil, fmt.Errorf("cannot read physical type %s as %s", p.physical(), t)
}

// bigFromTwosComplement decodes a big-endian two's-complement integer.
func bigFromTwosComplement(b []byte) *big.Int {
	if len(b) == 0 {
		return new(big.Int)
	}
	if len(b) <= 8 {
		var x int64
		if b[0]&0x80 != 0 {
			x = -1
		}
		for _, c := range b {
			x = x<<8 | int64(c)
		}
		return big.NewInt(x)
	}
	z := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return z
}

// twosComplementBytes encodes x big-endian two's-complement in exactly n
// bytes; ok is false when x does not fit.
func twosComplementBytes(x *big.Int, n int) ([]byte, bool) {
	out := make([]byte, n)
	if x.IsInt64() {
		v := x.Int64()
		if n < 8 {
			lim := int64(1) << (8*n - 1)
			if v < -lim || v >= lim {
				return nil, false
			}
		}
		for i := n - 1; i >= 0; i-- {
			// Shifts of 64 or more fill with the sign bit.
			out[i] = byte(v >> uint(8*(n-1-i)))
		}
		return out, true
	}
	if x.Sign() >= 0 {
		if x.BitLen() > 8*n-1 {
			return nil, false
		}
		x.FillBytes(out)
		return out, true
	}
	// negative: 2^(8n) + x
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	m.Add(m, x)
	if m.BitLen() != 8*n || m.Sign() <= 0 {
		return nil, false
	}
	m.FillBytes(out)
	return out, true
}
