package expr

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// ErrInvalidArgument is the repository's invalid-argument sentinel
// (objectstore.ErrInvalidArgument, also table.ErrInvalidArgument): binding
// and ParseAssignments errors wrap it.
var ErrInvalidArgument = objectstore.ErrInvalidArgument

// SyntaxError is a text that Parse or ParseAssignments cannot read: Pos is
// the 1-based position in runes of the offending token, Token its text
// (quoted; "end of input" at the end).
type SyntaxError struct {
	Pos   int
	Token string
	msg   string
}

// Error returns the message, which names the position and the token.
func (e *SyntaxError) Error() string { return e.msg }

// syntaxf returns a *SyntaxError at token t; the message (format, which
// names the position, and args) is as fmt.Sprintf makes it.
func syntaxf(t token, format string, args ...any) error {
	return &SyntaxError{Pos: t.pos + 1, Token: t.String(), msg: fmt.Sprintf(format, args...)}
}

// Parse parses a predicate in the text form (see the package doc), as
// deltactl's --where, DELETE/UPDATE/MERGE conditions and CHECK constraints
// (delta.constraints.*) write them. sch, when not nil, types numeric
// literals: a number compared with a decimal column stays exact, with a
// float or double column it is a float. Errors are *SyntaxError, which
// name the position (1-based, in runes) and the token; they do not wrap
// ErrInvalidArgument, callers add their context.
func Parse(s string, sch *schema.StructType) (Expr, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, sch: sch}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, syntaxf(t, "unexpected %s at position %d", t, t.pos+1)
	}
	return e, nil
}

// ParseAssignments parses the SET list of a SQL UPDATE ("a = 1, b = b *
// 2") into the map table.Table.Update takes, with the grammar of the package
// doc. A literal is typed by the column it is assigned to, so '2024-01-02'
// sets a date. Only top-level columns can be assigned, each once. Errors
// wrap ErrInvalidArgument and name the position (1-based, in runes); a
// syntax error is also a *SyntaxError.
func ParseAssignments(s string, sch *schema.StructType) (map[string]Value, error) {
	wrap := func(err error) error { return fmt.Errorf("%w: SET %s: %w", ErrInvalidArgument, s, err) }
	toks, err := lex(s)
	if err != nil {
		return nil, wrap(err)
	}
	p := &parser{toks: toks, sch: sch}
	out := map[string]Value{}
	for {
		t := p.peek()
		c, typ, err := p.column()
		if err != nil {
			return nil, wrap(err)
		}
		if len(c.path) != 1 {
			return nil, wrap(syntaxf(t, "only top-level columns can be set, not %s (position %d)", c, t.pos+1))
		}
		if eq := p.next(); eq.kind != tokOp || eq.text != "=" {
			return nil, wrap(syntaxf(eq, "expected '=' at position %d, found %s", eq.pos+1, eq))
		}
		v, err := p.value(typ)
		if err != nil {
			return nil, wrap(err)
		}
		if _, dup := out[c.path[0]]; dup {
			return nil, wrap(fmt.Errorf("column %s is set twice", c))
		}
		out[c.path[0]] = v
		if p.peek().kind != tokComma {
			break
		}
		p.next()
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, wrap(syntaxf(t, "unexpected %s at position %d", t, t.pos+1))
	}
	return out, nil
}

// isPlainName reports whether a column name can stand unquoted in the text
// form: an identifier that is not a keyword.
func isPlainName(s string) bool {
	for i, r := range s {
		if !(unicode.IsLetter(r) || r == '_' || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE":
		return false
	}
	return true
}

var errNoTimestamp = errors.New("not a timestamp")

// parseTimestamp reads the text of a TIMESTAMP literal: partition-value
// style "2006-01-02 15:04:05[.ffffff]" (UTC), ISO-8601 with or without a
// zone, or a date (midnight UTC). The result is in UTC, as partition
// values are read (so a timestamp_ntz column compares the UTC wall clock).
func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05.999999999Z07:00", time.DateOnly} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts.UTC(), nil
		}
	}
	return time.Time{}, errNoTimestamp
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokQuotedIdent
	tokString
	tokNumber
	tokOp
	tokLParen
	tokRParen
	tokComma
	tokDot
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return "'" + t.text + "'"
	}
	return strconv.Quote(t.text)
}

