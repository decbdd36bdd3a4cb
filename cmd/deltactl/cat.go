package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/internal/orderedjson"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

func newCatCmd(a *app) *cobra.Command {
	var (
		tt      timeTravel
		limit   int64
		where   string
		columns []string
		format  string
	)
	cmd := &cobra.Command{
		Use:   "cat <table>",
		Short: "Print rows of the table",
		Long: `cat prints rows of the table (latest version, or --version / --timestamp),
with partition pruning and stats-based file skipping for --where.

--where takes a small SQL syntax: comparisons (= != <> < <= > >=) of a column
with a literal, IN (...), NOT IN (...), BETWEEN a AND b, IS NULL, IS NOT NULL,
combined with AND, OR, NOT and parentheses. Literals: numbers, 'strings',
TRUE, FALSE, DATE '2024-01-31', TIMESTAMP '2024-01-31 12:00:00'. Nested
fields are a.b; quote odd names with backquotes.

--format: table (aligned columns; SQL NULL is printed NULL, as DuckDB's
CLI prints it, and the string NULL as "NULL" (the string "NULL" as
"""NULL"""), so that the two stay apart; null inside a nested value is
JSON null), csv (with a header; NULL is an empty field and the empty
string is "", as PostgreSQL's COPY ... CSV and DuckDB write them; fields
quoted as RFC 4180 needs), jsonl (one JSON
object per row; timestamps as RFC 3339 strings, timestamp_ntz without zone,
decimals as strings, binary as base64), arrow (an Apache Arrow IPC stream,
as pyarrow.ipc.open_stream reads it; types as in package arrowio) or
parquet (one Parquet file, Snappy-compressed, with the Arrow schema stored
as pyarrow writes it, so pyarrow.parquet.read_table gives the same types
as the Arrow stream). -o and --format are aliases here and take the
same names (json is jsonl): -o csv is --format csv, -o json is --format
jsonl; given both, they must name the same format (-o json --format csv
is refused). An Arrow stream or a Parquet file
holds every row unless --limit is given. Every format reads the table
through the Arrow scan (table.Table.ScanArrow).`,
		Example: `  deltactl cat ./demo-data/flights --limit 5
  deltactl cat ./demo-data/flights --where "delay > 10 AND origin = 'SFO'" --columns date,delay,destination
  deltactl cat ./demo-data/weather --where "weather IN ('snow', 'fog')" --format csv --limit 0
  deltactl cat ./demo-data/flights --where "origin = 'SFO'" -o parquet > sfo.parquet`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.rowFormat(cmd, format)
			if err != nil {
				return err
			}
			if binaryOutput(format) != "" && !cmd.Flags().Changed("limit") {
				limit = 0
			}
			if limit < 0 {
				return usagef("--limit must be >= 0 (0: all rows), got %d", limit)
			}
			ctx := cmd.Context()
			t, err := tt.open(a, cmd, args[0])
			if err != nil {
				return err
			}
			sopts, err := rowScanOptions(t, limit, where, columns)
			if err != nil {
				return err
			}
			sch, err := t.ScanSchema(sopts...)
			if err != nil {
				return err
			}
			switch format {
			case "arrow":
				return writeArrow(ctx, a.stdout, t, sopts)
			case "parquet":
				return writeParquet(ctx, a.stdout, t, sopts)
			}
			return printRows(newRowWriter(format, a.stdout, sch), arrowRows(ctx, t, sopts))
		},
	}
	tt.register(cmd)
	cmd.Flags().Int64VarP(&limit, "limit", "n", 20, "print at most this many rows (0: all)")
	cmd.Flags().StringVar(&where, "where", "", "filter, e.g. \"delay > 10 AND origin = 'SFO'\"")
	cmd.Flags().StringSliceVar(&columns, "columns", nil, "top-level columns to print, comma-separated (default: all); a nested field s.b cannot be selected (select s)")
	cmd.Flags().StringVar(&format, "format", "", "row format: table, csv, jsonl (or json), arrow or parquet (the same as -o)")
	return cmd
}

// rowScanOptions turns the --limit, --where and --columns flags of a
// command printing rows of t (cat, changes) into scan options; a filter
// that does not parse on t's schema is a usage error.
func rowScanOptions(t *table.Table, limit int64, where string, columns []string) ([]table.ScanOption, error) {
	sopts := []table.ScanOption{table.WithLimit(limit)}
	if where != "" {
		e, err := parseWhere(where, t.Schema())
		if err != nil {
			return nil, usagef("--where: %v", err)
		}
		sopts = append(sopts, table.WithFilter(e))
	}
	if len(columns) > 0 {
		if err := checkColumns(t, columns); err != nil {
			return nil, err
		}
		sopts = append(sopts, table.WithColumns(columns...))
	}
	return sopts, nil
}

