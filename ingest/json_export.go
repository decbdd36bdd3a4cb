package ingest

import (
	"fmt"
	"strings"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// JSONRow decodes data, one JSON object (an NDJSON line, a Kafka message
// value), into a Row aligned with sch, the way NDJSON input is read:
// top-level fields by name (exact, then case-insensitive), nested fields by
// exact name; an absent field and JSON null are null; values are converted
// to the column types (numbers to integers with range checks, floats and
// decimals; strings to dates, timestamps and decimals; objects to structs
// and maps; arrays to arrays). Errors name the column. NOT NULL is not
// checked here: the table's write checks it.
func JSONRow(sch *schema.StructType, data []byte) (value.Row, error) {
	v, err := decodeJSONText(string(data))
	if err != nil {
		return nil, fmt.Errorf("ingest: invalid JSON: %w", err)
	}
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("ingest: %s is not a JSON object", truncate(jsonText(v), 64))
	}
	row := make(value.Row, len(sch.Fields))
	for i, f := range sch.Fields {
		x, ok := o.vals[f.Name]
		if !ok {
			for _, k := range o.keys {
				if strings.EqualFold(k, f.Name) {
					x = o.vals[k]
					break
				}
			}
		}
		if row[i], err = convertJSON(f.Type, x); err != nil {
			return nil, fmt.Errorf("ingest: column %s: %w", f.Name, err)
		}
	}
	return row, nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
