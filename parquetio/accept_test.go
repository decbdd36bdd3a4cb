package parquetio

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// The writer accepts exactly the Go values value.Check accepts for a
// column: the check before any file is written and the encoder agree, so a
// value that passes the check never fails inside the file writer.
func TestEncoderAcceptsWhatCheckAccepts(t *testing.T) {
	types := []schema.Type{
		schema.Primitive(schema.Long), schema.Primitive(schema.Integer),
		schema.Primitive(schema.Short), schema.Primitive(schema.Byte),
		&schema.DecimalType{Precision: 10, Scale: 2}, &schema.DecimalType{Precision: 20, Scale: 0},
	}
	values := []any{
		int(5), int8(5), int16(5), int32(5), int64(5),
		uint(5), uint8(5), uint16(5), uint32(5), uint64(5),
		uint64(math.MaxUint64), float64(5), "5",
	}
	for _, typ := range types {
		for _, v := range values {
			t.Run(fmt.Sprintf("%s/%T(%v)", typ, v, v), func(t *testing.T) {
				_, checkErr := value.Check(typ, v)
				sch := &schema.StructType{Fields: []*schema.StructField{{Name: "c", Type: typ, Nullable: true}}}
				_, writeErr := WriteFile(context.Background(), objectstore.NewMem("t"), "part-0.parquet", sch, []value.Row{{v}})
				if (checkErr == nil) != (writeErr == nil) {
					t.Fatalf("value.Check: %v; writer: %v; want both to accept or both to refuse", checkErr, writeErr)
				}
			})
		}
	}
}
