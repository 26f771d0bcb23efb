package runtime

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "bulkhead.dev/bulkhead"

// importsOf lists the module's packages that the Go files in dir import,
// test files included: a test that imports runtime pulls it in just the
// same.
func importsOf(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module+"/") && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestLayoutImportsGoDown holds the rule of runtime's layout (doc.go):
// a package below runtime never imports runtime, nor the command line;
// the packages runtime builds on (specs, seccomp, cgroups) import nothing
// of runtime; and the imports among runtime's packages have no cycle.
func TestLayoutImportsGoDown(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir() && p != ".":
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string][]string{}
	for _, dir := range dirs {
		pkg := module + "/runtime/" + filepath.ToSlash(dir)
		graph[pkg] = importsOf(t, dir)
		for _, imp := range graph[pkg] {
			if imp == module+"/runtime" || strings.HasPrefix(imp, module+"/cmd/") {
				t.Errorf("%s imports %s: packages below runtime must not import it or the command line", pkg, imp)
			}
		}
	}
	// The probe's protocol is built into the static probe: it imports
	// nothing of the module.
	if imps := graph[module+"/runtime/probe/protocol"]; len(imps) > 0 {
		t.Errorf("runtime/probe/protocol imports %v", imps)
	}
	if len(graph) < 6 {
		t.Fatalf("found %d packages below runtime, want at least 6: is the test looking at the right directory?", len(graph))
	}
	for _, lower := range []string{"specs", "seccomp", "cgroups"} {
		for _, imp := range importsOf(t, filepath.Join("..", lower)) {
			if strings.HasPrefix(imp, module+"/runtime") {
				t.Errorf("%s imports %s: it is below runtime", lower, imp)
			}
		}
	}
	// Depth-first search for a cycle among runtime's packages.
	const (
		unseen = iota
		open
		done
	)
	mark := map[string]int{}
	var visit func(p string, path []string)
	visit = func(p string, path []string) {
		switch mark[p] {
		case open:
			t.Errorf("import cycle: %s", strings.Join(append(path, p), " -> "))
			return
		case done:
			return
		}
		mark[p] = open
		for _, q := range graph[p] {
			if _, ours := graph[q]; ours {
				visit(q, append(path, p))
			}
		}
		mark[p] = done
	}
	for p := range graph {
		visit(p, nil)
	}
}
