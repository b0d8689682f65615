package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// duplicateKey returns the first object key that appears twice in one object of the JSON text data
// (at any depth), or "" when every object's keys are distinct. Go's decoder keeps the last of two equal
// keys and DuckDB's JSON functions the first, so a reply with one (a program's dict whose items() lies)
// could tell the two readers of a record different things: Go refuses it instead. A malformed text
// gives an error.
func duplicateKey(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// each open container: nil for an array, the keys seen so far for an object
	var stack []map[string]bool
	expectKey := false // the next string token in the innermost object is a key
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return "", io.ErrUnexpectedEOF
			}
			return "", nil
		}
		if err != nil {
			return "", err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = true
				continue
			case '[':
				stack = append(stack, nil)
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if expectKey {
				keys := stack[len(stack)-1]
				if keys[v] {
					return v, nil
				}
				keys[v] = true
				expectKey = false
				continue
			}
		}
		// after a value inside an object, the next token is a key again
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// checkUniqueKeys is duplicateKey as a protocol error.
func checkUniqueKeys(line []byte) error {
	key, err := duplicateKey(line)
	if err != nil {
		return &Error{Kind: KindProtocol, Msg: "env sent a malformed reply"}
	}
	if key != "" {
		return &Error{Kind: KindProtocol, Msg: fmt.Sprintf("env sent a reply with the key %q twice in one object (a record must not say two things)", key)}
	}
	return nil
}
