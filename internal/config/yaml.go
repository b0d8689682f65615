package config

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAML returns the config as YAML, nested like JSON, keys in struct order (a child run's parent last,
// as in run.json). LoadFile of the text gives back an equal config, the parent aside: it is not a key.
func (c *Config) YAML() []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	_ = enc.Encode(yamlNode(reflect.ValueOf(c).Elem())) // strings, numbers and booleans always encode
	_ = enc.Close()
	return buf.Bytes()
}

// yamlNode is a struct as a mapping of its json names (nil omitempty pointers left out), or a scalar as
// the YAML library writes it (quoted where the text would read as another type, as "32" or "yes").
func yamlNode(v reflect.Value) *yaml.Node {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		n := &yaml.Node{}
		_ = n.Encode(v.Interface())
		return n
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < v.NumField(); i++ {
		name, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if v.Field(i).Kind() == reflect.Pointer && v.Field(i).IsNil() && strings.Contains(opts, "omitempty") {
			continue
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, yamlNode(v.Field(i)))
	}
	return m
}

// MergeYAML applies a YAML document to c with Merge's rules: a mapping of keys, nested mappings or dotted
// keys or both, values type-checked strictly by their YAML type. A quoted "4" is a string, not an
// integer; true and false are the only booleans (YAML 1.1's yes, no, on and off are strings, so
// `paired_seeds: yes` is an error and `model: yes` the text "yes"); a number or a boolean where a string
// is wanted is an error (quote it); null, lists, anchors' merge keys (<<) and a second document are
// errors. Errors give the line. On an error c is unchanged.
func (c *Config) MergeYAML(doc []byte) error {
	entries, err := flattenYAML(doc)
	if err != nil {
		return err
	}
	return c.apply(entries)
}

// flattenYAML reads a YAML mapping into entries, in document order, nested mappings as dotted keys. An
// empty document has no entries.
func flattenYAML(doc []byte) ([]entry, error) {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var root yaml.Node
	if err := dec.Decode(&root); errors.Is(err, io.EOF) {
		return nil, nil
	} else if err != nil {
		return nil, invalidf("config: invalid YAML: %v", err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return nil, invalidf("config: invalid YAML: more than one document (a config is one mapping of keys)")
	}
	body := &root
	if body.Kind == yaml.DocumentNode && len(body.Content) == 1 {
		body = body.Content[0]
	}
	if body.Kind != yaml.MappingNode {
		return nil, invalidf("config: line %d: not a YAML mapping of keys", body.Line)
	}
	var out []entry
	if err := yamlMapping(body, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// yamlMapping appends the entries of a mapping node below prefix.
func yamlMapping(m *yaml.Node, prefix string, out *[]entry) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			return invalidf("config: line %d: a key is a plain name (YAML merge keys and complex keys are not read)", k.Line)
		}
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		e := entry{key: key, line: v.Line}
		switch v.Kind {
		case yaml.MappingNode:
			n := len(*out)
			if err := yamlMapping(v, key, out); err != nil {
				return err
			}
			if len(*out) > n {
				continue
			}
			e.kind = kindObject
		case yaml.SequenceNode:
			e.kind = kindList
		default:
			e = yamlScalar(v, e)
		}
		*out = append(*out, e)
	}
	return nil
}

// yamlScalar sets an entry's kind and text from a scalar node's resolved tag: integers in base 10 and
// numbers as strconv formats them, so Set reads them as written.
func yamlScalar(v *yaml.Node, e entry) entry {
	e.text, e.tag = v.Value, v.ShortTag()
	switch e.tag {
	case "!!str":
		e.kind = kindString
	case "!!bool":
		e.kind = kindBool
		var b bool
		if v.Decode(&b) == nil {
			e.text = strconv.FormatBool(b)
		}
	case "!!null":
		e.kind = kindNull
	case "!!int":
		e.kind = kindInt
		var n int64
		var x float64
		if v.Decode(&n) == nil {
			e.text = strconv.FormatInt(n, 10)
		} else if v.Decode(&x) == nil {
			e.kind, e.text = kindFloat, strconv.FormatFloat(x, 'g', -1, 64)
		}
	case "!!float":
		e.kind = kindFloat
		var x float64
		if v.Decode(&x) == nil {
			e.text = strconv.FormatFloat(x, 'g', -1, 64) // .inf and .nan become +Inf and NaN: Set refuses them
		}
	default:
		e.kind = kindOther
	}
	return e
}