func lex(s string) ([]token, error) {
	var toks []token
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(':
			toks = append(toks, token{tokLParen, "(", i})
			i++
		case r == ')':
			toks = append(toks, token{tokRParen, ")", i})
			i++
		case r == ',':
			toks = append(toks, token{tokComma, ",", i})
			i++
		case r == '.' && !(i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			toks = append(toks, token{tokDot, ".", i})
			i++
		case r == '\'' || r == '`' || r == '"':
			quote, start := r, i
			var b strings.Builder
			i++
			for {
				if i >= len(rs) {
					return nil, syntaxf(token{tokString, string(rs[start+1:]), start}, "unterminated %c at position %d", quote, start+1)
				}
				if rs[i] == quote {
					if i+1 < len(rs) && rs[i+1] == quote {
						b.WriteRune(quote)
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteRune(rs[i])
				i++
			}
			kind := tokString
			if quote != '\'' {
				kind = tokQuotedIdent
			}
			toks = append(toks, token{kind, b.String(), start})
		case strings.ContainsRune("=!<>", r):
			start := i
			op := string(r)
			if i+1 < len(rs) && (rs[i+1] == '=' || (r == '<' && rs[i+1] == '>')) {
				op += string(rs[i+1])
			}
			i += len([]rune(op))
			if op == "!" {
				return nil, syntaxf(token{tokOp, "!", start}, "unexpected '!' at position %d", start+1)
			}
			toks = append(toks, token{tokOp, op, start})
		case r == '*' || r == '/' || (r == '-' || r == '+') && !(i+1 < len(rs) && (unicode.IsDigit(rs[i+1]) || rs[i+1] == '.')):
			// arithmetic, for UPDATE's SET (ParseAssignments)
			toks = append(toks, token{tokOp, string(r), i})
			i++
		case unicode.IsDigit(r) || r == '-' || r == '+' || r == '.':
			start := i
			i++
			for i < len(rs) && (unicode.IsDigit(rs[i]) || rs[i] == '.' || rs[i] == 'e' || rs[i] == 'E' ||
				((rs[i] == '-' || rs[i] == '+') && (rs[i-1] == 'e' || rs[i-1] == 'E'))) {
				i++
			}
			toks = append(toks, token{tokNumber, string(rs[start:i]), start})
		case unicode.IsLetter(r) || r == '_':
			start := i
			for i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]) || rs[i] == '_') {
				i++
			}
			toks = append(toks, token{tokIdent, string(rs[start:i]), start})
		default:
			return nil, syntaxf(token{tokOp, string(r), i}, "unexpected %q at position %d", r, i+1)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(rs)}), nil
}

type parser struct {
	toks []token
	i    int
	sch  *schema.StructType
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// keyword consumes the keyword kw if it comes next.
func (p *parser) keyword(kw string) bool {
	if t := p.peek(); t.kind == tokIdent && strings.EqualFold(t.text, kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, syntaxf(t, "expected %s at position %d, found %s", what, t.pos+1, t)
	}
	return t, nil
}

func (p *parser) or() (Expr, error) { return p.chain("OR", p.and, Or) }

func (p *parser) and() (Expr, error) { return p.chain("AND", p.not, And) }

// chain parses operands (next) separated by keyword, combining two or more
// with combine: "a OR b OR c" is Or(a, b, c).
func (p *parser) chain(keyword string, next func() (Expr, error), combine func(...Expr) Expr) (Expr, error) {
	e, err := next()
	if err != nil {
		return nil, err
	}
	kids := []Expr{e}
	for p.keyword(keyword) {
		e, err := next()
		if err != nil {
			return nil, err
		}
		kids = append(kids, e)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return combine(kids...), nil
}

func (p *parser) not() (Expr, error) {
	if p.keyword("NOT") {
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		return Not(e), nil
	}
	if p.constantAhead() {
		if t := p.next(); strings.EqualFold(t.text, "TRUE") {
			return And(), nil
		}
		return Or(), nil
	}
	if p.peek().kind == tokLParen {
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return nil, err
		}
		return e, nil
	}
	return p.predicate()
}

func (p *parser) column() (Column, schema.Type, error) {
	t := p.next()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return Column{}, nil, syntaxf(t, "expected a column name at position %d, found %s", t.pos+1, t)
	}
	c := Col(t.text)
	var typ schema.Type
	if p.sch != nil {
		if f := p.sch.Field(t.text); f != nil {
			typ = f.Type
		}
	}
	for p.peek().kind == tokDot {
		p.next()
		t := p.next()
		if t.kind != tokIdent && t.kind != tokQuotedIdent {
			return Column{}, nil, syntaxf(t, "expected a field name at position %d, found %s", t.pos+1, t)
		}
		c = c.Field(t.text)
		if st, ok := typ.(*schema.StructType); ok {
			if f := st.Field(t.text); f != nil {
				typ = f.Type
				continue
			}
		}
		typ = nil
	}
	return c, typ, nil
}

