package parquetio

import (
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// The reader assembles nested values from the flat (value, repetition level,
// definition level) streams of the file's leaf columns, the record assembly
// of the Dremel paper, driven by the Delta read schema:
//
//   - every node of the plan reads exactly one value of its type from the
//     cursors of the leaf columns below it;
//   - a null (or empty collection) leaves exactly one entry in every leaf
//     column below it, so reading it consumes one entry per leaf;
//   - a repeated node keeps reading elements while the next entry of its
//     first leaf repeats at the node's repetition level.
//
// Only leaves that are read get cursors. A struct none of whose requested
// fields is in the file still needs one leaf to learn where it is null, so
// the plan adds its smallest file child as a "skip" subtree whose values
// are decoded and dropped.

type asmKind uint8

const (
	asmLeaf asmKind = iota
	asmStruct
	asmList
	asmMap
)

// asmNode reads one value.
type asmNode struct {
	kind     asmKind
	optional bool // the node itself can be null
	def      int  // definition level at which the node is non-null
	discard  bool // a skip subtree: decode levels, produce nothing

	// leaf
	cur  int
	conv leafConv

	// struct
	fields []*asmNode // per Delta field; nil for a field absent from the file
	extra  []*asmNode // read and dropped (presence of an otherwise empty struct)

	// list and map
	repDef int      // definition level at which the collection has an element
	rep    int      // repetition level of the repeated node
	elem   *asmNode // list element, or map key
	val    *asmNode // map value; nil when the file has no value column

	leaves []int // cursor indexes of all leaves below, leaves[0] is peeked
}

type readPlan struct {
	fields []*asmNode // per read-schema field; nil when absent from the file
	cols   []int      // file leaf column index of each cursor
}

type planBuilder struct {
	mode    string
	cursors map[int]int
	cols    []int
}

func buildReadPlan(readSchema *schema.StructType, root *pnode, mode string) (*readPlan, error) {
	b := &planBuilder{mode: mode, cursors: map[int]int{}}
	plan := &readPlan{fields: make([]*asmNode, len(readSchema.Fields))}
	used := map[*pnode]string{}
	for i, f := range readSchema.Fields {
		c := findChild(root, f, mode)
		if c == nil {
			continue
		}
		if prev, dup := used[c]; dup {
			return nil, fmt.Errorf("%w: fields %q and %q both map to file column %q", ErrSchemaMismatch, prev, f.Name, c.name)
		}
		used[c] = f.Name
		n, err := b.build(f.Type, c, false, f.Name)
		if err != nil {
			return nil, err
		}
		plan.fields[i] = n
	}
	plan.cols = b.cols
	return plan, nil
}

// findChild returns the child of group p that holds field f: in id mode the
// child whose field_id is f's column mapping id, else the child named f's
// physical name, exactly or, failing that, case-insensitively (as Spark
// matches Parquet columns by default).
func findChild(p *pnode, f *schema.StructField, mode string) *pnode {
	if mode == "id" {
		if id, ok := f.FieldID(); ok && id != 0 {
			for _, c := range p.children {
				if int64(c.elem.FieldID) == id {
					return c
				}
			}
		}
	}
	name := f.PhysicalName(mode)
	if c := p.child(name); c != nil {
		return c
	}
	var found *pnode
	for _, c := range p.children {
		if strings.EqualFold(c.name, name) {
			if found != nil {
				return nil // ambiguous
			}
			found = c
		}
	}
	return found
}

func (b *planBuilder) cursor(p *pnode) int {
	if i, ok := b.cursors[p.col]; ok {
		return i
	}
	i := len(b.cols)
	b.cursors[p.col] = i
	b.cols = append(b.cols, p.col)
	return i
}

func mismatch(path string, t schema.Type, p *pnode, why string) error {
	return fmt.Errorf("%w: field %q of type %s, file column %q: %s", ErrSchemaMismatch, path, t, p.path(), why)
}

// build returns the node reading one value of Delta type t from file node p.
// asElem says that p is a repeated node standing for one element of its
// collection: its repetition is handled by the caller and it is not null.
func (b *planBuilder) build(t schema.Type, p *pnode, asElem bool, path string) (*asmNode, error) {
	optional := !asElem && p.optional()
	switch t := t.(type) {
	case *schema.ArrayType:
		if p.repeated() && !asElem {
			// Unannotated repeated field: a list of required elements.
			e, err := b.build(t.ElementType, p, true, path+".element")
			if err != nil {
				return nil, err
			}
			return &asmNode{kind: asmList, def: p.defLevel - 1, repDef: p.defLevel, rep: p.repLevel, elem: e, leaves: e.leaves}, nil
		}
		if p.leaf || len(p.children) != 1 || !p.children[0].repeated() {
			return nil, mismatch(path, t, p, "want a group with one repeated child (LIST)")
		}
		r := p.children[0]
		var e *asmNode
		var err error
		if isElementNode(r, p, t.ElementType, b.mode) {
			e, err = b.build(t.ElementType, r, true, path+".element")
		} else {
			e, err = b.build(t.ElementType, r.children[0], false, path+".element")
		}
		if err != nil {
			return nil, err
		}
		return &asmNode{kind: asmList, optional: optional, def: p.defLevel, repDef: r.defLevel, rep: r.repLevel, elem: e, leaves: e.leaves}, nil

	case *schema.MapType:
		kv := p
		def := p.defLevel - 1
		if !(p.repeated() && !asElem) {
			if p.leaf || len(p.children) != 1 || !p.children[0].repeated() {
				return nil, mismatch(path, t, p, "want a group with one repeated key_value child (MAP)")
			}
			kv = p.children[0]
			def = p.defLevel
		} else {
			optional = false
		}
		if kv.leaf || len(kv.children) < 1 || len(kv.children) > 2 {
			return nil, mismatch(path, t, p, "want a repeated group with key and value")
		}
		k, err := b.build(t.KeyType, kv.children[0], false, path+".key")
		if err != nil {
			return nil, err
		}
		n := &asmNode{kind: asmMap, optional: optional, def: def, repDef: kv.defLevel, rep: kv.repLevel, elem: k}
		n.leaves = append(n.leaves, k.leaves...)
		if len(kv.children) == 2 {
			v, err := b.build(t.ValueType, kv.children[1], false, path+".value")
			if err != nil {
				return nil, err
			}
			n.val = v
			n.leaves = append(n.leaves, v.leaves...)
		}
		return n, nil

	case *schema.StructType:
		if p.leaf {
			return nil, mismatch(path, t, p, "want a group")
		}
		if p.repeated() && !asElem {
			return nil, mismatch(path, t, p, "repeated group for a struct")
		}
		n := &asmNode{kind: asmStruct, optional: optional, def: p.defLevel, fields: make([]*asmNode, len(t.Fields))}
		used := map[*pnode]bool{}
		for i, f := range t.Fields {
			c := findChild(p, f, b.mode)
			if c == nil || used[c] {
				continue
			}
			used[c] = true
			fn, err := b.build(f.Type, c, false, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			n.fields[i] = fn
			n.leaves = append(n.leaves, fn.leaves...)
		}
		if len(n.leaves) == 0 {
			s, err := b.buildSkip(p, true)
			if err != nil {
				return nil, mismatch(path, t, p, err.Error())
			}
			// p itself is handled by n; only its (smallest) child is skipped.
			n.extra = s.extra
			n.leaves = s.leaves
		}
		return n, nil

	default:
		if !p.leaf {
			return nil, mismatch(path, t, p, "want a primitive column, file has a group")
		}
		if p.repeated() && !asElem {
			return nil, mismatch(path, t, p, "repeated column for a primitive type")
		}
		conv, err := makeConv(t, p)
		if err != nil {
			return nil, mismatch(path, t, p, err.Error())
		}
		cur := b.cursor(p)
		return &asmNode{kind: asmLeaf, optional: optional, def: p.defLevel, cur: cur, conv: conv, leaves: []int{cur}}, nil
	}
}

// buildSkip returns a node that consumes one value of file node p and
// produces nothing. For a group it reads only the child with the fewest
// leaves: every leaf below a node carries that node's levels.
func (b *planBuilder) buildSkip(p *pnode, asElem bool) (*asmNode, error) {
	if p.repeated() && !asElem {
		e, err := b.buildSkip(p, true)
		if err != nil {
			return nil, err
		}
		return &asmNode{kind: asmList, discard: true, def: p.defLevel - 1, repDef: p.defLevel, rep: p.repLevel, elem: e, leaves: e.leaves}, nil
	}
	optional := !asElem && p.optional()
	if p.leaf {
		cur := b.cursor(p)
		return &asmNode{kind: asmLeaf, discard: true, optional: optional, def: p.defLevel, cur: cur, leaves: []int{cur}}, nil
	}
	var best *pnode
	for _, c := range p.children {
		if c.numLeaves > 0 && (best == nil || c.numLeaves < best.numLeaves) {
			best = c
		}
	}
	if best == nil {
		return nil, fmt.Errorf("group %q has no leaf columns", p.path())
	}
	c, err := b.buildSkip(best, false)
	if err != nil {
		return nil, err
	}
	return &asmNode{kind: asmStruct, discard: true, optional: optional, def: p.defLevel, extra: []*asmNode{c}, leaves: c.leaves}, nil
}

// isElementNode applies the Parquet backward-compatibility rules for lists
// (LogicalTypes.md, "Lists") to the repeated child r of list group g: it
// reports whether r itself is the element (2-level and legacy layouts) rather
// than a wrapper around a single element field (the standard 3-level layout).
func isElementNode(r, g *pnode, elemType schema.Type, mode string) bool {
	switch {
	case r.leaf, len(r.children) != 1:
		return true
	case r.name == "array", r.name == g.name+"_tuple":
		return true
	}
	if r.name == "list" && r.children[0].name == "element" {
		return false
	}
	// As Spark does: a struct element type with a single field named like
	// r's only child means r is the element.
	if st, ok := elemType.(*schema.StructType); ok && len(st.Fields) == 1 {
		if findChild(r, st.Fields[0], mode) != nil {
			return true
		}
	}
	return false
}

// rowReader assembles the rows of one row group.
type rowReader struct {
	plan    *readPlan
	cursors []*colCursor
	numRows int64
	backing []any // rows are cut from it, 256 at a time, to allocate less
}

func (r *rowReader) close() {
	for _, c := range r.cursors {
		if c != nil {
			c.close()
		}
	}
}

// next assembles one row; with discard it only consumes the row's entries.
func (r *rowReader) next(discard bool) (row value.Row, err error) {
	defer func() {
		if p := recover(); p != nil {
			row, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, p)
		}
	}()
	if n := len(r.plan.fields); !discard {
		if len(r.backing) < n {
			r.backing = make([]any, n*256)
		}
		row, r.backing = r.backing[:n:n], r.backing[n:]
	}
	if err := r.readFields(r.plan.fields, row, discard); err != nil {
		return nil, err
	}
	return row, nil
}

// readFields reads the value of each field of a row or struct into out
// (nil with discard, which only consumes the fields' entries); a nil
// field, absent from the file, is skipped.
func (r *rowReader) readFields(fields []*asmNode, out value.Row, discard bool) error {
	for i, f := range fields {
		if f == nil {
			continue
		}
		v, err := r.read(f, discard)
		if err != nil {
			return err
		}
		if !discard {
			out[i] = v
		}
	}
	return nil
}

// finish checks that every column chunk was used up by the row group's rows.
func (r *rowReader) finish() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, p)
		}
	}()
	for _, c := range r.cursors {
		more, err := c.fill()
		if err != nil {
			return err
		}
		if more {
			return fmt.Errorf("%w: column %d has more values than the row group's %d rows", ErrCorrupt, c.col, r.numRows)
		}
	}
	return nil
}

