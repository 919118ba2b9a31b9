package ojson

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Valuer is implemented by types that build their own JSON tree (for
// example ordered maps).
type Valuer interface {
	OJSON() *Value
}

// Encode converts x with From and writes it with Marshal.
func Encode(x any) ([]byte, error) {
	v, err := From(x)
	if err != nil {
		return nil, err
	}
	return Marshal(v), nil
}

// EncodeCompact converts x with From and writes it with MarshalCompact.
func EncodeCompact(x any) ([]byte, error) {
	v, err := From(x)
	if err != nil {
		return nil, err
	}
	return MarshalCompact(v), nil
}

// From converts a Go value into a tree. Structs give objects with fields
// in declaration order, named and filtered by `json` tags (name,
// omitempty, "-"; untagged embedded structs are inlined). Floats are
// written as Python repr, map keys are sorted, nil slices become [] and
// nil pointers, maps and interfaces become null. *Value and Valuer values
// are used as they are; json.Number keeps its literal; encoding.TextMarshaler
// values become strings; []byte becomes base64 as in encoding/json.
func From(x any) (*Value, error) {
	if x == nil {
		return Null(), nil
	}
	return fromValue(reflect.ValueOf(x), 0)
}

var (
	valueType   = reflect.TypeFor[*Value]()
	valuerType  = reflect.TypeFor[Valuer]()
	numberType  = reflect.TypeFor[json.Number]()
	textMarshal = reflect.TypeFor[encoding.TextMarshaler]()
)

func fromValue(rv reflect.Value, depth int) (*Value, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("ojson: value nested deeper than %d", MaxDepth)
	}
	if !rv.IsValid() {
		return Null(), nil
	}
	t := rv.Type()
	if t == valueType {
		if rv.IsNil() {
			return Null(), nil
		}
		return rv.Interface().(*Value), nil
	}
	if t == numberType {
		s := rv.String()
		if s == "" {
			s = "0"
		}
		return Num(s), nil
	}
	if t.Implements(valuerType) && (rv.Kind() != reflect.Pointer || !rv.IsNil()) {
		return rv.Interface().(Valuer).OJSON(), nil
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(textMarshal) {
		b, err := rv.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return nil, err
		}
		return Str(string(b)), nil
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return Null(), nil
		}
		return fromValue(rv.Elem(), depth+1)
	case reflect.Bool:
		return Bool(rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Num(strconv.FormatUint(rv.Uint(), 10)), nil
	case reflect.Float32:
		f := rv.Float()
		return Float(f), nil
	case reflect.Float64:
		return Float(rv.Float()), nil
	case reflect.String:
		return Str(rv.String()), nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !t.Elem().Implements(valuerType) {
			return Str(base64.StdEncoding.EncodeToString(rv.Bytes())), nil
		}
		fallthrough
	case reflect.Array:
		n := rv.Len()
		a := make([]*Value, n)
		for i := 0; i < n; i++ {
			el, err := fromValue(rv.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			a[i] = el
		}
		return Arr(a...), nil
	case reflect.Map:
		if rv.IsNil() {
			return Null(), nil
		}
		type kv struct {
			k string
			v reflect.Value
		}
		items := make([]kv, 0, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k, err := mapKey(it.Key())
			if err != nil {
				return nil, err
			}
			items = append(items, kv{k, it.Value()})
		}
		sort.Slice(items, func(i, j int) bool { return items[i].k < items[j].k })
		o := NewObject()
		for _, it := range items {
			el, err := fromValue(it.v, depth+1)
			if err != nil {
				return nil, err
			}
			o.Set(it.k, el)
		}
		return o, nil
	case reflect.Struct:
		o := NewObject()
		if err := addFields(o, rv, depth); err != nil {
			return nil, err
		}
		return o, nil
	default:
		return nil, fmt.Errorf("ojson: cannot encode %s", t)
	}
}

func mapKey(k reflect.Value) (string, error) {
	if k.Kind() == reflect.String {
		return k.String(), nil
	}
	if k.Type().Implements(textMarshal) {
		b, err := k.Interface().(encoding.TextMarshaler).MarshalText()
		return string(b), err
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(k.Uint(), 10), nil
	}
	return "", fmt.Errorf("ojson: unsupported map key type %s", k.Type())
}

func addFields(o *Value, rv reflect.Value, depth int) error {
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := rv.Field(i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv, ft = fv.Elem(), ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := addFields(o, fv, depth+1); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if hasOpt(opts, "omitempty") && isEmpty(fv) {
			continue
		}
		el, err := fromValue(fv, depth+1)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		o.Set(name, el)
	}
	return nil
}

func hasOpt(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
