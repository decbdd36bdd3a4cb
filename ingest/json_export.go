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
// decimals; strings to dates, timestamps and decimals, base64 strings to binary; objects to structs
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
	row, col, err := objectRow(sch.Fields, o)
	if err != nil {
		return nil, fmt.Errorf("ingest: column %s: %w", col, err)
	}
	return row, nil
}

// objectRow converts the top-level fields of o into a row aligned with
// fields: each by its name, exact first, then case-insensitive; an absent
// field is null. On an error it returns the name of the column that failed.
func objectRow(fields []*schema.StructField, o *object) (value.Row, string, error) {
	row := make(value.Row, len(fields))
	for i, f := range fields {
		x, ok := o.vals[f.Name]
		if !ok {
			for _, k := range o.keys {
				if strings.EqualFold(k, f.Name) {
					x = o.vals[k]
					break
				}
			}
		}
		var err error
		if row[i], err = convertJSON(f.Type, x); err != nil {
			return nil, f.Name, err
		}
	}
	return row, "", nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
