// Package textpack packs the texts a snapshot holds for every live file,
// losslessly: per-file statistics JSON (stats.go) and data file paths
// (path.go) are split into a skeleton, which repeats from file to file and
// is stored once, and literals stored per file in a compact binary form.
// txlog's packed file sets (packed.go) keep their files' texts this way.
package textpack

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// This file packs per-file statistics JSON losslessly: a stats string is
// split into a skeleton (keys, punctuation, whitespace, true/false/null),
// which repeats from file to file and is stored once per table, and the
// literal values (numbers and string values), stored per file in a compact
// binary form. Skeleton.Unpack rebuilds the exact bytes. Text that is not JSON
// round-trips too: the split only relies on quotes and number characters,
// and a text with bytes the skeleton uses as markers is kept raw.

// Skeleton marker bytes: each stands for one literal in the literal bytes.
const (
	litString = 1 + iota // a string value: uvarint length, the bytes between the quotes as written
	litInt               // a canonical integer (-?(0|[1-9][0-9]{0,17})): zigzag varint
	litNumber            // any other number text: uvarint length, the text
	litDate              // a string "YYYY-MM-DD": zigzag varint of days since 1970-01-01
	litTime              // a string "YYYY-MM-DDTHH:MM:SS.fff": zigzag varint of ms since the epoch
	litTimeZ             // the same followed by "Z"
	numLitKinds
)

// PackStats appends the skeleton of stats to skel and its literals to lit.
// ok is false when stats must be kept raw (it holds a marker byte or an
// unterminated string).
func PackStats(stats string, skel, lit []byte) (_, _ []byte, ok bool) {
	for i := 0; i < len(stats); i++ {
		if stats[i] < numLitKinds {
			return skel, lit, false
		}
	}
	s := stats
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := stringEnd(s, i)
			if j < 0 {
				return skel, lit, false
			}
			k := j + 1
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r') {
				k++
			}
			if k < len(s) && s[k] == ':' {
				skel = append(skel, s[i:j+1]...) // a key
			} else {
				skel, lit = packString(s[i+1:j], skel, lit)
			}
			i = j + 1
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && isNumberByte(s[j]) {
				j++
			}
			num := s[i:j]
			if v, ok := canonicalInt(num); ok {
				skel = append(skel, litInt)
				lit = binary.AppendVarint(lit, v)
			} else {
				skel = append(skel, litNumber)
				lit = binary.AppendUvarint(lit, uint64(len(num)))
				lit = append(lit, num...)
			}
			i = j
		default:
			skel = append(skel, c)
			i++
		}
	}
	return skel, lit, true
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// canonicalInt parses an integer written the way strconv.FormatInt writes
// it, of at most 18 digits.
func canonicalInt(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && (len(d) > 1 || neg)) {
		return 0, false
	}
	var v int64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// packString appends a string value (its bytes between the quotes).
func packString(v string, skel, lit []byte) ([]byte, []byte) {
	switch {
	case len(v) == 10:
		if days, ok := ParseDate(v); ok {
			return append(skel, litDate), binary.AppendVarint(lit, days)
		}
	case len(v) == 23 || (len(v) == 24 && v[23] == 'Z'):
		if ms, ok := ParseTimeMillis(v[:23]); ok {
			kind := byte(litTime)
			if len(v) == 24 {
				kind = litTimeZ
			}
			return append(skel, kind), binary.AppendVarint(lit, ms)
		}
	}
	skel = append(skel, litString)
	lit = binary.AppendUvarint(lit, uint64(len(v)))
	return skel, append(lit, v...)
}

func digits(s string, n int) (int64, bool) {
	var v int64
	for i := 0; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// ParseDate parses "YYYY-MM-DD" (a valid day) into days since 1970-01-01.
func ParseDate(s string) (int64, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s, 4)
	m, ok2 := digits(s[5:], 2)
	d, ok3 := digits(s[8:], 2)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// ParseTimeMillis parses "YYYY-MM-DDTHH:MM:SS.fff" into ms since the epoch.
func ParseTimeMillis(s string) (int64, bool) {
	if len(s) != 23 || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' {
		return 0, false
	}
	days, ok := ParseDate(s[:10])
	if !ok {
		return 0, false
	}
	h, ok1 := digits(s[11:], 2)
	mi, ok2 := digits(s[14:], 2)
	sec, ok3 := digits(s[17:], 2)
	f, ok4 := digits(s[20:], 3)
	if !ok1 || !ok2 || !ok3 || !ok4 || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	return days*86_400_000 + h*3_600_000 + mi*60_000 + sec*1000 + f, true
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// FloorDiv returns a/b rounded towards negative infinity.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := FloorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := FloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func appendDigits(b []byte, v int64, n int) []byte {
	var buf [8]byte
	for i := n - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[:n]...)
}

// digitPairs holds "00" to "99", two bytes per number.
var digitPairs = func() (t [200]byte) {
	for i := range 100 {
		t[2*i], t[2*i+1] = byte('0'+i/10), byte('0'+i%10)
	}
	return t
}()

// put2 writes v (0 to 99) as two digits to b[0:2].
func put2(b []byte, v int64) {
	b[0], b[1] = digitPairs[2*v], digitPairs[2*v+1]
}

