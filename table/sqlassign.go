package table

import (
	"fmt"
	"strings"

	"github.com/deltakit/deltakit/schema"
)

// ParseAssignments parses the SET list of a SQL UPDATE into the map Update
// takes:
//
//	set    = assign { "," assign }
//	assign = column "=" value
//	value  = term { ("+" | "-") term }
//	term   = factor { ("*" | "/") factor }
//	factor = literal | NULL | column | "(" value ")"
//
// with columns and literals as in ParsePredicate (a literal is typed by
// the column it is assigned to, so '2024-01-02' sets a date). Only
// top-level columns can be assigned. Errors name the position (1-based, in
// runes) and wrap ErrInvalidArgument.
func ParseAssignments(s string, sch *schema.StructType) (map[string]Value, error) {
	toks, err := lexWhere(s)
	if err != nil {
		return nil, fmt.Errorf("%w: SET %s: %v", ErrInvalidArgument, s, err)
	}
	p := &whereParser{toks: toks, sch: sch}
	out := map[string]Value{}
	for {
		t := p.peek()
		c, typ, err := p.column()
		if err != nil {
			return nil, fmt.Errorf("%w: SET %s: %v", ErrInvalidArgument, s, err)
		}
		if len(c.path) != 1 {
			return nil, fmt.Errorf("%w: SET %s: only top-level columns can be set, not %s (position %d)", ErrInvalidArgument, s, c, t.pos+1)
		}
		if eq := p.next(); eq.kind != tokOp || eq.text != "=" {
			return nil, fmt.Errorf("%w: SET %s: expected '=' at position %d, found %s", ErrInvalidArgument, s, eq.pos+1, eq)
		}
		v, err := p.value(typ)
		if err != nil {
			return nil, fmt.Errorf("%w: SET %s: %v", ErrInvalidArgument, s, err)
		}
		if _, dup := out[c.path[0]]; dup {
			return nil, fmt.Errorf("%w: SET %s: column %s is set twice", ErrInvalidArgument, s, c)
		}
		out[c.path[0]] = v
		if p.peek().kind != tokComma {
			break
		}
		p.next()
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("%w: SET %s: unexpected %s at position %d", ErrInvalidArgument, s, t, t.pos+1)
	}
	return out, nil
}

// value parses a sum; typ types its literals (the assigned column's type).
func (p *whereParser) value(typ schema.Type) (Value, error) {
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

func (p *whereParser) term(typ schema.Type) (Value, error) {
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

func (p *whereParser) factor(typ schema.Type) (Value, error) {
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
		t.kind == tokIdent && !isLiteralKeyword(t.text):
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

func isLiteralKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "TRUE", "FALSE", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ":
		return true
	}
	return false
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