// checkColumns returns a usage error for the first --columns name that is
// not a top-level column of t (the scan projects only those, matched as
// table.WithColumns does): it says so, tells a nested field (s.b) of a
// struct column from an unknown name, and lists the columns.
func checkColumns(t *table.Table, columns []string) error {
	for _, c := range columns {
		_, err := t.ScanSchema(table.WithColumns(c))
		if err == nil {
			continue
		}
		if !errors.Is(err, table.ErrInvalidArgument) {
			return err
		}
		names := make([]string, len(t.Schema().Fields))
		for i, f := range t.Schema().Fields {
			names[i] = f.Name
		}
		list := strings.Join(names, ", ")
		for _, n := range names {
			if strings.EqualFold(n, c) {
				return usagef("--columns %s: %v", c, err) // ambiguous under case-insensitive matching
			}
		}
		if top, _, ok := strings.Cut(c, "."); ok {
			if sch, err := t.ScanSchema(table.WithColumns(top)); err == nil {
				if _, isStruct := sch.Fields[0].Type.(*schema.StructType); isStruct {
					return usagef("--columns %s: only top-level columns can be selected, and %s is a field of struct column %s (select %s; --where can filter on %s); the columns are: %s",
						c, c, sch.Fields[0].Name, sch.Fields[0].Name, c, list)
				}
			}
		}
		return usagef("--columns %s: no such column (only top-level columns can be selected); the columns are: %s", c, list)
	}
	return nil
}

// printRows writes rows to w and flushes it, stopping at the first error
// of either.
func printRows(w rowWriter, rows iter.Seq2[table.Row, error]) error {
	for row, err := range rows {
		if err != nil {
			return err
		}
		if err := w.write(row); err != nil {
			return err
		}
	}
	return w.flush()
}

// rowWriter prints scanned rows in one format.
type rowWriter interface {
	write(table.Row) error
	flush() error
}

func newRowWriter(format string, w io.Writer, sch *schema.StructType) rowWriter {
	switch format {
	case "csv":
		return &csvRows{w: bufio.NewWriter(w), sch: sch}
	case "jsonl":
		return &jsonRows{w: bufio.NewWriter(w), sch: sch}
	}
	return &tableRows{tw: newColumnWriter(w, 2), sch: sch}
}

type tableRows struct {
	tw      *columnWriter
	sch     *schema.StructType
	started bool
}

func (r *tableRows) header() {
	names := make([]string, len(r.sch.Fields))
	for i, f := range r.sch.Fields {
		names[i] = f.Name
	}
	fmt.Fprintln(r.tw, strings.Join(names, "\t"))
	r.started = true
}

// rowFormat returns the row format of cat or changes from --format (given)
// and -o, which are aliases taking the same names: the command's row
// formats (rowFormats), and json, which is jsonl for both. Without
// --format the format is -o's; with both given, they must name the same
// format, else a usage error names both flags. -o was checked by
// checkOutput before the command ran.
func (a *app) rowFormat(cmd *cobra.Command, given string) (string, error) {
	valid := rowFormats(cmd.Name())
	rowName := func(s string) string {
		if s == "json" {
			return "jsonl"
		}
		return s
	}
	fromOutput := rowName(a.output)
	if given == "" {
		return fromOutput, nil
	}
	format := rowName(given)
	if !slices.Contains(valid, format) {
		return "", usagef("invalid --format %q: want %s (json is jsonl)", given, orList(valid))
	}
	if cmd.Flags().Changed("output") && format != fromOutput {
		return "", usagef("-o %s and --format %s conflict: for %s, -o %s is --format %s; give one of them (or the same format)", a.output, given, cmd.Name(), a.output, fromOutput)
	}
	return format, nil
}

func (r *tableRows) write(row table.Row) error {
	if !r.started {
		r.header()
	}
	cells := make([]string, len(row))
	for i, v := range row {
		cells[i] = tableCell(r.sch.Fields[i].Type, v)
	}
	_, err := fmt.Fprintln(r.tw, strings.Join(cells, "\t"))
	return err
}

// nullCell is how --format table prints SQL NULL, as DuckDB's CLI does.
const nullCell = "NULL"

// tableCell formats value v of type t as a --format table cell: SQL NULL as
// NULL; a string that is NULL with or without double quotes around it
// (NULL, "NULL", NULL"), in double quotes with its own doubled (the strings NULL and
// "NULL" print "NULL" and """NULL"""), so that a cell NULL is SQL NULL
// alone (the string null and other strings print as they are); tabs and
// newlines as spaces.
func tableCell(t schema.Type, v any) string {
	if v == nil {
		return nullCell
	}
	s := formatValue(t, v)
	if str, ok := v.(string); ok && strings.Trim(str, `"`) == nullCell {
		s = `"` + strings.ReplaceAll(str, `"`, `""`) + `"`
	}
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
}

func (r *tableRows) flush() error {
	if !r.started {
		r.header()
	}
	return r.tw.Flush()
}

type csvRows struct {
	w       *bufio.Writer
	sch     *schema.StructType
	started bool
}