// AppendDate appends the date days after 1970-01-01 as "YYYY-MM-DD".
func AppendDate(b []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		// not a date ParseDate reads: the last four digits of the year
		b = appendDigits(b, y, 4)
		b = append(b, '-')
		b = appendDigits(b, m, 2)
		b = append(b, '-')
		return appendDigits(b, d, 2)
	}
	var t [10]byte
	put2(t[0:], y/100)
	put2(t[2:], y%100)
	t[4] = '-'
	put2(t[5:], m)
	t[7] = '-'
	put2(t[8:], d)
	return append(b, t[:]...)
}

func appendTimeMillis(b []byte, ms int64) []byte {
	days := FloorDiv(ms, 86_400_000)
	r := ms - days*86_400_000
	b = AppendDate(b, days)
	var t [13]byte // THH:MM:SS.fff
	t[0] = 'T'
	put2(t[1:], r/3_600_000)
	t[3] = ':'
	put2(t[4:], r/60_000%60)
	t[6] = ':'
	put2(t[7:], r/1000%60)
	t[9] = '.'
	f := r % 1000
	t[10] = byte('0' + f/100)
	put2(t[11:], f%100)
	return append(b, t[:]...)
}

// Skeleton is an interned stats skeleton, split into parts for fast
// packing and unpacking.
type Skeleton struct {
	text  string     // the skeleton bytes, markers included
	parts []skelPart // text runs, each followed by one marker (the last by none)
}

// skelPart is a run of skeleton text and the marker after it (0: none,
// the end of the skeleton).
type skelPart struct {
	text string
	kind byte
}

// NewSkeleton returns the skeleton of text, a skeleton PackStats made.
func NewSkeleton(text string) *Skeleton {
	sk := &Skeleton{text: text}
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] < numLitKinds {
			sk.parts = append(sk.parts, skelPart{text[start:i], text[i]})
			start = i + 1
		}
	}
	sk.parts = append(sk.parts, skelPart{text: text[start:]})
	return sk
}

// PackWith appends the literals of stats to lit when stats has skeleton
// sk's text and literals of its kinds (ok false otherwise). A text packed
// this way unpacks exactly; its literals may be of other kinds than
// PackStats would choose (a date kept as a string), never of kinds that
// cannot hold them.
func PackWith(sk *Skeleton, s string, lit []byte) (_ []byte, ok bool) {
	pos := 0
	for _, p := range sk.parts {
		if len(s)-pos < len(p.text) || s[pos:pos+len(p.text)] != p.text {
			return lit, false
		}
		pos += len(p.text)
		switch p.kind {
		case 0:
			return lit, pos == len(s)
		case litString, litDate, litTime, litTimeZ:
			end := stringEnd(s, pos)
			if end < 0 {
				return lit, false
			}
			v := s[pos+1 : end]
			pos = end + 1
			switch p.kind {
			case litString:
				lit = binary.AppendUvarint(lit, uint64(len(v)))
				lit = append(lit, v...)
			case litDate:
				days, ok := ParseDate(v)
				if !ok {
					return lit, false
				}
				lit = binary.AppendVarint(lit, days)
			default:
				want := 23
				if p.kind == litTimeZ {
					want = 24
				}
				if len(v) != want || (want == 24 && v[23] != 'Z') {
					return lit, false
				}
				ms, ok := ParseTimeMillis(v[:23])
				if !ok {
					return lit, false
				}
				lit = binary.AppendVarint(lit, ms)
			}
		case litInt, litNumber:
			if pos >= len(s) || (s[pos] != '-' && (s[pos] < '0' || s[pos] > '9')) {
				return lit, false
			}
			j := pos + 1
			for j < len(s) && isNumberByte(s[j]) {
				j++
			}
			num := s[pos:j]
			pos = j
			if p.kind == litInt {
				v, ok := canonicalInt(num)
				if !ok {
					return lit, false
				}
				lit = binary.AppendVarint(lit, v)
			} else {
				lit = binary.AppendUvarint(lit, uint64(len(num)))
				lit = append(lit, num...)
			}
		}
	}
	return lit, false
}

// stringEnd returns the index of the quote that closes the string whose
// opening quote is at s[i], or -1.
func stringEnd(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	for j := i + 1; ; {
		q := strings.IndexByte(s[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		bs := 0
		for k := q - 1; k > i && s[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// unpack appends the stats text of sk and literals lit to dst; ok is false
// when lit does not match sk.
func (sk *Skeleton) Unpack(dst []byte, lit []byte) ([]byte, bool) {
	for _, p := range sk.parts {
		dst = append(dst, p.text...)
		switch p.kind {
		case 0:
			return dst, len(lit) == 0
		case litString, litNumber:
			n, w := binary.Uvarint(lit)
			if w <= 0 || uint64(len(lit)-w) < n {
				return dst, false
			}
			if p.kind == litString {
				dst = append(dst, '"')
				dst = append(dst, lit[w:w+int(n)]...)
				dst = append(dst, '"')
			} else {
				dst = append(dst, lit[w:w+int(n)]...)
			}
			lit = lit[w+int(n):]
		default:
			v, w := binary.Varint(lit)
			if w <= 0 {
				return dst, false
			}
			lit = lit[w:]
			switch p.kind {
			case litInt:
				dst = strconv.AppendInt(dst, v, 10)
			case litDate:
				dst = append(dst, '"')
				dst = AppendDate(dst, v)
				dst = append(dst, '"')
			default:
				dst = append(dst, '"')
				dst = appendTimeMillis(dst, v)
				if p.kind == litTimeZ {
					dst = append(dst, 'Z')
				}
				dst = append(dst, '"')
			}
		}
	}
	return dst, false
}

// Text returns the skeleton's bytes, markers included (its identity).
func (sk *Skeleton) Text() string { return sk.text }
