package config

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// presetTableDoc is the markdown file that holds the preset table: the table whose header row is
// "| key | games | tools | ... |".
const presetTableDoc = "../../docs/configuration.md"

// TestPresetTableMatchesPresets: every row of the documented preset table names keys, and each setting
// column's values are those keys' values in every preset of that setting (config.Preset(name).Get(key)).
//
// The table's cells: a key cell lists backquoted keys, comma-separated, a key without a dot taking the
// group of the key before it (`generate.hint_mode`, `hint_temperature`); a value cell lists one value per
// key, comma-separated, each optionally backquoted and followed by remarks in parentheses, a remark
// "8B: V" giving the value of that size's presets; a value that is only a remark is the empty string;
// "same" repeats the games cell.
func TestPresetTableMatchesPresets(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	doc, err := os.ReadFile(presetTableDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := presetTable(string(doc))
	if len(rows) < 20 {
		t.Fatalf("%s: found %d rows of the preset table (header \"| key | games | tools |\")", presetTableDoc, len(rows))
	}
	sizes := map[string]string{"4B": "qwen3-4b", "8B": "qwen3-8b", "30B": "qwen3-30b-a3b"}
	checked := 0
	for _, row := range rows {
		keys := tableKeys(row[0])
		for col, setting := range []string{"games", "tools"} {
			cell := row[1+col]
			if cell == "same" {
				cell = row[1]
			}
			values := splitTop(cell)
			if len(values) != len(keys) {
				t.Errorf("row %q: the %s cell %q has %d values for %d keys", row[0], setting, cell, len(values), len(keys))
				continue
			}
			for i, key := range keys {
				value, bySize := tableValue(values[i])
				for size, prefix := range sizes {
					want, ok := bySize[size]
					if !ok {
						want = value
					}
					c, err := Preset(prefix + "-" + setting)
					if err != nil {
						t.Fatal(err)
					}
					got, err := c.Get(key)
					if err != nil {
						t.Errorf("row %q: %v", row[0], err)
						continue
					}
					if !sameValue(got, want) {
						t.Errorf("row %q: preset %s: %s = %q, the table says %q", row[0], c.Preset, key, got, want)
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no value of the preset table was checked")
	}
}

// TestFixedPresetTableMatchesPresets: the fixed-environment presets' table of docs/configuration.md
// (header "| key | fixed-gpt55 | fixed-rlve |", cells read as in the preset table) gives each listed key's
// value in the fixed presets of every size, and every key it does not list has the value of the games
// preset of the same size: the table is the whole difference.
func TestFixedPresetTableMatchesPresets(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	doc, err := os.ReadFile(presetTableDoc)
	if err != nil {
		t.Fatal(err)
	}
	columns := []string{FixedGPT55, FixedRLVE}
	rows := tableWithHeader(string(doc), "key", columns[0], columns[1])
	if len(rows) == 0 {
		t.Fatalf("%s has no table with the header \"| key | %s | %s |\"", presetTableDoc, columns[0], columns[1])
	}
	sizes := map[string]string{"4B": "qwen3-4b", "8B": "qwen3-8b", "30B": "qwen3-30b-a3b"}
	listed := map[string]bool{}
	for _, row := range rows {
		keys := tableKeys(row[0])
		for col, fixed := range columns {
			values := splitTop(row[1+col])
			if len(values) != len(keys) {
				t.Errorf("row %q: the %s cell %q has %d values for %d keys", row[0], fixed, row[1+col], len(values), len(keys))
				continue
			}
			for i, key := range keys {
				listed[key] = true
				value, bySize := tableValue(values[i])
				for size, prefix := range sizes {
					want, ok := bySize[size]
					if !ok {
						want = value
					}
					c, err := Preset(prefix + "-" + fixed)
					if err != nil {
						t.Fatal(err)
					}
					if got, err := c.Get(key); err != nil || !sameValue(got, want) {
						t.Errorf("row %q: preset %s: %s = %q (%v), the table says %q", row[0], c.Preset, key, got, err, want)
					}
				}
			}
		}
	}
	for _, prefix := range sizes {
		games, _ := Preset(prefix + "-games")
		for _, fixed := range columns {
			c, _ := Preset(prefix + "-" + fixed)
			for _, key := range Keys() {
				if key == "preset" || listed[key] {
					continue
				}
				got, _ := c.Get(key)
				if want, _ := games.Get(key); got != want {
					t.Errorf("preset %s: %s = %q differs from %s-games (%q) but the fixed presets' table does not list it", c.Preset, key, got, prefix, want)
				}
			}
		}
	}
}

// presetTable returns the body rows of the preset table, each as its trimmed cells.
func presetTable(doc string) [][]string {
	return tableWithHeader(doc, "key", "games", "tools")
}

// tableWithHeader returns the body rows of the first markdown table whose header row starts with the
// given cells, each row as its trimmed cells.
func tableWithHeader(doc string, header ...string) [][]string {
	var rows [][]string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !in && len(cells) >= len(header) && slices.Equal(cells[:len(header)], header):
			in = true
		case in && strings.HasPrefix(cells[0], "---"):
		case in && len(cells) >= 3:
			rows = append(rows, cells)
		}
	}
	return rows
}

// tableKeys reads a key cell: `group.a`, `b` is group.a and group.b.
func tableKeys(cell string) []string {
	var keys []string
	group := ""
	for _, part := range splitTop(cell) {
		key := strings.Trim(part, "`")
		if i := strings.LastIndex(key, "."); i >= 0 {
			group = key[:i]
		} else {
			key = group + "." + key
		}
		keys = append(keys, key)
	}
	return keys
}

// tableValue reads one value of a value cell: the text before its remarks, unquoted, and the values the
// "NB: V" remarks give sizes.
func tableValue(part string) (string, map[string]string) {
	bySize := map[string]string{}
	value := part
	if i := strings.Index(part, "("); i >= 0 {
		value = part[:i]
		for _, remark := range strings.Split(part[i:], "(")[1:] {
			remark, _, _ = strings.Cut(remark, ")")
			if size, v, ok := strings.Cut(remark, ": "); ok && strings.HasSuffix(size, "B") && !strings.Contains(size, " ") {
				bySize[size] = strings.Trim(strings.TrimSpace(v), "`")
			}
		}
	}
	return strings.Trim(strings.TrimSpace(value), "`"), bySize
}

// splitTop splits a cell at the commas outside parentheses and backquotes.
func splitTop(cell string) []string {
	var parts []string
	depth, quoted, start := 0, false, 0
	for i, r := range cell {
		switch {
		case r == '`':
			quoted = !quoted
		case quoted:
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			parts = append(parts, strings.TrimSpace(cell[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(cell[start:]))
}

// sameValue compares a Get value with the table's text, numbers by value (1e-6 is 1e-06).
func sameValue(got, want string) bool {
	if got == want {
		return true
	}
	x, errX := strconv.ParseFloat(got, 64)
	y, errY := strconv.ParseFloat(want, 64)
	return errX == nil && errY == nil && x == y
}
