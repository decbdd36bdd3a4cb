package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// treeFiles returns every file under dir with its size: what a command
// that commits nothing must leave as it was.
func treeFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, dir)] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// typo returns name without its middle character: an edit distance of 1,
// no prefix of name, and no file in the package directory.
func typo(name string) string {
	i := len(name) / 2
	return name[:i] + name[i+1:]
}

// TestUnknownSubcommands (issue 38): every deltactl command that has
// subcommands refuses an unknown one with exit 2, the usage error naming
// it, and the close subcommand name ("Did you mean this?"), as the root
// refuses an unknown command; a name close to none lists the subcommands.
// The table named on the command line is left as it was. Every parent of
// the command tree is tried with a typo of each of its subcommands, so a
// parent added later is covered too.
func TestUnknownSubcommands(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string")
	before := treeFiles(t, tbl)

	type tc struct {
		parent, name string // deltactl <parent> <name>
		args         []string
		want         []string // substrings of stderr
		suggest      string   // "" when no name is close
	}
	cases := []tc{
		// The two: a typo and a subcommand that does not exist.
		{"alter", "set-propertys", []string{tbl, "delta.appendOnly=true"}, nil, "set-properties"},
		{"alter", "add-constraint", []string{tbl, "pos", "id > 0"},
			[]string{"(its subcommands: drop-column, rename-column, set-properties, unset-properties)"}, ""},
	}
	parents := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.HasParent() || !c.HasSubCommands() {
			return
		}
		parents++
		path := strings.Fields(c.CommandPath())[1:]
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			// The table (and, for alter, one more argument) after the
			// unknown name, as a user would type them.
			args := []string{tbl, "x"}
			if c.Runnable() {
				args = args[:1] // ingest <file> <table>
			}
			cases = append(cases, tc{strings.Join(path, " "), typo(sub.Name()), args, nil, sub.Name()})
		}
	}
	walk(newRootCmd(&app{env: env{getenv: func(string) string { return "" }}}))
	if parents < 2 {
		t.Fatalf("%d commands with subcommands, want alter and ingest at least", parents)
	}
	for _, c := range cases {
		t.Run(c.parent+" "+c.name, func(t *testing.T) {
			out, errs, code := runCLI(t, append(append(strings.Fields(c.parent), c.name), c.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, out, errs)
			}
			want := append([]string{`deltactl: unknown command "` + c.name + `" for "deltactl ` + c.parent + `"`,
				"Run 'deltactl " + c.parent + " --help' for usage."}, c.want...)
			if c.suggest != "" {
				want = append(want, "Did you mean this?\n\t"+c.suggest+"\n")
			} else if strings.Contains(errs, "Did you mean") {
				t.Errorf("stderr suggests a name: %q", errs)
			}
			for _, w := range want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			after := treeFiles(t, tbl)
			if len(after) != len(before) {
				t.Errorf("table files %v, want %v", after, before)
			}
			for k, n := range before {
				if after[k] != n {
					t.Errorf("table file %s: %d bytes, want %d", k, after[k], n)
				}
			}
		})
	}
	// Without a subcommand, a parent that is no command itself shows its
	// help, as the root does.
	out, errs, code := runCLI(t, "alter")
	if code != 0 || !strings.Contains(out, "deltactl alter [command]") || errs != "" {
		t.Errorf("alter without a subcommand: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// An ingest whose input file is named like a subcommand (kafk, close
	// to kafka) but exists is an ingest.
	if err := os.WriteFile(filepath.Join(dir, "kafk"), []byte("id,v\n1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if _, errs, code := runCLI(t, "ingest", "kafk", tbl, "--format", "csv"); code != 0 {
		t.Errorf("ingest of the existing file kafk: exit %d, stderr %q", code, errs)
	}
	if got := strings.TrimSpace(mustRun(t, "cat", tbl, "-o", "json")); got != `{"id":1,"v":"a"}` {
		t.Errorf("table after ingesting kafk: %s", got)
	}
}
