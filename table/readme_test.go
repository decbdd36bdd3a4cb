package table_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMESnippetsRunAsExamples checks that every ```go block of the
// module's README.md is part of the body of an Example function that runs
// and checks its output (a non-empty "// Output:"), so that the README
// cannot drift from code that compiles and runs.
//
// A snippet matches when its Go tokens (comments included, their text with
// runs of white space as one space; semicolons, layout and indentation
// ignored) appear in that order in one Example's body. A line holding only
// "..." stands for any code (zero or more tokens) of the Example.
func TestREADMESnippetsRunAsExamples(t *testing.T) {
	root := filepath.Join("..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippets := goBlocks(readme)
	if len(snippets) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	examples := runnableExamples(t, root)
	if len(examples) == 0 {
		t.Fatal("no Example with an // Output: found")
	}
	for _, sn := range snippets {
		segs, err := snippetSegments(sn)
		if err != nil {
			t.Errorf("README.md:%d: the go block does not scan: %v", sn.line, err)
			continue
		}
		best, bestAt := "", -1
		found := false
		for _, ex := range examples {
			ok, at := matchSegments(segs, ex.toks)
			if ok {
				found = true
				break
			}
			if at > bestAt {
				best, bestAt = ex.name, at
			}
		}
		if !found {
			msg := "no Example with an // Output: holds it"
			if bestAt >= 0 {
				msg += fmt.Sprintf("; the closest, %s, differs from README.md line %d", best, bestAt)
			}
			t.Errorf("README.md:%d: go block (lines %d-%d): %s", sn.line, sn.line, sn.end, msg)
		}
	}
}

// TestREADMESnippetCheckFails checks the checker: a README snippet that no
// Example holds, or holds only in part, is reported at the line where it
// differs; "..." skips code.
func TestREADMESnippetCheckFails(t *testing.T) {
	body := exampleTokens(t, "package p\nfunc Example() {\n\ta, err := f(1)\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tg(a) // use a\n}\n")
	for _, tc := range []struct {
		snippet string
		ok      bool
		at      int // README line of the first token that differs, when !ok
	}{
		{"a, err := f(1)\nif err != nil { panic(err) }", true, 0},
		{"a, err := f(1)\n...\ng(a)   // use   a", true, 0},
		{"...\ng(a)", true, 0},
		{"a, err := f(1)\ng(a)", false, 11},
		{"a, err := f(2)", false, 10},
		{"g(a) // use b", false, 10},
	} {
		segs, err := snippetSegments(snippet{text: tc.snippet, line: 10})
		if err != nil {
			t.Fatal(err)
		}
		ok, at := matchSegments(segs, body)
		if ok != tc.ok || (!ok && at != tc.at) {
			t.Errorf("%q: match %v at line %d, want %v at %d", tc.snippet, ok, at, tc.ok, tc.at)
		}
	}
}

// snippet is one ```go block of a Markdown file: its text and the lines
// of its first and last code line.
type snippet struct {
	text      string
	line, end int
}

// goBlocks returns the ```go blocks of a Markdown text.
func goBlocks(md []byte) []snippet {
	var out []snippet
	var cur *snippet
	var b strings.Builder
	for i, l := range strings.Split(string(md), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &snippet{line: i + 2}
			b.Reset()
		case cur != nil && trimmed == "```":
			cur.text, cur.end = b.String(), i
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return out
}

// tok is a normalised Go token and the line it is on.
type tok struct {
	text string
	line int
}

// tokens scans src into normalised tokens; line numbers start at line.
func tokens(src string, line int) ([]tok, error) {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(src))
	var errs scanner.ErrorList
	var s scanner.Scanner
	s.Init(f, []byte(src), func(pos token.Position, msg string) { errs.Add(pos, msg) }, scanner.ScanComments)
	var out []tok
	for {
		pos, tk, lit := s.Scan()
		if tk == token.EOF {
			break
		}
		if tk == token.SEMICOLON {
			continue
		}
		text := tk.String()
		if lit != "" {
			text = lit
		}
		if tk == token.COMMENT {
			text = strings.Join(strings.Fields(text), " ")
		}
		out = append(out, tok{text, fset.Position(pos).Line + line - 1})
	}
	return out, errs.Err()
}

// snippetSegments splits a snippet at its "..." lines into token runs.
func snippetSegments(sn snippet) ([][]tok, error) {
	var segs [][]tok
	var cur strings.Builder
	start := sn.line
	flush := func(next int) error {
		ts, err := tokens(cur.String(), start)
		if err != nil {
			return err
		}
		segs = append(segs, ts)
		cur.Reset()
		start = next
		return nil
	}
	for i, l := range strings.Split(sn.text, "\n") {
		if strings.TrimSpace(l) == "..." {
			if err := flush(sn.line + i + 1); err != nil {
				return nil, err
			}
			continue
		}
		cur.WriteString(l)
		cur.WriteByte('\n')
	}
	if err := flush(0); err != nil {
		return nil, err
	}
	return segs, nil
}

// matchSegments reports whether the segments appear in body in order (each
// a contiguous run of tokens, any tokens between them); when not, at is the
// snippet line of the first token that could not be matched.
func matchSegments(segs [][]tok, body []tok) (ok bool, at int) {
	pos := 0
	for _, seg := range segs {
		if len(seg) == 0 {
			continue
		}
		found := -1
		longest := 0
		for p := pos; p < len(body); p++ {
			n := 0
			for n < len(seg) && p+n < len(body) && seg[n].text == body[p+n].text {
				n++
			}
			if n == len(seg) {
				found = p
				break
			}
			longest = max(longest, n)
		}
		if found < 0 {
			return false, seg[longest].line
		}
		pos = found + len(seg)
	}
	return true, 0
}

// example is a runnable Example function and the tokens of its body.
type example struct {
	name string
	toks []tok
}

// runnableExamples returns the Examples with a non-empty // Output: in the
// module's test files under root.
func runnableExamples(t *testing.T, root string) []example {
	t.Helper()
	var out []example
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(src, []byte("func Example")) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, ex := range doc.Examples(f) {
			if ex.Output == "" {
				continue
			}
			body, ok := ex.Code.(*ast.BlockStmt)
			if !ok {
				continue
			}
			from, to := fset.Position(body.Lbrace).Offset+1, fset.Position(body.Rbrace).Offset
			ts, err := tokens(string(src[from:to]), fset.Position(body.Lbrace).Line)
			if err != nil {
				return err
			}
			out = append(out, example{name: "Example" + ex.Name + " (" + path + ")", toks: ts})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exampleTokens returns the body tokens of the one Example in src.
func exampleTokens(t *testing.T, src string) []tok {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	body := f.Decls[0].(*ast.FuncDecl).Body
	ts, err := tokens(src[fset.Position(body.Lbrace).Offset+1:fset.Position(body.Rbrace).Offset], 1)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
