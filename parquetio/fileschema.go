package parquetio

import (
	"fmt"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// pnode is one node of a Parquet file's schema tree, built from the footer's
// flattened schema elements, with the levels a reader needs.
type pnode struct {
	elem     *format.SchemaElement
	name     string
	children []*pnode
	parent   *pnode

	leaf       bool
	col        int // leaf column index (depth-first order), leaves only
	firstLeaf  int // first leaf column index under this node
	numLeaves  int
	repetition format.FieldRepetitionType

	// defLevel is the definition level at which this node is present
	// (counts optional and repeated nodes from the root down to and
	// including this one); repLevel counts the repeated ones.
	defLevel int
	repLevel int
}

func (n *pnode) optional() bool { return n.repetition == format.Optional }
func (n *pnode) repeated() bool { return n.repetition == format.Repeated }

func (n *pnode) convertedType() (deprecated.ConvertedType, bool) {
	return n.elem.ConvertedType.Get()
}

func (n *pnode) physical() format.Type {
	t, _ := n.elem.Type.Get()
	return t
}

func (n *pnode) child(name string) *pnode {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// path returns the dotted path of the node below the root, for messages.
func (n *pnode) path() string {
	if n.parent == nil || n.parent.parent == nil {
		return n.name
	}
	return n.parent.path() + "." + n.name
}

// maxSchemaDepth bounds nesting so that a hostile footer cannot exhaust the
// stack.
const maxSchemaDepth = 200

// buildFileSchema turns the footer's depth-first schema element list into a
// tree. It validates child counts and physical types and never panics.
func buildFileSchema(elems []format.SchemaElement) (*pnode, error) {
	if len(elems) == 0 {
		return nil, fmt.Errorf("%w: empty schema", ErrCorrupt)
	}
	pos := 0
	col := 0
	var build func(parent *pnode, depth int) (*pnode, error)
	build = func(parent *pnode, depth int) (*pnode, error) {
		if depth > maxSchemaDepth {
			return nil, fmt.Errorf("%w: schema nested deeper than %d", ErrCorrupt, maxSchemaDepth)
		}
		if pos >= len(elems) {
			return nil, fmt.Errorf("%w: schema element list ends early", ErrCorrupt)
		}
		e := &elems[pos]
		pos++
		n := &pnode{elem: e, name: e.Name, parent: parent, firstLeaf: col}
		if parent != nil {
			rep, ok := e.RepetitionType.Get()
			if !ok {
				rep = format.Optional
			}
			n.repetition = rep
			n.defLevel, n.repLevel = parent.defLevel, parent.repLevel
			switch rep {
			case format.Optional:
				n.defLevel++
			case format.Repeated:
				n.defLevel++
				n.repLevel++
			case format.Required:
			default:
				return nil, fmt.Errorf("%w: field %q has repetition %d", ErrCorrupt, e.Name, rep)
			}
		} else {
			n.repetition = format.Required
		}
		_, hasType := e.Type.Get()
		if parent == nil || !hasType {
			nc, _ := e.NumChildren.Get()
			if nc < 0 || int(nc) > len(elems)-pos {
				return nil, fmt.Errorf("%w: field %q claims %d children", ErrCorrupt, e.Name, nc)
			}
			n.children = make([]*pnode, 0, nc)
			for range nc {
				c, err := build(n, depth+1)
				if err != nil {
					return nil, err
				}
				n.children = append(n.children, c)
			}
		} else {
			n.leaf = true
			n.col = col
			col++
		}
		n.numLeaves = col - n.firstLeaf
		return n, nil
	}
	root, err := build(nil, 0)
	if err != nil {
		return nil, err
	}
	if pos != len(elems) {
		return nil, fmt.Errorf("%w: %d schema elements after the root's children", ErrCorrupt, len(elems)-pos)
	}
	return root, nil
}
