package table

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/deltakit/deltakit/schema"
)

// parseWhere parses a small SQL WHERE syntax into a Expr:
//
//	expr      = or
//	or        = and { OR and }
//	and       = not { AND not }
//	not       = NOT not | "(" expr ")" | predicate
//	predicate = column ( cmp ( literal | column )
//	                   | [NOT] IN "(" literal { "," literal } ")"
//	                   | [NOT] BETWEEN literal AND literal
//	                   | IS [NOT] NULL )
//	cmp       = "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	column    = name { "." name }     (names may be `back-quoted`)
//	literal   = number | 'string' | TRUE | FALSE | DATE 'yyyy-mm-dd'
//	          | TIMESTAMP 'yyyy-mm-dd hh:mm:ss'
//
// Keywords are case-insensitive; a quote inside a string is doubled ('it”s').
// sch, when not nil, types numeric literals: a number compared with a
// decimal column stays exact. Errors name the position (1-based, in runes);
// they do not wrap ErrInvalidArgument, callers add their context.
// deltactl's --where and the CHECK constraints of writes
// (delta.constraints.*) use it.
func ParsePredicate(s string, sch *schema.StructType) (Expr, error) {
	toks, err := lexWhere(s)
	if err != nil {
		return nil, err
	}
	p := &whereParser{toks: toks, sch: sch}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected %s at position %d", t, t.pos+1)
	}
	return e, nil
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

func lexWhere(s string) ([]token, error) {
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
					return nil, fmt.Errorf("unterminated %c at position %d", quote, start+1)
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
				return nil, fmt.Errorf("unexpected '!' at position %d", start+1)
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
			return nil, fmt.Errorf("unexpected %q at position %d", r, i+1)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(rs)}), nil
}

type whereParser struct {
	toks []token
	i    int
	sch  *schema.StructType
}

func (p *whereParser) peek() token { return p.toks[p.i] }
func (p *whereParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// keyword consumes the keyword kw if it comes next.
func (p *whereParser) keyword(kw string) bool {
	if t := p.peek(); t.kind == tokIdent && strings.EqualFold(t.text, kw) {
		p.i++
		return true
	}
	return false
}

func (p *whereParser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, fmt.Errorf("expected %s at position %d, found %s", what, t.pos+1, t)
	}
	return t, nil
}

func (p *whereParser) or() (Expr, error) {
	e, err := p.and()
	if err != nil {
		return nil, err
	}
	kids := []Expr{e}
	for p.keyword("OR") {
		e, err := p.and()
		if err != nil {
			return nil, err
		}
		kids = append(kids, e)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return Or(kids...), nil
}

func (p *whereParser) and() (Expr, error) {
	e, err := p.not()
	if err != nil {
		return nil, err
	}
	kids := []Expr{e}
	for p.keyword("AND") {
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		kids = append(kids, e)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return And(kids...), nil
}

func (p *whereParser) not() (Expr, error) {
	if p.keyword("NOT") {
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		return Not(e), nil
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

func (p *whereParser) column() (Column, schema.Type, error) {
	t := p.next()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return Column{}, nil, fmt.Errorf("expected a column name at position %d, found %s", t.pos+1, t)
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
			return Column{}, nil, fmt.Errorf("expected a field name at position %d, found %s", t.pos+1, t)
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

func (p *whereParser) literal(typ schema.Type) (any, error) {
	t := p.next()
	switch t.kind {
	case tokString:
		return t.text, nil
	case tokNumber:
		if _, ok := typ.(*schema.DecimalType); ok {
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
		return nil, fmt.Errorf("bad number %s at position %d", t.text, t.pos+1)
	case tokIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE":
			return true, nil
		case "FALSE":
			return false, nil
		case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ":
			s, err := p.expect(tokString, "a quoted "+strings.ToLower(t.text))
			if err != nil {
				return nil, err
			}
			return s.text, nil
		case "NULL":
			return nil, fmt.Errorf("comparison with NULL at position %d: use IS NULL or IS NOT NULL", t.pos+1)
		}
	}
	return nil, fmt.Errorf("expected a value at position %d, found %s", t.pos+1, t)
}

func (p *whereParser) predicate() (Expr, error) {
	c, typ, err := p.column()
	if err != nil {
		return nil, err
	}
	if p.keyword("IS") {
		not := p.keyword("NOT")
		if !p.keyword("NULL") {
			t := p.peek()
			return nil, fmt.Errorf("expected NULL at position %d, found %s", t.pos+1, t)
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
			return nil, fmt.Errorf("expected AND at position %d, found %s", t.pos+1, t)
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
		return nil, fmt.Errorf("expected IN or BETWEEN after NOT at position %d, found %s", t.pos+1, t)
	}
	op, err := p.expect(tokOp, "a comparison operator")
	if err != nil {
		return nil, err
	}
	var v any
	if t := p.peek(); t.kind == tokQuotedIdent || t.kind == tokIdent && !isLiteralKeyword(t.text) && !strings.EqualFold(t.text, "NULL") {
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
	return nil, fmt.Errorf("unknown operator %s at position %d", op.text, op.pos+1)
}
