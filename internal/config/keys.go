package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spadekit/spade/internal/nearest"
)

// keyField is one dotted key: where its field sits in Config, its Go type and its declared range.
type keyField struct {
	key   string
	index []int
	typ   reflect.Type
	rng   valueRange
}

// keyFields lists every key in Config's field order (the order of JSON and YAML). A field of a kind
// the keys cannot hold, a named string type that is no registered enum or a malformed range tag panics:
// they are mistakes in this package, which the tests reach on their first call.
var keyFields = sync.OnceValue(func() []keyField {
	var out []keyField
	var visit func(t reflect.Type, prefix string, index []int)
	visit = func(t reflect.Type, prefix string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Tag.Get("key") == "-" {
				continue
			}
			key := strings.Split(f.Tag.Get("json"), ",")[0]
			if prefix != "" {
				key = prefix + "." + key
			}
			at := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct {
				visit(f.Type, key, at)
				continue
			}
			if _, ok := kindWords[f.Type.Kind()]; !ok {
				panic(fmt.Sprintf("config: key %s: unsupported kind %s", key, f.Type.Kind()))
			}
			if _, enum := enumTypes[f.Type]; f.Type.Kind() == reflect.String && f.Type != reflect.TypeFor[string]() && !enum {
				panic(fmt.Sprintf("config: key %s: type %s is not a registered enum (registerEnum)", key, f.Type))
			}
			rng, err := parseRange(f.Tag.Get("range"))
			if err == nil && rng != (valueRange{}) && (f.Type.Kind() == reflect.String || f.Type.Kind() == reflect.Bool) {
				err = fmt.Errorf("a range tag on a %s field", f.Type.Kind())
			}
			if err != nil {
				panic(fmt.Sprintf("config: key %s: %v", key, err))
			}
			out = append(out, keyField{key: key, index: at, typ: f.Type, rng: rng})
		}
	}
	visit(reflect.TypeFor[Config](), "", nil)
	return out
})

// keyByName indexes keyFields by key.
var keyByName = sync.OnceValue(func() map[string]*keyField {
	fields := keyFields()
	m := make(map[string]*keyField, len(fields))
	for i := range fields {
		m[fields[i].key] = &fields[i]
	}
	return m
})

// Keys returns every dotted key, sorted.
func Keys() []string {
	var keys []string
	for _, f := range keyFields() {
		keys = append(keys, f.key)
	}
	sort.Strings(keys)
	return keys
}

// kindWords names each kind a key can hold: its type for users and what an error says it wants.
var kindWords = map[reflect.Kind]struct{ typeName, wants string }{
	reflect.String:  {"string", "a string"},
	reflect.Int:     {"integer", "an integer"},
	reflect.Int64:   {"integer", "an integer"},
	reflect.Float64: {"number", "a number"},
	reflect.Bool:    {"bool", "true or false"},
}

// typeName is the key's type as users read it: integer, number, string, bool or enum.
func (f *keyField) typeName() string {
	if _, ok := enumTypes[f.typ]; ok {
		return "enum"
	}
	return kindWords[f.typ.Kind()].typeName
}

// wants says what a key's value must be, for errors: "an integer", "one of a, b", ...
func (f *keyField) wants() string {
	if values, ok := enumTypes[f.typ]; ok {
		return "one of " + strings.Join(values, ", ")
	}
	return kindWords[f.typ.Kind()].wants
}

// value returns the key's field in c.
func (f *keyField) value(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(f.index)
}

// lookup returns a key's field, or an error for an unknown key with the keys it was likely meant to be.
func lookup(key string) (*keyField, error) {
	if f, ok := keyByName()[key]; ok {
		return f, nil
	}
	return nil, unknownKey(key)
}

// Set assigns a value given as text to a dotted key; it fails, naming the key, on an unknown key or a
// value that does not parse as the key's type (integers in base 10, finite numbers, strconv.ParseBool's
// booleans). Enum values and ranges are Validate's: Set takes any string and any number.
func (c *Config) Set(key, value string) error {
	f, err := lookup(key)
	if err != nil {
		return err
	}
	v := f.value(c)
	switch v.Kind() {
	case reflect.String:
		v.SetString(value)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return invalidf("config: key %q wants an integer, got %q", key, value)
		}
		v.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return invalidf("config: key %q wants a number, got %q", key, value)
		}
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return invalidf("config: key %q wants a finite number, got %q", key, value)
		}
		v.SetFloat(x)
	case reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return invalidf("config: key %q wants true or false, got %q", key, value)
		}
		v.SetBool(b)
	}
	return nil
}

