package ingest

import (
	"testing"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/schema"
)

// TestLeafTypeNames pins the Parquet → Delta leaf type rules of
// int32Type, int64Type and byteArrayType ("" is unsupported); ct -1 is no
// converted type.
func TestLeafTypeNames(t *testing.T) {
	lt := func(v format.LogicalTypeValue) format.LogicalType { return format.LogicalType{Value: v} }
	none := format.LogicalType{}
	for _, c := range []struct {
		name string
		fn   func(format.LogicalType, deprecated.ConvertedType) string
		lt   format.LogicalType
		ct   deprecated.ConvertedType
		want string
	}{
		{"int32 plain", int32Type, none, -1, schema.Integer},
		{"int32 int8", int32Type, lt(&format.IntType{BitWidth: 8, IsSigned: true}), -1, schema.Byte},
		{"int32 int16", int32Type, lt(&format.IntType{BitWidth: 16, IsSigned: true}), -1, schema.Short},
		{"int32 uint8", int32Type, lt(&format.IntType{BitWidth: 8}), -1, schema.Short},
		{"int32 uint16", int32Type, lt(&format.IntType{BitWidth: 16}), -1, schema.Integer},
		{"int32 uint32", int32Type, lt(&format.IntType{BitWidth: 32}), -1, schema.Long},
		{"int32 int32", int32Type, lt(&format.IntType{BitWidth: 32, IsSigned: true}), -1, schema.Integer},
		{"int32 date", int32Type, lt(&format.DateType{}), -1, schema.Date},
		{"int32 DATE", int32Type, none, deprecated.Date, schema.Date},
		{"int32 INT_8", int32Type, none, deprecated.Int8, schema.Byte},
		{"int32 INT_16", int32Type, none, deprecated.Int16, schema.Short},
		{"int32 UINT_8", int32Type, none, deprecated.Uint8, schema.Short},
		{"int32 UINT_16", int32Type, none, deprecated.Uint16, schema.Integer},
		{"int32 UINT_32", int32Type, none, deprecated.Uint32, schema.Long},
		{"int32 TIME_MILLIS", int32Type, none, deprecated.TimeMillis, ""},
		{"int32 time", int32Type, lt(&format.TimeType{}), -1, ""},
		{"int32 UTF8 is no annotation for ints", int32Type, none, deprecated.UTF8, schema.Integer},
		{"int64 plain", int64Type, none, -1, schema.Long},
		{"int64 timestamp utc", int64Type, lt(&format.TimestampType{IsAdjustedToUTC: true}), -1, schema.Timestamp},
		{"int64 timestamp local", int64Type, lt(&format.TimestampType{}), -1, schema.TimestampNTZ},
		{"int64 uint64", int64Type, lt(&format.IntType{BitWidth: 64}), -1, ""},
		{"int64 TIMESTAMP_MILLIS", int64Type, none, deprecated.TimestampMillis, schema.Timestamp},
		{"int64 TIMESTAMP_MICROS", int64Type, none, deprecated.TimestampMicros, schema.Timestamp},
		{"int64 UINT_64", int64Type, none, deprecated.Uint64, ""},
		{"int64 TIME_MICROS", int64Type, none, deprecated.TimeMicros, ""},
		{"int64 time", int64Type, lt(&format.TimeType{}), -1, ""},
		{"bytes plain", byteArrayType, none, -1, schema.Binary},
		{"bytes string", byteArrayType, lt(&format.StringType{}), -1, schema.String},
		{"bytes enum", byteArrayType, lt(&format.EnumType{}), -1, schema.String},
		{"bytes json", byteArrayType, lt(&format.JsonType{}), -1, schema.String},
		{"bytes UTF8", byteArrayType, none, deprecated.UTF8, schema.String},
		{"bytes ENUM", byteArrayType, none, deprecated.Enum, schema.String},
		{"bytes JSON", byteArrayType, none, deprecated.Json, schema.String},
		{"bytes BSON", byteArrayType, none, deprecated.Bson, schema.Binary},
	} {
		if got := c.fn(c.lt, c.ct); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