func (p *parser) literal(typ schema.Type) (any, error) {
	t := p.next()
	switch t.kind {
	case tokString:
		return t.text, nil
	case tokNumber:
		if _, ok := typ.(*schema.DecimalType); ok {
			if d, err := value.ParseDecimal(t.text); err == nil {
				return d, nil
			}
			return t.text, nil
		}
		if pt, ok := typ.(*schema.PrimitiveType); ok && (pt.Name == schema.Float || pt.Name == schema.Double) {
			if f, err := strconv.ParseFloat(t.text, 64); err == nil {
				return f, nil
			}
		}
		if n, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(t.text, 64); err == nil {
			return f, nil
		}
		return nil, syntaxf(t, "bad number %s at position %d", t.text, t.pos+1)
	case tokIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE":
			return true, nil
		case "FALSE":
			return false, nil
		case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "X":
			return p.typedLiteral(t)
		case "NULL":
			return nil, syntaxf(t, "comparison with NULL at position %d: use IS NULL or IS NOT NULL", t.pos+1)
		}
	}
	return nil, syntaxf(t, "expected a value at position %d, found %s", t.pos+1, t)
}

func (p *parser) predicate() (Expr, error) {
	c, typ, err := p.column()
	if err != nil {
		return nil, err
	}
	if p.keyword("IS") {
		not := p.keyword("NOT")
		if !p.keyword("NULL") {
			t := p.peek()
			return nil, syntaxf(t, "expected NULL at position %d, found %s", t.pos+1, t)
		}
		if not {
			return c.IsNotNull(), nil
		}
		return c.IsNull(), nil
	}
	negate := p.keyword("NOT")
	switch {
	case p.keyword("IN"):
		if _, err := p.expect(tokLParen, "'('"); err != nil {
			return nil, err
		}
		var vals []any
		for {
			v, err := p.literal(typ)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
			if p.peek().kind == tokComma {
				p.next()
				continue
			}
			if _, err := p.expect(tokRParen, "',' or ')'"); err != nil {
				return nil, err
			}
			break
		}
		e := c.In(vals...)
		if negate {
			return Not(e), nil
		}
		return e, nil
	case p.keyword("BETWEEN"):
		lo, err := p.literal(typ)
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			t := p.peek()
			return nil, syntaxf(t, "expected AND at position %d, found %s", t.pos+1, t)
		}
		hi, err := p.literal(typ)
		if err != nil {
			return nil, err
		}
		e := c.Between(lo, hi)
		if negate {
			return Not(e), nil
		}
		return e, nil
	case negate:
		t := p.peek()
		return nil, syntaxf(t, "expected IN or BETWEEN after NOT at position %d, found %s", t.pos+1, t)
	}
	op, err := p.expect(tokOp, "a comparison operator")
	if err != nil {
		return nil, err
	}
	var v any
	if t := p.peek(); t.kind == tokQuotedIdent || t.kind == tokIdent && !p.literalAhead() && !strings.EqualFold(t.text, "NULL") {
		// a column on the right: "a < b", MERGE's "target.id = source.id"
		c2, _, err := p.column()
		if err != nil {
			return nil, err
		}
		v = c2
	} else if v, err = p.literal(typ); err != nil {
		return nil, err
	}
	switch op.text {
	case "=", "==":
		return c.Eq(v), nil
	case "!=", "<>":
		return c.Ne(v), nil
	case "<":
		return c.Lt(v), nil
	case "<=":
		return c.Le(v), nil
	case ">":
		return c.Gt(v), nil
	case ">=":
		return c.Ge(v), nil
	}
	return nil, syntaxf(op, "unknown operator %s at position %d", op.text, op.pos+1)
}