// Get returns a key's value as text (fmt.Sprint: 1e-06, 0.95, true, the string itself).
func (c *Config) Get(key string) (string, error) {
	f, err := lookup(key)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(f.value(c).Interface()), nil
}

// valueKind is the type a config document gave a value.
type valueKind int

// The kinds of values a JSON or YAML document holds.
const (
	kindString valueKind = iota
	kindInt
	kindFloat
	kindBool
	kindNull
	kindList
	kindObject
	kindOther // a YAML scalar of another tag (a timestamp, binary data)
)

// entry is one key of a config document with its value: nested objects are flattened to dotted keys.
type entry struct {
	key  string
	kind valueKind
	// text is the value as Set parses it (a YAML integer in base 10, a number as strconv formats it).
	text string
	// line is the value's line in a YAML document (0 for JSON).
	line int
	// tag is the YAML tag of a kindOther value.
	tag string
}

// describe is the value as an error shows it: the string "4", the number 1, true, null, a list, ...
func (e entry) describe() string {
	switch e.kind {
	case kindString:
		return "the string " + strconv.Quote(e.text)
	case kindInt, kindFloat:
		return "the number " + e.text
	case kindBool:
		return e.text
	case kindNull:
		return "null"
	case kindList:
		return "a list"
	case kindObject:
		return "an object"
	}
	return fmt.Sprintf("the %s %q", strings.TrimPrefix(e.tag, "!!"), e.text)
}

// typeError is the error of a value of the wrong type for the entry's key.
func (e entry) typeError(wants string) error {
	hint := ""
	if wants == "a string" && (e.kind == kindInt || e.kind == kindFloat || e.kind == kindBool || e.kind == kindOther) {
		hint = " (write it in quotes for the text)"
	}
	return invalidf("config: key %q wants %s, got %s%s", e.key, wants, e.describe(), hint)
}

// accepts reports whether a value of kind k can be assigned to the key: strings to strings and enums,
// booleans to booleans, integers to integers, and integers or numbers to numbers.
func (f *keyField) accepts(k valueKind) bool {
	switch f.typ.Kind() {
	case reflect.String:
		return k == kindString
	case reflect.Bool:
		return k == kindBool
	case reflect.Int, reflect.Int64:
		return k == kindInt
	case reflect.Float64:
		return k == kindInt || k == kindFloat
	}
	return false
}

// apply assigns every entry to c, all or none: on an error c is left as it was. A key given twice
// (nested and dotted, or twice in one object) is an error, as is an entry of the wrong type.
func (c *Config) apply(entries []entry) error {
	next := *c
	seen := map[string]bool{}
	for _, e := range entries {
		err := next.applyEntry(e, seen)
		if err != nil && e.line > 0 {
			err = fmt.Errorf("line %d: %w", e.line, err)
		}
		if err != nil {
			return err
		}
	}
	*c = next
	return nil
}

func (c *Config) applyEntry(e entry, seen map[string]bool) error {
	if seen[e.key] {
		return invalidf("config: key %q is given twice", e.key)
	}
	seen[e.key] = true
	f, ok := keyByName()[e.key]
	if !ok {
		if e.kind == kindObject && isGroup(e.key) {
			return nil // an empty group: nothing to set
		}
		return unknownKey(e.key)
	}
	if !f.accepts(e.kind) {
		return e.typeError(f.wants())
	}
	return c.Set(e.key, e.text)
}

// Merge applies a JSON document to c: an object of keys, nested objects or dotted keys or both
// ({"rollout": {"group_size": 4}, "grpo.kl_beta": 0.01}). Values are type-checked strictly (a string
// where an integer is wanted is an error, and so is 4.0); unknown keys (with the likely key), a key given
// twice and malformed JSON are errors naming the key. On an error c is unchanged.
func (c *Config) Merge(doc []byte) error {
	entries, err := flattenJSON(doc)
	if err != nil {
		return err
	}
	return c.apply(entries)
}

