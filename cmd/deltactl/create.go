package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

func newCreateCmd(a *app) *cobra.Command {
	var (
		ddl         string
		partitionBy []string
		props       []string
		name, desc  string
	)
	cmd := &cobra.Command{
		Use:   "create <table>",
		Short: "Create an empty table",
		Long: `create creates an empty Delta table (version 0) with the given schema.

--schema is a comma-separated column list in Spark DDL style:
  'id long not null, name string, price decimal(10,2), ts timestamp,
   tags array<string>, attrs map<string,string>, point struct<x:double,y:double>'
Types: boolean, byte/tinyint, short/smallint, int/integer, long/bigint,
float/real, double, decimal(p,s), string, binary, date, timestamp,
timestamp_ntz, array<T>, map<K,V>, struct<name:T,...>. A timestamp_ntz column
gives the table the timestampNtz feature (protocol 3/7).`,
		Example: "  deltactl create ./t1 --schema 'id long not null, day date, v double' --partition-by day --property delta.checkpointInterval=20",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ddl == "" {
				return usagef("--schema is required")
			}
			sch, err := parseDDL(ddl)
			if err != nil {
				return usagef("--schema: %v", err)
			}
			properties, err := parseProperties(props)
			if err != nil {
				return err
			}
			opts := []table.Option{table.WithPartitionColumns(partitionBy...)}
			if len(properties) > 0 {
				opts = append(opts, table.WithProperties(properties))
			}
			if name != "" {
				opts = append(opts, table.WithName(name))
			}
			if desc != "" {
				opts = append(opts, table.WithDescription(desc))
			}
			t, err := a.createTable(cmd.Context(), args[0], sch, opts...)
			if err != nil {
				return err
			}
			return a.out().Created(createView(t))
		},
	}
	cmd.Flags().StringVar(&ddl, "schema", "", "columns, e.g. 'id long not null, name string' (required)")
	cmd.Flags().StringSliceVar(&partitionBy, "partition-by", nil, "partition columns, comma-separated")
	cmd.Flags().StringArrayVar(&props, "property", nil, "table property key=value (repeatable)")
	cmd.Flags().StringVar(&name, "name", "", "table name (metaData.name)")
	cmd.Flags().StringVar(&desc, "description", "", "table description (metaData.description)")
	return cmd
}

func createView(t *table.Table) *CreateView {
	snap := t.Snapshot()
	m := snap.Metadata()
	v := &CreateView{Table: t.URI(), Version: t.Version(), ID: m.ID, Protocol: protocolView(snap.Protocol()),
		Schema: fieldViews(t.Schema()), PartitionColumns: append([]string{}, m.PartitionColumns...), Properties: m.Configuration}
	if v.Properties == nil {
		v.Properties = map[string]string{}
	}
	return v
}

func parseProperties(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("--property %q: want key=value", kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

// parseDDL parses "name type [not null] [comment 'text'], ..." into a
// schema.
func parseDDL(s string) (*schema.StructType, error) {
	parts, err := splitTop(s, ',')
	if err != nil {
		return nil, err
	}
	st := &schema.StructType{}
	seen := map[string]bool{}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("empty column definition in %q", s)
		}
		f, err := parseColumnDef(p)
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(f.Name)
		if seen[key] {
			return nil, fmt.Errorf("column %q defined twice", f.Name)
		}
		seen[key] = true
		st.Fields = append(st.Fields, f)
	}
	return st, nil
}

// parseColumnDef parses "name type [not null] [comment '...']".
func parseColumnDef(p string) (*schema.StructField, error) {
	name, rest, err := cutName(p)
	if err != nil {
		return nil, err
	}
	rest = strings.TrimSpace(rest)
	// The type runs until a top-level space followed by NOT or COMMENT.
	typeText, tail := rest, ""
	depth := 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
		case ' ', '\t', '\n':
			if depth == 0 {
				typeText, tail = rest[:i], strings.TrimSpace(rest[i:])
				i = len(rest)
			}
		}
	}
	if typeText == "" {
		return nil, fmt.Errorf("column %q has no type", name)
	}
	t, err := parseDDLType(typeText)
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", name, err)
	}
	f := schema.NewField(name, t, true)
	for tail != "" {
		words := strings.Fields(tail)
		switch {
		case len(words) >= 2 && strings.EqualFold(words[0], "not") && strings.EqualFold(words[1], "null"):
			f.Nullable = false
			tail = strings.TrimSpace(strings.Join(words[2:], " "))
		case len(words) >= 1 && strings.EqualFold(words[0], "null"):
			tail = strings.TrimSpace(strings.Join(words[1:], " "))
		case len(words) >= 2 && strings.EqualFold(words[0], "comment"):
			c := strings.TrimSpace(tail[len(words[0]):])
			if len(c) < 2 || c[0] != '\'' || c[len(c)-1] != '\'' {
				return nil, fmt.Errorf("column %q: COMMENT needs a quoted string", name)
			}
			f.Metadata = map[string]any{"comment": strings.ReplaceAll(c[1:len(c)-1], "''", "'")}
			tail = ""
		default:
			return nil, fmt.Errorf("column %q: unexpected %q (want NOT NULL or COMMENT '...')", name, tail)
		}
	}
	return f, nil
}

