// Package dvcodec encodes and decodes Delta deletion vectors: the
// serialized bitmap (magic number + 64-bit portable RoaringBitmap, spec
// "Deletion Vector Format"; the older native format is read too), the DV
// file that holds them (spec "Deletion Vector File Storage Format": version
// byte, then per DV its size, bitmap and CRC-32), and inline DVs in Z85
// text (spec "Deletion Vector Descriptor Schema").
//
// Reading: LoadAt returns the deleted row indexes of a
// txlog.DeletionVectorDescriptor, from the descriptor itself (inline) or
// from its file, checking size, checksum, magic number and cardinality.
// Writing: a Writer collects the DVs of one operation into one new DV file;
// EncodeBitmap serializes one bitmap; Inline builds an inline descriptor.
//
// The descriptor, its unique id and its file's location
// (DeletionVectorDescriptor.AbsolutePath, Locate) belong to package txlog,
// which replays them without reading DV files. Malformed DVs are
// *txlog.CorruptLogError (errors.Is txlog.ErrCorruptLog).
package dvcodec
