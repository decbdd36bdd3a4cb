// Package z85 converts between bytes and Z85 text (ZeroMQ RFC 32), the
// base85 variant the Delta spec uses for deletion vector UUIDs and inline
// bitmaps ("Deletion Vector Descriptor Schema").
package z85

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// alphabet is the Z85 alphabet.
const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// digit maps a byte to its digit value + 1 (0 = not in the alphabet).
var digit = func() (t [256]byte) {
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i + 1)
	}
	return t
}()

// Decode decodes Z85 text whose length is a multiple of 5 into 4 bytes
// per 5 characters. It returns an error for other lengths, characters
// outside the alphabet, or a group above 2^32-1.
func Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := range 5 {
			d := digit[s[i+j]]
			if d == 0 {
				return nil, fmt.Errorf("z85: invalid character %q at %d", s[i+j], i+j)
			}
			v = v*85 + uint64(d-1)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: group at %d overflows 32 bits", i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}

// Encode encodes data, whose length must be a multiple of 4, as Z85.
func Encode(data []byte) (string, error) {
	if len(data)%4 != 0 {
		return "", fmt.Errorf("z85: length %d is not a multiple of 4", len(data))
	}
	var b strings.Builder
	b.Grow(len(data) / 4 * 5)
	for i := 0; i < len(data); i += 4 {
		v := binary.BigEndian.Uint32(data[i:])
		var g [5]byte
		for j := 4; j >= 0; j-- {
			g[j] = alphabet[v%85]
			v /= 85
		}
		b.Write(g[:])
	}
	return b.String(), nil
}
