package failure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// Every type in the catalogue says whether a rerun may help: a new type
// left out of both lists would silently read "may help".
func TestEveryTypeSaysWhetherARerunMayHelp(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "failure.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		lit, ok := node.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		typ, _ := strconv.Unquote(lit.Value)
		n++
		if passing[typ] == needsChange[typ] {
			t.Errorf("%s: in both lists or in neither (failure/rerun.go)", typ)
		}
		return true
	})
	if n < 50 {
		t.Fatalf("read %d types from failure.go: the parse is wrong", n)
	}
}

func TestRerunMayHelp(t *testing.T) {
	for typ, want := range map[string]bool{
		TargetBusy: true, WrongDevice: false, MGSRejected + ":InvalidSp": false,
		"": true, "Error": true, "SomethingElse": true,
	} {
		if got := RerunMayHelp(typ); got != want {
			t.Errorf("RerunMayHelp(%q) = %v, want %v", typ, got, want)
		}
	}
}
