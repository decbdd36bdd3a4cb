// Package value owns deltakit's row value model and the per-type codec of
// the Delta primitive types. It sits just above schema and below every other
// package (parquetio, arrowio, txlog users, table), so that all of them share
// one answer to "what Go value is a Delta value, and how is it written down".
//
// # Value model
//
// A Row is one record, a value per field in schema order; nil is null.
//
//	Delta type       Go value (canonical)       also accepted on write
//	long             int64                      int, int8..int32, uint8..uint32, uint64/uint ≤ MaxInt64
//	integer          int32                      any of the integer types above, in range
//	short            int16                      (same, in range)
//	byte             int8                       (same, in range)
//	float            float32                    float64
//	double           float64                    float32
//	boolean          bool
//	string           string                     []byte
//	binary           []byte                     string
//	date             Date                       time.Time (its calendar day)
//	timestamp        time.Time (UTC)            time.Time in any zone
//	timestamp_ntz    time.Time (wall clock, UTC)
//	decimal(p,s)     Decimal (scale s)          *Decimal, string ("12.30"), int, int32, int64
//	struct<...>      Row
//	array<T>         []any
//	map<K,V>         []MapEntry
//
// Timestamps have microsecond precision in files: sub-microsecond digits are
// dropped. A timestamp is an instant and reads back in UTC. A timestamp_ntz
// is a wall-clock reading without zone, held as the wall clock of a
// time.Time in UTC (WallClock takes t's wall clock in t's own location).
// Dates are days since 1970-01-01 with no zone; Date.String gives
// "2006-01-02". Decimals are exact: Decimal{Unscaled, Scale} is Unscaled ×
// 10^-Scale, and Decimal.String gives the exact plain text ("-999.99"). Maps
// are slices of MapEntry in file order, since keys may be []byte or other
// values a Go map cannot hold.
//
// # Codec
//
// CodecOf returns the Codec of a primitive or decimal type: how a Go value
// is accepted (Check, Normalize), rendered as and parsed from a
// partitionValues string (spec "Partition Value Serialization") and a stats
// min/max JSON literal (spec "Per-file Statistics"), and which Arrow type
// holds it. Check validates nested values (struct, array, map) through the
// codecs of their leaves. This file set is the one place that switches over
// the Delta primitive types; errors are *Error values wrapping
// ErrTypeMismatch, ErrOutOfRange, ErrSyntax, ErrNull or ErrUnsupported.
//
// Where a Delta type becomes a Parquet value (physical types, encodings) is
// parquetio's business, and a Go struct field's binding is the struct codec's;
// both accept what Check accepts.
package value
