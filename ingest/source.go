// Package ingest reads local Parquet, CSV and NDJSON files as rows for a
// Delta table, with the Delta schema inferred from the files: from the
// Parquet footer (TIMESTAMP with isAdjustedToUTC=false becomes
// timestamp_ntz), or by sniffing every value of a CSV or NDJSON file. Rows
// come in the parquetio value model, ready for table.WriteFiles or the
// streaming sink.
//
// It is the library side of "deltactl ingest"; it knows nothing of the
// transaction log.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
)

// Format is the format of input files.
type Format string

// Supported input formats.
const (
	Parquet Format = "parquet"
	CSV     Format = "csv"
	NDJSON  Format = "ndjson"
)

// ErrUnsupported is wrapped for input that ingest cannot read: an unknown
// file extension, mixed formats, a Parquet type without a Delta
// counterpart.
var ErrUnsupported = errors.New("ingest: unsupported input")

// FormatOf returns the format a file name's extension says: .parquet and
// .parq; .csv and .tsv; .json, .jsonl and .ndjson. ok is false for any
// other name.
func FormatOf(name string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".parquet", ".parq":
		return Parquet, true
	case ".csv", ".tsv":
		return CSV, true
	case ".json", ".jsonl", ".ndjson":
		return NDJSON, true
	}
	return "", false
}

// Option configures Open.
type Option func(*config)

type config struct {
	format    Format
	delimiter rune
	target    *schema.StructType
}

// WithFormat reads the files as f whatever their extensions say.
func WithFormat(f Format) Option { return func(c *config) { c.format = f } }

// WithDelimiter sets the CSV field delimiter (default ',' and '\t' for
// .tsv files).
func WithDelimiter(r rune) Option { return func(c *config) { c.delimiter = r } }

// WithTargetSchema types CSV and NDJSON columns that sch has (matched by
// name, exactly or else case-insensitively) with sch's types instead of the
// inferred ones, for appending to an existing table. Parquet files keep
// their own types; the table converts them on write.
func WithTargetSchema(sch *schema.StructType) Option { return func(c *config) { c.target = sch } }

// Source is a set of input files of one format with one schema.
type Source struct {
	files  []string
	sizes  []int64
	rows   []int64 // rows per file, -1 when unknown
	format Format
	schema *schema.StructType
	cfg    config
}

// Open prepares reading path, a file or a directory (its files with a
// supported extension, recursively, in lexical order; hidden files and
// directories are skipped). It infers the schema: from the first Parquet
// file's footer (every other file must have the same columns), or from
// every value of the CSV or NDJSON files (a first pass over them). Errors
// name the file and, for parse errors, the line.
func Open(ctx context.Context, path string, opts ...Option) (*Source, error) {
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	files, err := listInputs(path, cfg.format)
	if err != nil {
		return nil, err
	}
	s := &Source{files: files, cfg: cfg}
	for _, f := range files {
		fmtOf := cfg.format
		if fmtOf == "" {
			fmtOf, _ = FormatOf(f)
		}
		if s.format == "" {
			s.format = fmtOf
		} else if s.format != fmtOf {
			return nil, fmt.Errorf("%w: %s is %s, the other files are %s", ErrUnsupported, f, fmtOf, s.format)
		}
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		s.sizes = append(s.sizes, st.Size())
	}
	switch s.format {
	case Parquet:
		err = s.openParquet()
	case CSV:
		err = s.openCSV(ctx)
	case NDJSON:
		err = s.openNDJSON(ctx)
	default:
		err = fmt.Errorf("%w: format %q", ErrUnsupported, s.format)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func listInputs(path string, forced Format) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if _, ok := FormatOf(path); !ok && forced == "" {
			return nil, fmt.Errorf("%w: %s: unknown extension (want .parquet, .csv, .tsv, .json, .jsonl or .ndjson)", ErrUnsupported, path)
		}
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != path && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if _, ok := FormatOf(name); ok || forced != "" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no Parquet, CSV or NDJSON file in %s", ErrUnsupported, path)
	}
	return files, nil
}

// Schema returns the inferred schema (with WithTargetSchema's types for the
// columns it has).
func (s *Source) Schema() *schema.StructType { return s.schema }

// Format returns the format of the files.
func (s *Source) Format() Format { return s.format }

// Files returns the input files in reading order.
func (s *Source) Files() []string { return slices.Clone(s.files) }

// Bytes returns the total size of the input files.
func (s *Source) Bytes() int64 {
	var n int64
	for _, x := range s.sizes {
		n += x
	}
	return n
}

// NumRows returns the number of rows of all files, or -1 when unknown.
func (s *Source) NumRows() int64 {
	var n int64
	for _, r := range s.rows {
		if r < 0 {
			return -1
		}
		n += r
	}
	return n
}

// Rows yields the rows of every file in order, aligned with Schema, after
// skipping the first skip rows (Parquet files wholly inside the skipped
// range are not decoded). A bad value or file is yielded as an error, once,
// and ends the iteration; the error names the file and line (CSV, NDJSON)
// or row.
func (s *Source) Rows(ctx context.Context, skip int64) iter.Seq2[parquetio.Row, error] {
	return func(yield func(parquetio.Row, error) bool) {
		for i, f := range s.files {
			if skip > 0 && s.rows[i] >= 0 && skip >= s.rows[i] {
				skip -= s.rows[i]
				continue
			}
			var seq iter.Seq2[parquetio.Row, error]
			switch s.format {
			case Parquet:
				seq = s.parquetRows(ctx, f, skip)
				skip = 0
			case CSV:
				seq = s.csvRows(ctx, f)
			default:
				seq = s.ndjsonRows(ctx, f)
			}
			for row, err := range seq {
				if err != nil {
					yield(nil, err)
					return
				}
				if skip > 0 {
					skip--
					continue
				}
				if !yield(row, nil) {
					return
				}
			}
		}
	}
}

// targetType returns WithTargetSchema's type of column name, or nil.
func (c *config) targetType(name string) schema.Type {
	if c.target == nil {
		return nil
	}
	if f := c.target.Field(name); f != nil {
		return f.Type
	}
	var found schema.Type
	for _, f := range c.target.Fields {
		if strings.EqualFold(f.Name, name) {
			if found != nil {
				return nil
			}
			found = f.Type
		}
	}
	return found
}