// LoadFile merges a config file into c, read by its extension: .json with Merge, .yaml or .yml with
// MergeYAML; any other extension is an error that says which are read. Errors start with the path.
func (c *Config) LoadFile(path string) error {
	var merge func([]byte) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		merge = c.Merge
	case ".yaml", ".yml":
		merge = c.MergeYAML
	default:
		return invalidf("config: %s: config files are read by their extension: .json, .yaml or .yml", path)
	}
	doc, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return invalidf("config: %v", err)
	}
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := merge(doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// flattenJSON reads a JSON object into entries, in document order, nested objects as dotted keys.
func flattenJSON(doc []byte) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, invalidf("config: not a JSON object: %v", err)
	}
	if tok != json.Delim('{') {
		return nil, invalidf("config: not a JSON object: it starts with %v", tok)
	}
	var out []entry
	if err := jsonObject(dec, "", &out); err != nil {
		return nil, invalidf("config: invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidf("config: invalid JSON: data after the object")
	}
	return out, nil
}

// jsonObject reads the members of an object whose '{' was read, through its '}'.
func jsonObject(dec *json.Decoder, prefix string, out *[]entry) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // a member starts with its name: the decoder checks the syntax
		if prefix != "" {
			key = prefix + "." + key
		}
		if tok, err = dec.Token(); err != nil {
			return err
		}
		e := entry{key: key}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' {
				n := len(*out)
				if err := jsonObject(dec, key, out); err != nil {
					return err
				}
				if len(*out) > n {
					continue
				}
				e.kind = kindObject
			} else {
				e.kind = kindList
				if err := skipJSON(dec); err != nil {
					return err
				}
			}
		case string:
			e.kind, e.text = kindString, v
		case json.Number:
			e.kind, e.text = kindInt, v.String()
			if strings.ContainsAny(e.text, ".eE") {
				e.kind = kindFloat
			}
		case bool:
			e.kind, e.text = kindBool, strconv.FormatBool(v)
		case nil:
			e.kind = kindNull
		}
		*out = append(*out, e)
	}
	_, err := dec.Token() // '}'
	return err
}

// skipJSON reads the rest of an array whose '[' was read.
func skipJSON(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
	return nil
}

// isGroup reports whether prefix is a group of keys ("rollout", "llm.agent").
func isGroup(prefix string) bool {
	for _, f := range keyFields() {
		if strings.HasPrefix(f.key, prefix+".") {
			return true
		}
	}
	return false
}

