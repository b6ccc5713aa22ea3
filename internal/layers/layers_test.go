package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ontoflow/ontoflow"

// layer is one row of docs/architecture.md's table of layers.
type layer struct {
	rank     int
	name     string
	patterns []string
}

// TestImportsFollowTheLayers fails when a package of the module imports
// one on a higher layer than its own, or is on no layer: the layers are
// read from docs/architecture.md, so the page and the code cannot drift.
func TestImportsFollowTheLayers(t *testing.T) {
	layers := readLayers(t, filepath.Join("..", "..", "docs", "architecture.md"))
	pkgs := listPackages(t)
	rank := map[string]int{}
	for path := range pkgs {
		r, ok := layerOf(layers, path)
		if !ok {
			t.Errorf("package %s is on no layer of docs/architecture.md", path)
			continue
		}
		rank[path] = r
	}
	for path, imports := range pkgs {
		if _, ok := rank[path]; !ok {
			continue // reported above
		}
		for _, imp := range imports {
			ri, ok := rank[imp]
			if ok && ri > rank[path] {
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s)",
					path, rank[path], layers[rank[path]].name, imp, ri, layers[ri].name)
			}
		}
	}
}

// harnesses is the folder of the test harnesses; harnessUsers are the
// only packages whose non-test code may import one (the benchmarks).
const harnesses = "internal/harness/"

var harnessUsers = []string{"cmd/", harnesses}

// TestHarnessesServeOnlyTests fails when a package's own (non-test) code
// imports a test harness, so that internal/'s leaves and its harnesses
// stay apart: a harness starts servers and databases no process should.
func TestHarnessesServeOnlyTests(t *testing.T) {
	for path, imports := range listPackages(t) {
		if mayUseHarness(path) {
			continue
		}
		for _, imp := range imports {
			if strings.HasPrefix(imp, harnesses) {
				t.Errorf("%s imports the test harness %s outside its tests", path, imp)
			}
		}
	}
}

func mayUseHarness(path string) bool {
	for _, p := range harnessUsers {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// TestLayerOfMatchesFolders pins the table's patterns: a name is the
// package itself, name/... the folder and everything below it.
func TestLayerOfMatchesFolders(t *testing.T) {
	ls := []layer{{rank: 0, patterns: []string{"functions/runtime/..."}}, {rank: 1, patterns: []string{"functions"}}}
	for path, want := range map[string]int{"functions/runtime": 0, "functions/runtime/cputime": 0, "functions": 1} {
		if got, ok := layerOf(ls, path); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", path, got, ok, want)
		}
	}
	if _, ok := layerOf(ls, "functionsx"); ok {
		t.Error("functionsx matched a layer")
	}
}

var (
	rowRE  = regexp.MustCompile("^\\|\\s*(\\d+)\\s*\\|\\s*([^|]+?)\\s*\\|(.*)\\|\\s*$")
	codeRE = regexp.MustCompile("`([^`]+)`")
)

// readLayers parses the table that follows the "layers:" marker.
func readLayers(t *testing.T, doc string) []layer {
	t.Helper()
	f, err := os.Open(doc)
	if err != nil {
		t.Fatalf("open the architecture page: %v", err)
	}
	defer f.Close()
	var out []layer
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "<!-- layers:") {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(out) > 0 {
				break
			}
			continue
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue // the header and its rule
		}
		r, _ := strconv.Atoi(m[1])
		if r != len(out) {
			t.Fatalf("layer %q is numbered %d, want %d (one row a layer, lowest first)", m[2], r, len(out))
		}
		l := layer{rank: r, name: m[2]}
		for _, c := range codeRE.FindAllStringSubmatch(m[3], -1) {
			l.patterns = append(l.patterns, c[1])
		}
		out = append(out, l)
	}
	if len(out) < 2 {
		t.Fatalf("found %d layers in %s; the table after the layers marker is missing", len(out), doc)
	}
	return out
}

// layerOf returns the rank of the first layer with a pattern matching path
// (relative to the module).
func layerOf(ls []layer, path string) (int, bool) {
	for _, l := range ls {
		for _, p := range l.patterns {
			dir, tree := strings.CutSuffix(p, "/...")
			if path == dir || (tree && strings.HasPrefix(path, dir+"/")) {
				return l.rank, true
			}
		}
	}
	return 0, false
}

// listPackages returns each package of the module (relative path) with
// its non-test imports inside the module, from go list.
func listPackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	for path, imports := range listImports(t) {
		var own []string
		for _, imp := range imports {
			if rel, ok := relative(imp); ok {
				own = append(own, rel)
			}
		}
		if rel, ok := relative(path); ok {
			pkgs[rel] = own
		}
	}
	return pkgs
}

// listImports maps each package of the module to everything its non-test
// code imports, the module's own packages and others alike.
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list's output: %v", err)
		}
		pkgs[p.ImportPath] = p.Imports
	}
	return pkgs
}

// relative is path without the module prefix, for the module's packages.
func relative(path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}
