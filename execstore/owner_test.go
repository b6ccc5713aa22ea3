package execstore_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The store's promise, that it is the only code writing execution rows,
// is checked by reading the module: every non-test Go file is parsed and
// type-checked from source, each package outside the module standing in
// as an empty package (so nothing is built and the check takes a second
// or so). A call of one of gorm's write methods is a write to the
// executions table when the value it writes, or anything the chain it
// ends names (Model, Table, Where), has the type models.Execution (or a
// pointer, slice or array of it), when the chain names the table
// "executions", or when Exec or Raw runs SQL that changes that table.
// Methods of the module's own types (this store's Create, a users
// store's Update) are not gorm's and are left alone.

const module = "github.com/ontoflow/ontoflow"

// owner is the only package that may write execution rows.
const owner = "execstore"

// gormWrites are gorm's methods that write rows.
var gormWrites = map[string]bool{"Create": true, "CreateInBatches": true, "Save": true, "Update": true,
	"Updates": true, "UpdateColumn": true, "UpdateColumns": true, "Delete": true, "FirstOrCreate": true,
	"Exec": true, "Raw": true}

// writeSQL is SQL that changes the executions table.
var writeSQL = regexp.MustCompile(`(?i)\b(update|insert\s+into|delete\s+from|merge\s+into)\s+"?executions\b`)

// executionsTable is a Table argument naming the executions table.
var executionsTable = regexp.MustCompile(`^"?executions\b`)

func TestOnlyTheStoreWritesExecutions(t *testing.T) {
	writes := moduleWrites(t, "..")
	var ours []string
	for _, w := range writes {
		if strings.HasPrefix(w, owner+"/") {
			ours = append(ours, w)
			continue
		}
		t.Errorf("%s writes execution rows outside the execution store: add a method to %s and call it", w, owner)
	}
	// The store's own writes are found: the analysis sees what it looks
	// for (a broken analysis would find nothing and pass).
	if len(ours) < 8 {
		t.Errorf("found %d writes in %s (%v), expected every one of its writes (at least 8)", len(ours), owner, ours)
	}
}

// TestWriteFinder runs the analysis over testdata/writers, whose lines
// that write execution rows say so with a "want" comment.
func TestWriteFinder(t *testing.T) {
	dir := filepath.Join("testdata", "writers")
	l := newLoader(t, "..")
	got := l.writes(t, filepath.Join("execstore", dir))
	want := wantLines(t, filepath.Join(dir, "writers.go"))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found writes at\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantLines lists file:line of each line of path with a "// want" comment.
func wantLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "// want") {
			out = append(out, filepath.ToSlash(filepath.Join("execstore", path))+":"+strconv.Itoa(i+1))
		}
	}
	return out
}

// moduleWrites lists file:line of every write to execution rows in the
// module's non-test files below root.
func moduleWrites(t *testing.T, root string) []string {
	l := newLoader(t, root)
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, l.writes(t, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loader type-checks the module's packages from source.
type loader struct {
	fset  *token.FileSet
	root  string
	pkgs  map[string]*pkg
	stubs map[string]*types.Package
}

type pkg struct {
	types *types.Package
	files []*ast.File
	info  *types.Info
}

func newLoader(t *testing.T, root string) *loader {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module "+module+"\n") {
		t.Fatalf("%s is not the root of module %s (%v)", root, module, err)
	}
	return &loader{fset: token.NewFileSet(), root: root, pkgs: map[string]*pkg{}, stubs: map[string]*types.Package{}}
}

// Import is types.Importer: the module's packages from source, every
// other package an empty stand-in.
func (l *loader) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if path == module || strings.HasPrefix(path, module+"/") {
		p, err := l.load(strings.TrimPrefix(strings.TrimPrefix(path, module), "/"))
		if err != nil {
			return nil, err
		}
		return p.types, nil
	}
	if s, ok := l.stubs[path]; ok {
		return s, nil
	}
	s := types.NewPackage(path, stubName(path))
	s.MarkComplete()
	l.stubs[path] = s
	return s, nil
}

// stubName guesses the name a package outside the module declares (a
// wrong guess only leaves more of the file untyped).
func stubName(path string) string {
	parts := strings.Split(path, "/")
	name := parts[len(parts)-1]
	if len(parts) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
		name = parts[len(parts)-2]
	}
	if i := strings.Index(name, "."); i > 0 {
		name = name[:i]
	}
	return strings.ReplaceAll(strings.TrimPrefix(name, "go-"), "-", "_")
}

