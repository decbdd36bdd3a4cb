// Package orderedjson writes JSON objects whose keys keep a given order
// (encoding/json sorts map keys). deltactl's JSON rows (schema order) and
// ingest's JSON text of decoded values (input order) both write objects
// this way.
package orderedjson

import (
	"encoding/json"
	"strings"
)

// WriteObject writes to b the JSON object with keys in the order given:
// each key as encoding/json writes a string, then ':', then what value(b,
// i) writes for keys[i]. It returns value's first error (b then holds a
// part of the object).
func WriteObject(b *strings.Builder, keys []string, value func(b *strings.Builder, i int) error) error {
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k) // a string always marshals
		b.Write(kb)
		b.WriteByte(':')
		if err := value(b, i); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}