// value parses a sum; typ types its literals (the assigned column's type).
func (p *parser) value(typ schema.Type) (Value, error) {
	l, err := p.term(typ)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokOp && (t.text == "+" || t.text == "-"):
			p.next()
			r, err := p.term(typ)
			if err != nil {
				return nil, err
			}
			l = arith(t.text, l, r)
		case t.kind == tokNumber && (strings.HasPrefix(t.text, "-") || strings.HasPrefix(t.text, "+")):
			// "v-1" lexes as v, -1: a subtraction of 1.
			p.toks[p.i].text = t.text[1:]
			r, err := p.term(typ)
			if err != nil {
				return nil, err
			}
			l = arith(t.text[:1], l, r)
		default:
			return l, nil
		}
	}
}

func (p *parser) term(typ schema.Type) (Value, error) {
	l, err := p.factor(typ)
	if err != nil {
		return nil, err
	}
	for t := p.peek(); t.kind == tokOp && (t.text == "*" || t.text == "/"); t = p.peek() {
		p.next()
		r, err := p.factor(typ)
		if err != nil {
			return nil, err
		}
		l = arith(t.text, l, r)
	}
	return l, nil
}

func (p *parser) factor(typ schema.Type) (Value, error) {
	t := p.peek()
	switch {
	case t.kind == tokLParen:
		p.next()
		v, err := p.value(typ)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return nil, err
		}
		return v, nil
	case t.kind == tokIdent && strings.EqualFold(t.text, "NULL"):
		p.next()
		return Lit(nil), nil
	case t.kind == tokQuotedIdent,
		t.kind == tokIdent && !p.literalAhead():
		c, _, err := p.column()
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	lit, err := p.literal(typ)
	if err != nil {
		return nil, err
	}
	return Lit(lit), nil
}

// literalAhead reports whether the next token starts a literal rather
// than a column: TRUE, FALSE, or DATE, TIMESTAMP, TIMESTAMP_NTZ or X
// followed by a quoted string (so a column may be named x or date).
func (p *parser) literalAhead() bool {
	t := p.peek()
	if t.kind != tokIdent {
		return false
	}
	switch strings.ToUpper(t.text) {
	case "TRUE", "FALSE":
		return true
	case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "X":
		return p.toks[p.i+1].kind == tokString
	}
	return false
}

// constantAhead reports whether the next token is TRUE or FALSE standing
// as a whole predicate (not a column so named that a comparison follows).
func (p *parser) constantAhead() bool {
	t := p.peek()
	if t.kind != tokIdent || !strings.EqualFold(t.text, "TRUE") && !strings.EqualFold(t.text, "FALSE") {
		return false
	}
	switch n := p.toks[p.i+1]; {
	case n.kind == tokOp, n.kind == tokDot:
		return false
	case n.kind == tokIdent:
		switch strings.ToUpper(n.text) {
		case "IS", "IN", "NOT", "BETWEEN":
			return false
		}
	}
	return true
}

// typedLiteral reads the quoted text after DATE, TIMESTAMP, TIMESTAMP_NTZ
// or X (kw): a value.Date, a time.Time or a []byte.
func (p *parser) typedLiteral(kw token) (any, error) {
	word := strings.ToUpper(kw.text)
	what := map[string]string{"DATE": "a quoted date", "X": "a quoted hex string"}[word]
	if what == "" {
		what = "a quoted " + strings.ToLower(kw.text)
	}
	s, err := p.expect(tokString, what)
	if err != nil {
		return nil, err
	}
	switch word {
	case "DATE":
		d, err := time.Parse(time.DateOnly, s.text)
		if err != nil {
			return nil, syntaxf(s, "bad date %s at position %d (want 'yyyy-mm-dd')", s, s.pos+1)
		}
		return value.DateOf(d), nil
	case "X":
		b, err := hex.DecodeString(s.text)
		if err != nil {
			return nil, syntaxf(s, "bad hex string %s at position %d", s, s.pos+1)
		}
		return b, nil
	}
	ts, err := parseTimestamp(s.text)
	if err != nil {
		return nil, syntaxf(s, "bad timestamp %s at position %d (want 'yyyy-mm-dd hh:mm:ss[.ffffff]' or ISO 8601)", s, s.pos+1)
	}
	return ts, nil
}

func arith(op string, l, r Value) Value {
	switch op {
	case "+":
		return Plus(l, r)
	case "-":
		return Minus(l, r)
	case "*":
		return Times(l, r)
	}
	return Div(l, r)
}