func (r *rowReader) peek(cur int) (*parquet.Value, error) {
	c := r.cursors[cur]
	ok, err := c.fill()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: column %d ends before the row group's %d rows", ErrCorrupt, c.col, r.numRows)
	}
	return &c.buf[c.pos], nil
}

// consumeNull drops the one entry that a null or empty node leaves in each
// leaf column below it.
func (r *rowReader) consumeNull(n *asmNode) error {
	for _, cur := range n.leaves {
		if _, err := r.peek(cur); err != nil {
			return err
		}
		r.cursors[cur].pos++
	}
	return nil
}

func (r *rowReader) read(n *asmNode, discard bool) (any, error) {
	discard = discard || n.discard
	switch n.kind {
	case asmLeaf:
		v, err := r.peek(n.cur)
		if err != nil {
			return nil, err
		}
		r.cursors[n.cur].pos++
		if v.DefinitionLevel() < n.def {
			if !n.optional {
				return nil, fmt.Errorf("%w: column %d: null (definition level %d) in a required position", ErrCorrupt, r.cursors[n.cur].col, v.DefinitionLevel())
			}
			return nil, nil
		}
		if discard {
			return nil, nil
		}
		return n.conv(v)

	case asmStruct:
		if n.optional {
			v, err := r.peek(n.leaves[0])
			if err != nil {
				return nil, err
			}
			if v.DefinitionLevel() < n.def {
				return nil, r.consumeNull(n)
			}
		}
		var out value.Row
		if !discard {
			out = make(value.Row, len(n.fields))
		}
		if err := r.readFields(n.fields, out, discard); err != nil {
			return nil, err
		}
		for _, e := range n.extra {
			if _, err := r.read(e, true); err != nil {
				return nil, err
			}
		}
		if discard {
			return nil, nil
		}
		return out, nil

	default: // asmList, asmMap
		first := n.leaves[0]
		v, err := r.peek(first)
		if err != nil {
			return nil, err
		}
		d := v.DefinitionLevel()
		if d < n.def {
			if !n.optional {
				return nil, fmt.Errorf("%w: column %d: null collection (definition level %d) in a required position", ErrCorrupt, r.cursors[first].col, d)
			}
			return nil, r.consumeNull(n)
		}
		var list []any
		var entries []value.MapEntry
		if d < n.repDef {
			if err := r.consumeNull(n); err != nil {
				return nil, err
			}
		} else {
			c := r.cursors[first]
			for {
				x, err := r.read(n.elem, discard)
				if err != nil {
					return nil, err
				}
				var y any
				if n.val != nil {
					if y, err = r.read(n.val, discard); err != nil {
						return nil, err
					}
				}
				if !discard {
					if n.kind == asmMap {
						entries = append(entries, value.MapEntry{Key: x, Value: y})
					} else {
						list = append(list, x)
					}
				}
				more, err := c.fill()
				if err != nil {
					return nil, err
				}
				if !more || c.buf[c.pos].RepetitionLevel() != n.rep {
					break
				}
			}
		}
		if discard {
			return nil, nil
		}
		if n.kind == asmMap {
			if entries == nil {
				entries = []value.MapEntry{}
			}
			return entries, nil
		}
		if list == nil {
			list = []any{}
		}
		return list, nil
	}
}
