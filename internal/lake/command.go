package lake

import "strings"

// Command writes the spade command line that runs words against this lake, for a message that suggests
// one: it names the lake (--lake with its URI), so it works as written from any directory and without
// SPADE_LAKE ("spade --lake /data/lake corpus import --name default FILE"). Words that a shell would
// split or expand are quoted.
func (l *Lake) Command(words ...string) string {
	line := []string{"spade", "--lake", ShellWord(l.URI())}
	for _, w := range words {
		line = append(line, ShellWord(w))
	}
	return strings.Join(line, " ")
}

// ShellWord quotes w for a POSIX shell unless it holds only letters, digits and -_./:=@,+%.
func ShellWord(w string) string {
	const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%"
	if w != "" && strings.Trim(w, plain) == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