// header writes the column names once, before the first row (or at the
// end of an empty result).
func (r *csvRows) header() {
	if r.started {
		return
	}
	r.started = true
	for i, f := range r.sch.Fields {
		r.field(i, f.Name)
	}
	r.w.WriteByte('\n')
}

// field writes the i-th field of a record: s quoted as RFC 4180 and
// encoding/csv quote it (a comma, double quote, CR or LF in it, a leading
// space, or the PostgreSQL end-of-data marker \.), and also when s is
// empty, so that an empty value ("") differs from NULL, which write gives
// as an unquoted empty field (nullField), as PostgreSQL's COPY ... CSV and
// DuckDB write them.
func (r *csvRows) field(i int, s string) {
	if i > 0 {
		r.w.WriteByte(',')
	}
	if s != "" && s != `\.` && !strings.ContainsAny(s, ",\"\r\n") {
		if c, _ := utf8.DecodeRuneInString(s); !unicode.IsSpace(c) {
			r.w.WriteString(s)
			return
		}
	}
	r.w.WriteByte('"')
	r.w.WriteString(strings.ReplaceAll(s, `"`, `""`))
	r.w.WriteByte('"')
}

// nullField marks a NULL cell for csvRows.write: an empty field, unquoted.
func (r *csvRows) nullField(i int) {
	if i > 0 {
		r.w.WriteByte(',')
	}
}

func (r *csvRows) write(row table.Row) error {
	r.header()
	for i, v := range row {
		if v == nil {
			r.nullField(i)
			continue
		}
		r.field(i, formatValue(r.sch.Fields[i].Type, v))
	}
	return r.w.WriteByte('\n')
}

func (r *csvRows) flush() error {
	r.header()
	return r.w.Flush()
}

type jsonRows struct {
	w   *bufio.Writer
	sch *schema.StructType
}

func (r *jsonRows) write(row table.Row) error {
	b, err := json.Marshal(jsonValue(r.sch, table.Row(row)))
	if err != nil {
		return err
	}
	r.w.Write(b)
	return r.w.WriteByte('\n')
}

func (r *jsonRows) flush() error { return r.w.Flush() }

// orderedObject is a JSON object whose keys keep the schema order.
type orderedObject struct {
	keys []string
	vals []any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	err := orderedjson.WriteObject(&b, o.keys, func(b *strings.Builder, i int) error {
		vb, err := json.Marshal(o.vals[i])
		b.Write(vb)
		return err
	})
	if err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// jsonValue converts a value of type t to what encoding/json writes for it.
func jsonValue(t schema.Type, v any) any {
	if v == nil {
		return nil
	}
	switch t := t.(type) {
	case *schema.StructType:
		row, ok := v.(table.Row)
		if !ok {
			return fmt.Sprint(v)
		}
		o := orderedObject{}
		for i, f := range t.Fields {
			o.keys = append(o.keys, f.Name)
			var fv any
			if i < len(row) {
				fv = row[i]
			}
			o.vals = append(o.vals, jsonValue(f.Type, fv))
		}
		return o
	case *schema.ArrayType:
		arr, ok := v.([]any)
		if !ok {
			return fmt.Sprint(v)
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = jsonValue(t.ElementType, e)
		}
		return out
	case *schema.MapType:
		entries, ok := v.([]table.MapEntry)
		if !ok {
			return fmt.Sprint(v)
		}
		if pt, ok := t.KeyType.(*schema.PrimitiveType); ok && pt.Name == schema.String {
			o := orderedObject{}
			for _, e := range entries {
				o.keys = append(o.keys, fmt.Sprint(e.Key))
				o.vals = append(o.vals, jsonValue(t.ValueType, e.Value))
			}
			return o
		}
		out := make([]any, len(entries))
		for i, e := range entries {
			out[i] = map[string]any{"key": jsonValue(t.KeyType, e.Key), "value": jsonValue(t.ValueType, e.Value)}
		}
		return out
	case *schema.DecimalType:
		return formatValue(t, v)
	case *schema.PrimitiveType:
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return strconv.FormatFloat(x, 'g', -1, 64)
			}
		case float32:
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return strconv.FormatFloat(float64(x), 'g', -1, 32)
			}
		case time.Time, table.Date, []byte:
			return formatValue(t, v)
		}
		return v
	}
	return v
}

// formatValue formats one value of type t as text ("" for null).
func formatValue(t schema.Type, v any) string {
	if v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case table.Date:
		return x.String()
	case table.Decimal:
		return x.String()
	case time.Time:
		if pt, ok := t.(*schema.PrimitiveType); ok && pt.Name == schema.TimestampNTZ {
			return x.UTC().Format("2006-01-02T15:04:05.999999")
		}
		return x.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64, int32, int16, int8, bool:
		return fmt.Sprint(x)
	}
	b, err := json.Marshal(jsonValue(t, v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
