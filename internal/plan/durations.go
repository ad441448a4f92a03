package plan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

var durationType = reflect.TypeFor[time.Duration]()

// durationsToNanos rewrites, in a decoded update, every value of a
// time.Duration field given as a string ("90s", "2m") into nanoseconds, so
// plans can be written the way operators write durations while the inputs
// keep their Go types (which encode durations as integers).
func durationsToNanos(v any, t reflect.Type) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, skip := jsonName(f)
			if skip {
				continue
			}
			if f.Anonymous && name == "" {
				if _, err := durationsToNanos(obj, f.Type); err != nil {
					return nil, err
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			val, present := obj[name]
			if !present {
				continue
			}
			if f.Type == durationType {
				s, isString := val.(string)
				if !isString {
					continue
				}
				d, err := time.ParseDuration(s)
				if err != nil {
					return nil, fmt.Errorf("%s: %q is not a duration (use e.g. 90s, 5m, 1h)", name, s)
				}
				obj[name] = json.Number(fmt.Sprint(int64(d)))
				continue
			}
			conv, err := durationsToNanos(val, f.Type)
			if err != nil {
				return nil, fmt.Errorf("%s.%w", name, err)
			}
			obj[name] = conv
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return v, nil
		}
		for i := range arr {
			conv, err := durationsToNanos(arr[i], t.Elem())
			if err != nil {
				return nil, err
			}
			arr[i] = conv
		}
	}
	return v, nil
}

func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() {
		return "", true
	}
	name, _, _ := strings.Cut(tag, ",")
	return name, false
}