// unknownKey is the error for a key that does not exist: the parent (which only --from sets), a group, a
// key below a key that holds a value, or a likely misspelling of an existing key.
func unknownKey(key string) error {
	if key == "parent" || strings.HasPrefix(key, "parent.") {
		return invalidf("config: unknown key %q: a run's parent is not a key (only spade init --from RUN@STEP sets it)", key)
	}
	for p := key; strings.Contains(p, "."); {
		p = p[:strings.LastIndex(p, ".")]
		if f, ok := keyByName()[p]; ok {
			return invalidf("config: unknown key %q: %q is a key of its own (%s), not a group", key, p, f.wants())
		}
	}
	if isGroup(key) {
		return invalidf("config: unknown key %q: it is a group of keys (spade config keys %s lists them)", key, key)
	}
	switch s := suggest(key); len(s) {
	case 0:
		return invalidf("config: unknown key %q; spade config keys lists every key", key)
	case 1:
		return invalidf("config: unknown key %q (did you mean %q?); spade config keys lists every key", key, s[0])
	default:
		quoted := make([]string, len(s))
		for i, k := range s {
			quoted[i] = strconv.Quote(k)
		}
		return invalidf("config: unknown key %q (did you mean %s or %s?); spade config keys lists every key",
			key, strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
	}
}

// suggest returns the keys an unknown key was likely meant to be, closest first, at most three: the
// closest keys when one is within a small edit distance of the whole key (a typo), else the keys whose
// last segment is within a small distance of the key's last segment (a right name in the wrong group:
// "grpo.group_size").
func suggest(key string) []string {
	key = strings.ToLower(key)
	var whole, segment []nearest.Match
	last := key[strings.LastIndex(key, ".")+1:]
	for _, k := range Keys() {
		d := nearest.Distance(key, k)
		if d <= max(2, len(key)/5) {
			whole = append(whole, nearest.Match{Name: k, Dist: d})
		}
		if nearest.Distance(last, k[strings.LastIndex(k, ".")+1:]) <= len(last)/5 {
			segment = append(segment, nearest.Match{Name: k, Dist: d})
		}
	}
	found := segment
	if len(whole) > 0 {
		best := slices.MinFunc(whole, func(a, b nearest.Match) int { return a.Dist - b.Dist }).Dist
		found = slices.DeleteFunc(whole, func(m nearest.Match) bool { return m.Dist > best })
	}
	return nearest.Closest(found, 3)
}

// enumTypes maps each enum type of a config field to its valid values, as text. Each family registers
// its enums (registerEnum in an init of its file); every field of a registered type is checked by
// Validate, whatever its key, so a new enum key needs no new check.
var enumTypes = map[reflect.Type][]string{}

// registerEnum records an enum type's valid values.
func registerEnum[T ~string](values []T) {
	enumTypes[reflect.TypeFor[T]()] = names(values)
}

func names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// EnumValues returns the valid values of an enum-valued key, or nil for a key that takes any value of its
// type (outcome.exclude_ended_by, a list, is described by its doc comment).
func EnumValues(key string) []string {
	f, ok := keyByName()[key]
	if !ok {
		return nil
	}
	return slices.Clone(enumTypes[f.typ])
}

// validateEnums checks every enum-valued key; the error names the first invalid key and its valid values.
func (c *Config) validateEnums() error {
	for i := range keyFields() {
		f := &keyFields()[i]
		values, ok := enumTypes[f.typ]
		if v := f.value(c).String(); ok && !slices.Contains(values, v) {
			return invalidf("config: key %q must be one of %s; got %q", f.key, strings.Join(values, ", "), v)
		}
	}
	return nil
}

// validateRanges checks every number against its key's declared range (and that it is finite).
func (c *Config) validateRanges() error {
	for i := range keyFields() {
		f := &keyFields()[i]
		var x float64
		switch v := f.value(c); v.Kind() {
		case reflect.Int, reflect.Int64:
			x = float64(v.Int())
		case reflect.Float64:
			x = v.Float()
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return invalidf("config: key %q must be a finite number; got %v", f.key, x)
			}
		default:
			continue
		}
		if !f.rng.contains(x) {
			got, _ := c.Get(f.key)
			return invalidf("config: key %q must be %s; got %s", f.key, f.rng.phrase(), got)
		}
	}
	return nil
}

// KeyInfo describes one key for users: its type, allowed values and documentation.
type KeyInfo struct {
	// Key is the dotted key, e.g. "rollout.group_size".
	Key string
	// Type is "integer", "number", "string", "bool" or "enum".
	Type string
	// Values are an enum's values; nil otherwise.
	Values []string
	// Range is the allowed range as written for users, e.g. ">= 1", "[0, 1]", "(0, 1]"; "" when any
	// value of the type is allowed.
	Range string
	// Doc is the field's doc comment, as one paragraph, without the leading Go field name ("GroupSize is
	// the number of plays ..." reads "The number of plays ...").
	Doc string
}

// Summary returns the first sentence of the doc: the text up to the first ". " (or the end) outside
// parentheses and quotes, "e.g." and "i.e." not counted.
func (k KeyInfo) Summary() string {
	depth, quoted := 0, false
	for i, r := range k.Doc {
		switch {
		case r == '"' || r == '`':
			quoted = !quoted
		case quoted:
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == '.' && depth == 0 && (i+1 == len(k.Doc) || k.Doc[i+1] == ' ') &&
			!strings.HasSuffix(k.Doc[:i], "e.g") && !strings.HasSuffix(k.Doc[:i], "i.e"):
			return k.Doc[:i+1]
		}
	}
	return k.Doc
}

// Describe returns every key's KeyInfo, sorted by key.
func Describe() []KeyInfo {
	var out []KeyInfo
	for _, key := range Keys() {
		info, _ := KeyDoc(key)
		out = append(out, info)
	}
	return out
}

// KeyDoc returns one key's KeyInfo; false for an unknown key.
func KeyDoc(key string) (KeyInfo, bool) {
	f, ok := keyByName()[key]
	if !ok {
		return KeyInfo{}, false
	}
	return KeyInfo{Key: key, Type: f.typeName(), Values: slices.Clone(enumTypes[f.typ]), Range: f.rng.String(),
		Doc: keyDocs[key]}, true
}
