package failure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// Every type in failure.go says whether a rerun may help and which class
// it is in: a new type left out would silently read "may help" and count
// as "other" against a rollout's thresholds.
func TestEveryTypeHasItsRerunAndClass(t *testing.T) {
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
		info, ok := types[typ]
		if !ok {
			t.Errorf("%s: not in the catalogue (failure/types.go)", typ)
		}
		if info.Rerun != MayPass && info.Rerun != NeedsChange {
			t.Errorf("%s: no rerun rule", typ)
		}
		switch info.Class {
		case ClassTimeout, ClassRefused, ClassVerification, ClassOther:
		default:
			t.Errorf("%s: no class", typ)
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

// A type with a code suffix is its base type: an MGS or CNAPI refusal with
// a code counts as refused, not as "other".
func TestCodedTypesReadAsTheirBase(t *testing.T) {
	for typ, want := range map[string]Class{
		WithCode(MGSRejected, "InvalidSp"): ClassRefused, WithCode(TritonAPI, "ResourceNotFound"): ClassRefused,
		MGSRejected: ClassRefused, WithCode(HostBootTimeout, ""): ClassTimeout,
		WrongActiveVersion: ClassVerification, "SomethingElse": ClassOther, "SomethingElse:Code": ClassOther, "": ClassOther,
	} {
		if got := ClassOf(typ); got != want {
			t.Errorf("ClassOf(%q) = %q, want %q", typ, got, want)
		}
	}
	if got := WithCode(MGSRejected, "InvalidSp"); got != "MGSRejected:InvalidSp" {
		t.Errorf("WithCode = %q", got)
	}
	if RerunMayHelp(WithCode(TritonAPI, "X")) {
		t.Error("a coded TritonAPI type reads as its base: a rerun cannot help")
	}
}
