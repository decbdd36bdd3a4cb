package value

import "strings"

// Interner hands out one boxed string (an any holding a string) per
// distinct content while a column's values repeat, so that rows built
// from a low-cardinality column (typically dictionary-encoded in Parquet)
// cost one allocation per distinct value instead of one per cell. It
// turns itself off for a column whose values rarely repeat: after
// internProbe lookups with fewer than half of them hits, or once it holds
// internMaxEntries values. Keyed by content, it is always correct.
//
// The zero value is ready. One Interner serves one column of one reader;
// it is not safe for concurrent use.
type Interner struct {
	m             map[string]any
	lookups, hits int
	off           bool
}

const (
	internMaxEntries = 1 << 14
	internProbe      = 4096 // lookups before judging the hit rate
)

// Bytes returns b as a boxed string, shared with earlier calls of the same
// content while the interner is on. The string never aliases b.
func (c *Interner) Bytes(b []byte) any {
	if c.off {
		return string(b)
	}
	c.lookups++
	if v, ok := c.m[string(b)]; ok { // no allocation for the lookup
		c.hits++
		return v
	}
	return c.add(string(b))
}

// String returns s boxed, shared with earlier calls of the same content
// while the interner is on. An interned value is a copy of s (it outlives
// the buffer s may alias); once the interner is off, s itself is boxed.
func (c *Interner) String(s string) any {
	if c.off {
		return s
	}
	c.lookups++
	if v, ok := c.m[s]; ok {
		c.hits++
		return v
	}
	return c.add(strings.Clone(s))
}

// add interns s (a string of its own) unless the interner turns off now.
func (c *Interner) add(s string) any {
	if len(c.m) >= internMaxEntries || c.lookups >= internProbe && c.hits*2 < c.lookups {
		c.off, c.m = true, nil
		return s
	}
	if c.m == nil {
		c.m = make(map[string]any, 64)
	}
	v := any(s)
	c.m[s] = v
	return v
}