// load type-checks the package in dir (relative to the root; nil when
// it holds no Go files for this platform).
func (l *loader) load(dir string) (*pkg, error) {
	path := module
	if dir != "" && dir != "." {
		path += "/" + filepath.ToSlash(dir)
	}
	if p, ok := l.pkgs[path]; ok {
		return p, nil
	}
	bp, err := build.Default.ImportDir(filepath.Join(l.root, dir), 0)
	if err != nil {
		l.pkgs[path] = nil
		if _, ok := err.(*build.NoGoError); ok {
			return nil, nil
		}
		return nil, err
	}
	p := &pkg{info: &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{},
		Defs: map[*ast.Ident]types.Object{}}}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(l.fset, filepath.Join(l.root, dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
	}
	// Errors are expected (every package outside the module is empty);
	// what can be typed is.
	conf := types.Config{Importer: l, Error: func(error) {}, FakeImportC: true}
	p.types, _ = conf.Check(path, l.fset, p.files, p.info)
	l.pkgs[path] = p
	return p, nil
}

// writes lists file:line (relative to the root) of each write to
// execution rows in the package in dir.
func (l *loader) writes(t *testing.T, dir string) []string {
	p, err := l.load(dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	if p == nil {
		return nil
	}
	var out []string
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && p.writesExecutions(c) {
				pos := l.fset.Position(c.Lparen)
				rel, _ := filepath.Rel(l.root, pos.Filename)
				out = append(out, filepath.ToSlash(rel)+":"+strconv.Itoa(pos.Line))
			}
			return true
		})
	}
	sort.Strings(out)
	return out
}

// writesExecutions reports whether c is a gorm write to execution rows.
func (p *pkg) writesExecutions(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || !gormWrites[sel.Sel.Name] || !p.gormReceiver(sel.X) {
		return false
	}
	if (sel.Sel.Name == "Exec" || sel.Sel.Name == "Raw") && len(c.Args) > 0 && writeSQL.MatchString(p.text(c.Args[0])) {
		return true
	}
	for _, call := range append([]*ast.CallExpr{c}, chain(sel.X)...) {
		for _, a := range call.Args {
			if isExecution(p.info.Types[a].Type) {
				return true
			}
		}
		if s, ok := call.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Table" && len(call.Args) > 0 &&
			executionsTable.MatchString(p.text(call.Args[0])) {
			return true
		}
	}
	return false
}

// gormReceiver reports whether x may be a *gorm.DB: not a package name,
// and not a value of a type the module declares (gorm's types, outside
// the module, are untyped here).
func (p *pkg) gormReceiver(x ast.Expr) bool {
	if id, ok := ast.Unparen(x).(*ast.Ident); ok {
		if _, ok := p.info.Uses[id].(*types.PkgName); ok {
			return false
		}
	}
	tv, ok := p.info.Types[x]
	if !ok || tv.Type == nil || tv.Type == types.Typ[types.Invalid] {
		return true
	}
	named, ok := deref(tv.Type).(*types.Named)
	return ok && named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == "gorm.io/gorm"
}

// chain lists the calls of a method chain, innermost last
// (db.Model(x).Where(y) gives Where(y), Model(x)).
func chain(x ast.Expr) []*ast.CallExpr {
	var out []*ast.CallExpr
	for {
		call, ok := ast.Unparen(x).(*ast.CallExpr)
		if !ok {
			return out
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return out
		}
		out = append(out, call)
		x = sel.X
	}
}

// text is the value of a string constant expression, or failing that its
// string literals joined (SQL built with +).
func (p *pkg) text(e ast.Expr) string {
	if tv, ok := p.info.Types[e]; ok && tv.Value != nil {
		if s, err := strconv.Unquote(tv.Value.ExactString()); err == nil {
			return s
		}
	}
	var b strings.Builder
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, _ := strconv.Unquote(lit.Value)
			b.WriteString(s)
		}
		return true
	})
	return b.String()
}

// isExecution reports whether t is models.Execution, or a pointer, slice,
// array or map of it.
func isExecution(t types.Type) bool {
	for t != nil {
		switch u := t.(type) {
		case *types.Pointer:
			t = u.Elem()
		case *types.Slice:
			t = u.Elem()
		case *types.Array:
			t = u.Elem()
		case *types.Map:
			t = u.Elem()
		case *types.Named:
			o := u.Obj()
			return o.Pkg() != nil && o.Pkg().Path() == module+"/models" && o.Name() == "Execution"
		default:
			return false
		}
	}
	return false
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}
