package textpack

import (
	"encoding/binary"
	"slices"
	"strings"
)

// Paths are packed like stats (stats.go), more simply: runs of two or
// more lowercase hexadecimal digits (the numbers and UUIDs of data file
// names) are stored as nibbles, the rest is the path's skeleton, interned
// per level. "part-00042-1a2b...-c000.snappy.parquet" takes about 30 bytes
// instead of 75.

// litHex marks a hex run in a path skeleton: uvarint length, then the
// digits two to a byte.
const litHex = 1

// hexNibble maps a lowercase hex digit to its value + 1, anything else to 0.
var hexNibble = func() (t [256]byte) {
	for i, c := range []byte("0123456789abcdef") {
		t[c] = byte(i + 1)
	}
	return t
}()

func hexVal(c byte) (byte, bool) {
	v := hexNibble[c]
	return v - 1, v != 0
}

// hexPairs holds the two digits of every byte of nibbles.
var hexPairs = func() (t [512]byte) {
	for i := range 256 {
		t[2*i], t[2*i+1] = "0123456789abcdef"[i>>4], "0123456789abcdef"[i&15]
	}
	return t
}()

// PackPath appends the skeleton of p to skel and its hex runs to lit; ok
// is false when p holds a marker byte (it is then stored raw).
func PackPath(p string, skel, lit []byte) (_, _ []byte, ok bool) {
	for i := 0; i < len(p); {
		c := p[i]
		if c <= litHex {
			return skel, lit, false
		}
		j := i
		for j < len(p) {
			if _, isHex := hexVal(p[j]); !isHex {
				break
			}
			j++
		}
		if j-i < 2 {
			skel = append(skel, c)
			i++
			continue
		}
		skel = append(skel, litHex)
		lit = binary.AppendUvarint(lit, uint64(j-i))
		for k := i; k < j; k += 2 {
			hi, _ := hexVal(p[k])
			var lo byte
			if k+1 < j {
				lo, _ = hexVal(p[k+1])
			}
			lit = append(lit, hi<<4|lo)
		}
		i = j
	}
	return skel, lit, true
}

// UnpackPath appends the path of skeleton skel and literals lit to dst; ok
// is false when they do not match.
func UnpackPath(dst []byte, skel string, lit []byte) ([]byte, bool) {
	for len(skel) > 0 {
		i := strings.IndexByte(skel, litHex)
		if i < 0 {
			dst = append(dst, skel...)
			break
		}
		dst = append(dst, skel[:i]...)
		skel = skel[i+1:]
		n, w := binary.Uvarint(lit)
		nb := (n + 1) / 2
		if w <= 0 || uint64(len(lit)-w) < nb {
			return dst, false
		}
		lit = lit[w:]
		at := len(dst)
		dst = slices.Grow(dst, int(n))[:at+int(n)]
		out := dst[at:]
		for k, b := range lit[:n/2] {
			out[2*k], out[2*k+1] = hexPairs[2*int(b)], hexPairs[2*int(b)+1]
		}
		if n%2 == 1 {
			out[n-1] = hexPairs[2*int(lit[n/2])]
		}
		lit = lit[nb:]
	}
	return dst, len(lit) == 0
}
