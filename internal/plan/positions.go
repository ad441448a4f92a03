package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// positions are where a plan's parts start in its file, so that an error
// names the line and the stage an operator has to fix. Decoding itself
// stays with sigs.k8s.io/yaml (YAML → JSON, the inputs' own json tags);
// this reads the same bytes as a node tree only for line numbers and for
// the keys that decoding would refuse.
type positions struct {
	file   string // "" when parsed from bytes
	stages []stagePos
}

type stagePos struct {
	node    *yaml.Node
	name    string
	updates []*yaml.Node
}

// readPositions returns nil for a document that is not a mapping (decoding
// reports that).
func readPositions(file string, b []byte) *positions {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	p := &positions{file: file}
	stages := mappingValue(doc.Content[0], "stages")
	if stages == nil || stages.Kind != yaml.SequenceNode {
		return p
	}
	for _, st := range stages.Content {
		sp := stagePos{node: st}
		if st.Kind == yaml.MappingNode {
			if n := mappingValue(st, "name"); n != nil {
				sp.name = n.Value
			}
			if u := mappingValue(st, "updates"); u != nil && u.Kind == yaml.SequenceNode {
				sp.updates = u.Content
			}
		}
		p.stages = append(p.stages, sp)
	}
	return p
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// at is the location of a line: "file:line" or "line N".
func (p *positions) at(line int) string {
	if p.file != "" {
		return p.file + ":" + strconv.Itoa(line)
	}
	return "line " + strconv.Itoa(line)
}

// stage names stage i for an error: the line (0: where the stage starts)
// and its name.
func (p *positions) stage(i, line int) string {
	if p == nil || i >= len(p.stages) {
		return fmt.Sprintf("stages[%d]", i)
	}
	st := p.stages[i]
	if line == 0 {
		line = st.node.Line
	}
	return fmt.Sprintf("%s: stage %q (stages[%d])", p.at(line), st.name, i)
}

// update names update j of stage i, at the line of key when it is one of
// that update's keys (an unknown or wrong field), else where it starts.
func (p *positions) update(i, j int, key string) string {
	if p == nil || i >= len(p.stages) || j >= len(p.stages[i].updates) {
		return fmt.Sprintf("stages[%d] updates[%d]", i, j)
	}
	st, u := p.stages[i], p.stages[i].updates[j]
	line := u.Line
	if k := findKey(u, key); k != nil {
		line = k.Line
	}
	return fmt.Sprintf("%s: stage %q (stages[%d]) updates[%d]", p.at(line), st.name, i, j)
}

func findKey(n *yaml.Node, key string) *yaml.Node {
	if key == "" {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i]
			}
		}
	}
	for _, c := range n.Content {
		if k := findKey(c, key); k != nil {
			return k
		}
	}
	return nil
}

// unknownKeys are the plan's and its stages' keys that are not fields of
// File and Stage, each with its line and stage: decoding refuses them too,
// but without either.
func (p *positions) unknownKeys(b []byte) []error {
	var doc yaml.Node
	if p == nil || yaml.Unmarshal(b, &doc) != nil {
		return nil
	}
	var errs []error
	for _, k := range strayKeys(doc.Content[0], reflect.TypeOf(File{})) {
		errs = append(errs, fmt.Errorf("%s: unknown field %q", p.at(k.Line), k.Value))
	}
	for i, st := range p.stages {
		for _, k := range strayKeys(st.node, reflect.TypeOf(Stage{})) {
			errs = append(errs, fmt.Errorf("%s: unknown field %q", p.stage(i, k.Line), k.Value))
		}
	}
	return errs
}

func strayKeys(m *yaml.Node, t reflect.Type) []*yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	known := map[string]bool{}
	addKeys(known, t)
	var out []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !known[m.Content[i].Value] {
			out = append(out, m.Content[i])
		}
	}
	return out
}

// addKeys adds t's JSON keys, and those of the structs it embeds (a
// plan's Stage embeds the rollout's), but the derived ones.
func addKeys(known map[string]bool, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			addKeys(known, f.Type)
			continue
		}
		if !derivedKeys[name] {
			known[name] = true
		}
	}
}

// jsonKey is the JSON key of T's field named field.
func jsonKey[T any](field string) string {
	f, ok := reflect.TypeFor[T]().FieldByName(field)
	if !ok {
		panic("no field " + field)
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// unknownField is the field encoding/json refused ("" if err is not that).
func unknownField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		f := te.Field
		if i := strings.LastIndexByte(f, '.'); i >= 0 {
			f = f[i+1:]
		}
		return f
	}
	if m := unknownFieldRE.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// encoding/json's unknown-field error has no type of its own.
var unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)

// stageRefRE finds the stage (and update) an error of ValidateDecoded names.
var stageRefRE = regexp.MustCompile(`^stages\[(\d+)\] \([^)]*\)( updates\[(\d+)\])?`)

// locateAll locates each of the errors joined in err.
func (p *positions) locateAll(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{p.locate(err)}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, p.locate(e))
	}
	return out
}

// locate rewrites the leading "stages[i] (name)[ updates[j]]" of a
// validation error into its location in the file.
func (p *positions) locate(err error) error {
	if p == nil {
		return err
	}
	msg := err.Error()
	m := stageRefRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return err
	}
	i, _ := strconv.Atoi(msg[m[2]:m[3]])
	where := p.stage(i, p.keyLine(i, leadingKey(msg[m[1]:])))
	if m[6] >= 0 {
		j, _ := strconv.Atoi(msg[m[6]:m[7]])
		where = p.update(i, j, "")
	}
	return errors.New(where + msg[m[1]:])
}

// leadingKey is the stage key an error's rest starts with (": health:
// bake …" → "health"), so the error names that key's line.
func leadingKey(rest string) string {
	rest = strings.TrimPrefix(rest, ": ")
	key, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	key, _, _ = strings.Cut(key, "[")
	return key
}
