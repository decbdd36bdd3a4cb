package txlog

import "encoding/binary"

// Paths are packed like stats (statspack.go), more simply: runs of two or
// more lowercase hexadecimal digits (the numbers and UUIDs of data file
// names) are stored as nibbles, the rest is the path's skeleton, interned
// per level. "part-00042-1a2b...-c000.snappy.parquet" takes about 30 bytes
// instead of 75.

// litHex marks a hex run in a path skeleton: uvarint length, then the
// digits two to a byte.
const litHex = 1

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// packPath appends the skeleton of p to skel and its hex runs to lit; ok
// is false when p holds a marker byte (it is then stored raw).
func packPath(p string, skel, lit []byte) (_, _ []byte, ok bool) {
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

const hexDigits = "0123456789abcdef"

// unpackPath appends the path of skeleton skel and literals lit to dst; ok
// is false when they do not match.
func unpackPath(dst []byte, skel string, lit []byte) ([]byte, bool) {
	for i := 0; i < len(skel); i++ {
		c := skel[i]
		if c != litHex {
			dst = append(dst, c)
			continue
		}
		n, w := binary.Uvarint(lit)
		nb := (n + 1) / 2
		if w <= 0 || uint64(len(lit)-w) < nb {
			return dst, false
		}
		lit = lit[w:]
		for k := uint64(0); k < n; k++ {
			b := lit[k/2]
			if k%2 == 0 {
				dst = append(dst, hexDigits[b>>4])
			} else {
				dst = append(dst, hexDigits[b&15])
			}
		}
		lit = lit[nb:]
	}
	return dst, len(lit) == 0
}