// cutName splits a leading column name (plain or `quoted`) from the rest.
func cutName(p string) (name, rest string, err error) {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "`") {
		end := strings.Index(p[1:], "`")
		if end < 0 {
			return "", "", fmt.Errorf("unterminated ` in %q", p)
		}
		return p[1 : end+1], p[end+2:], nil
	}
	i := strings.IndexAny(p, " \t\n:")
	if i < 0 {
		return "", "", fmt.Errorf("%q: want 'name type'", p)
	}
	return p[:i], strings.TrimPrefix(strings.TrimSpace(p[i:]), ":"), nil
}

// splitTop splits s at sep outside <>, () and backquotes.
func splitTop(s string, sep byte) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	inQuote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '`' || c == '\'':
			inQuote = c
		case c == '<' || c == '(':
			depth++
		case c == '>' || c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced %q in %q", c, s)
			}
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if depth != 0 || inQuote != 0 {
		return nil, fmt.Errorf("unbalanced brackets or quotes in %q", s)
	}
	return append(parts, s[start:]), nil
}

var ddlTypeNames = map[string]string{
	"boolean": schema.Boolean, "bool": schema.Boolean,
	"byte": schema.Byte, "tinyint": schema.Byte,
	"short": schema.Short, "smallint": schema.Short,
	"int": schema.Integer, "integer": schema.Integer,
	"long": schema.Long, "bigint": schema.Long,
	"float": schema.Float, "real": schema.Float,
	"double": schema.Double,
	"string": schema.String, "varchar": schema.String, "text": schema.String,
	"binary":    schema.Binary,
	"date":      schema.Date,
	"timestamp": schema.Timestamp, "timestamp_ltz": schema.Timestamp,
	"timestamp_ntz": schema.TimestampNTZ,
}

// parseDDLType parses one DDL type.
func parseDDLType(s string) (schema.Type, error) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	if n, ok := ddlTypeNames[lower]; ok {
		return schema.Primitive(n), nil
	}
	switch {
	case lower == "decimal" || lower == "numeric":
		return &schema.DecimalType{Precision: 10, Scale: 0}, nil
	case strings.HasPrefix(lower, "decimal(") || strings.HasPrefix(lower, "numeric("):
		inner := s[strings.Index(s, "(")+1:]
		if !strings.HasSuffix(inner, ")") {
			return nil, fmt.Errorf("bad decimal type %q", s)
		}
		ps := strings.Split(strings.TrimSuffix(inner, ")"), ",")
		p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
		sc := 0
		var err2 error
		if len(ps) == 2 {
			sc, err2 = strconv.Atoi(strings.TrimSpace(ps[1]))
		}
		if err1 != nil || err2 != nil || len(ps) > 2 || p < 1 || p > 38 || sc < 0 || sc > p {
			return nil, fmt.Errorf("bad decimal type %q: want decimal(p,s) with 1 <= p <= 38, 0 <= s <= p", s)
		}
		return &schema.DecimalType{Precision: p, Scale: sc}, nil
	case strings.HasPrefix(lower, "array<") && strings.HasSuffix(s, ">"):
		elem, err := parseDDLType(s[len("array<") : len(s)-1])
		if err != nil {
			return nil, err
		}
		return &schema.ArrayType{ElementType: elem, ContainsNull: true}, nil
	case strings.HasPrefix(lower, "map<") && strings.HasSuffix(s, ">"):
		kv, err := splitTop(s[len("map<"):len(s)-1], ',')
		if err != nil {
			return nil, err
		}
		if len(kv) != 2 {
			return nil, fmt.Errorf("bad map type %q: want map<K,V>", s)
		}
		k, err := parseDDLType(kv[0])
		if err != nil {
			return nil, err
		}
		v, err := parseDDLType(kv[1])
		if err != nil {
			return nil, err
		}
		return &schema.MapType{KeyType: k, ValueType: v, ValueContainsNull: true}, nil
	case strings.HasPrefix(lower, "struct<") && strings.HasSuffix(s, ">"):
		inner := s[len("struct<") : len(s)-1]
		st := &schema.StructType{}
		if strings.TrimSpace(inner) == "" {
			return st, nil
		}
		parts, err := splitTop(inner, ',')
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			f, err := parseColumnDef(p)
			if err != nil {
				return nil, err
			}
			st.Fields = append(st.Fields, f)
		}
		return st, nil
	}
	return nil, fmt.Errorf("unknown type %q", s)
}
