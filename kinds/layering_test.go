package kinds

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/fleetsaga/fleetsaga/"

// A kind's workflow steps and its activities share one package, so the
// layering rules are checked per file (docs/CONTRIBUTING.md "Layout and
// import direction"): activity code never calls workflow code or the
// shared lifecycle, workflow code does no I/O (workflowcheck checks its
// determinism) and never makes a fleet client, and no product file imports
// fleetsim.
func TestLayeringPerFile(t *testing.T) {
	var checked int
	for _, root := range []string{".", "../workflows", "../activities"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			for _, msg := range layeringProblems(f) {
				t.Errorf("%s: %s", path, msg)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d files: is the walk rooted right?", checked)
	}
}

// layeringProblems says which rules file f breaks.
func layeringProblems(f *ast.File) []string {
	imports := map[string]string{} // path -> name used in the file
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[p] = name
	}
	_, sdkWorkflow := imports["go.temporal.io/sdk/workflow"]
	_, sharedWorkflows := imports[module+"workflows"]
	_, sdkActivity := imports["go.temporal.io/sdk/activity"]
	sdkActivity = sdkActivity || definesActivities(f)
	var out []string
	for p := range imports {
		if strings.HasPrefix(p, module+"fleetsim") {
			out = append(out, "product code imports "+p)
		}
	}
	switch {
	case sdkActivity && (sdkWorkflow || sharedWorkflows):
		out = append(out, "activity code imports workflow code (go.temporal.io/sdk/workflow or workflows/)")
	case sdkWorkflow:
		for _, p := range []string{"net", "net/http", "database/sql", "os", "os/exec", "github.com/lib/pq", "go.temporal.io/sdk/client"} {
			if _, ok := imports[p]; ok {
				out = append(out, "workflow code imports "+p+" (I/O belongs in activities)")
			}
		}
		clients := map[string]bool{}
		for p, name := range imports {
			if strings.HasPrefix(p, module+"fleet/") || p == module+"ledger" {
				clients[name] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			se, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := se.X.(*ast.Ident); ok && clients[x.Name] &&
				(se.Sel.Name == "Client" || se.Sel.Name == "DB" || strings.HasPrefix(se.Sel.Name, "New") || se.Sel.Name == "Open") {
				out = append(out, "workflow code uses "+x.Name+"."+se.Sel.Name+" (clients belong in activities)")
			}
			return true
		})
	}
	return out
}

// definesActivities: f has methods of an activities type (XActivities).
func definesActivities(f *ast.File) bool {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
			continue
		}
		t := fd.Recv.List[0].Type
		if st, ok := t.(*ast.StarExpr); ok {
			t = st.X
		}
		if id, ok := t.(*ast.Ident); ok && strings.HasSuffix(id.Name, "Activities") {
			return true
		}
	}
	return false
}

// The check fails where it should: an activity that calls the lifecycle, a
// workflow that opens a client or imports fleetsim.
func TestLayeringCatchesViolations(t *testing.T) {
	for src, want := range map[string]string{
		"package k\nimport \"" + module + "workflows\"\ntype ZActivities struct{}\nfunc (*ZActivities) Do() { workflows.IsCancel(nil, nil) }":    "activity code imports workflow code",
		"package k\nimport (\"go.temporal.io/sdk/workflow\"; \"" + module + "fleet/mgs\")\nfunc W(ctx workflow.Context) { mgs.NewClient(\"\") }": "workflow code uses mgs.NewClient",
		"package k\nimport (\"go.temporal.io/sdk/workflow\"; \"net/http\")\nfunc W(ctx workflow.Context) { http.Get(\"\") }":                     "workflow code imports net/http",
		"package k\nimport \"" + module + "fleetsim/mgs\"\nvar _ = mgs.X":                                                                        "product code imports",
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(layeringProblems(f), "; ")
		if !strings.Contains(got, want) {
			t.Errorf("%q: got %q, want %q", src, got, want)
		}
	}
}
