// Package ingest reads local Parquet, CSV and NDJSON files as rows for a
// Delta table, with the Delta schema inferred from the files: from the
// Parquet footer (TIMESTAMP with isAdjustedToUTC=false becomes
// timestamp_ntz), or by sniffing every value of a CSV or NDJSON file. Rows
// come in the value model (package value), ready for table.WriteFiles or the
// streaming sink.
//
// It is the library side of "deltactl ingest"; it knows nothing of the
// transaction log.
package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
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
	stdin     io.Reader
}

// WithStdin sets what the path "-" reads (default os.Stdin).
func WithStdin(r io.Reader) Option { return func(c *config) { c.stdin = r } }

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
	files  []string // the paths read
	names  []string // the paths as given (differ from files for a spooled stream)
	spool  string   // temp file holding a non-seekable input, "" if none
	sizes  []int64
	rows   []int64 // rows per file, -1 when unknown
	format Format
	schema *schema.StructType
	cfg    config

	arrowOnce sync.Once     // ArrowSchema's answer, computed once
	arrowSch  *arrow.Schema // nil: not readable column-wise
}

// Open prepares reading path, a file or a directory (its files with a
// supported extension, recursively, in lexical order; hidden files and
// directories are skipped). It infers the schema: from the first Parquet
// file's footer (every other file must have the same columns), or from
// every value of the CSV or NDJSON files (a first pass over them). Errors
// name the file and, for parse errors, the line.
//
// path "-" reads standard input (WithStdin), and a pipe or a device such as
// /dev/stdin is read too: such an input is read once, into a temp file that
// Close removes, and its format is WithFormat's, the name's extension, or
// sniffed from its first bytes.
func Open(ctx context.Context, path string, opts ...Option) (*Source, error) {
	cfg := config{stdin: os.Stdin}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Source{cfg: cfg}
	if stream, err := isStream(path); err != nil {
		return nil, err
	} else if stream {
		if err := s.spoolInput(ctx, path); err != nil {
			return nil, err
		}
	} else {
		files, err := listInputs(path, cfg.format)
		if err != nil {
			return nil, err
		}
		s.files, s.names = files, files
	}
	if err := s.open(ctx); err != nil {
		err = s.rename(err)
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) open(ctx context.Context) error {
	for _, f := range s.files {
		fmtOf := s.cfg.format
		if fmtOf == "" {
			fmtOf, _ = FormatOf(f)
		}
		if s.format == "" {
			s.format = fmtOf
		} else if s.format != fmtOf {
			return fmt.Errorf("%w: %s is %s, the other files are %s", ErrUnsupported, f, fmtOf, s.format)
		}
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		s.sizes = append(s.sizes, st.Size())
	}
	switch s.format {
	case Parquet:
		return s.openParquet()
	case CSV:
		return s.openCSV(ctx)
	case NDJSON:
		return s.openNDJSON(ctx)
	}
	return fmt.Errorf("%w: format %q", ErrUnsupported, s.format)
}

// isStream reports whether path is "-" (standard input) or a file that
// can be read only once (a pipe, a character device such as /dev/stdin).
func isStream(path string) (bool, error) {
	if path == "-" || strings.HasPrefix(path, "/dev/") {
		return true, nil // /dev/stdin, /dev/fd/N: read once, whatever is behind
	}
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return !st.IsDir() && !st.Mode().IsRegular(), nil
}

// spoolInput copies a non-seekable input to a temp file, read once, so
// that schema inference and the rows read it as a file. Without
// WithFormat, the format is the name's extension, else sniffed from the
// first bytes: "PAR1" is Parquet, '{' NDJSON, anything else CSV.
func (s *Source) spoolInput(ctx context.Context, path string) (err error) {
	var r io.Reader = s.cfg.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	tmp, err := os.CreateTemp("", "deltakit-ingest-*")
	if err != nil {
		return fmt.Errorf("ingest: spooling %s: %w", path, err)
	}
	s.spool = tmp.Name()
	defer func() {
		if cerr := tmp.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("ingest: spooling %s: %w", path, cerr)
		}
		if err != nil {
			s.Close()
		}
	}()
	if _, err := io.Copy(tmp, ctxReader{ctx, r}); err != nil {
		return fmt.Errorf("ingest: reading %s: %w", path, err)
	}
	s.files, s.names = []string{s.spool}, []string{path}
	if s.cfg.format == "" {
		if f, ok := FormatOf(path); ok {
			s.cfg.format = f
		} else if s.cfg.format, err = sniffFormat(tmp); err != nil {
			return fmt.Errorf("ingest: reading %s: %w", path, err)
		}
	}
	return nil
}

// ctxReader stops reading when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func sniffFormat(f *os.File) (Format, error) {
	head := make([]byte, 512)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	if bytes.HasPrefix(head, []byte("PAR1")) {
		return Parquet, nil
	}
	if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return NDJSON, nil
	}
	return CSV, nil
}

// Close removes the temp file of a spooled input ("-", a pipe); it is a
// no-op for files. Call it when done reading.
func (s *Source) Close() error {
	if s.spool == "" {
		return nil
	}
	err := os.Remove(s.spool)
	s.spool = ""
	return err
}

// rename names the input as given instead of its spool file in err.
func (s *Source) rename(err error) error {
	if err == nil || s.spool == "" || len(s.names) == 0 || !strings.Contains(err.Error(), s.spool) {
		return err
	}
	return &renamedError{msg: strings.ReplaceAll(err.Error(), s.spool, s.names[0]), err: err}
}

type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

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

// Files returns the input files in reading order, as given ("-" for
// standard input).
func (s *Source) Files() []string { return slices.Clone(s.names) }

// FileSizes returns the sizes in bytes of Files.
func (s *Source) FileSizes() []int64 { return slices.Clone(s.sizes) }

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
func (s *Source) Rows(ctx context.Context, skip int64) iter.Seq2[value.Row, error] {
	return func(yield func(value.Row, error) bool) {
		for i, f := range s.files {
			if skip > 0 && s.rows[i] >= 0 && skip >= s.rows[i] {
				skip -= s.rows[i]
				continue
			}
			var seq iter.Seq2[value.Row, error]
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
					yield(nil, s.rename(err))
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
