package structcodec

import "github.com/deltakit/deltakit/schema"

// kindCodec is how the Go values of one Kind are bound to a Delta type:
// encoder returns the converter to the column type t (encode.go), decoder
// the converter from it (decode.go); both return nil, nil when the kind
// cannot be written as, or read from, t.
type kindCodec struct {
	encoder func(n *Node, t schema.Type, col, goName string) (encFn, error)
	decoder func(n *Node, t schema.Type, col, goName string) (decFn, error)
}

// kinds is the table Kind → binders: adding a Kind is one row here (and
// its case in planBuilder.node). Filled in init because the nested kinds
// bind their elements through it.
var kinds [numKinds]kindCodec

func init() {
	kinds = [numKinds]kindCodec{
		Int:     {encodeInt, decodeInt},
		Float:   {encodeFloat, decodeFloat},
		Bool:    {encodeBool, decodeBool},
		String:  {encodeString, decodeString},
		Bytes:   {encodeBytes, decodeBytes},
		Time:    {encodeTime, decodeTime},
		Date:    {encodeDate, decodeDate},
		Decimal: {encodeDecimal, decodeDecimal},
		Micros:  {encodeMicros, decodeMicros},
		Struct:  {encodeStruct, decodeStruct},
		Slice:   {encodeSlice, decodeSlice},
		Map:     {encodeMap, decodeMap},
		Ptr:     {encodePtr, decodePtr},
	}
}
