package stage

import (
	"strings"

	"github.com/spadekit/spade/internal/lake"
)

// Command writes the spade command line that runs words against run of lk, as a message suggests it: it
// names the lake and the run, so it works as written from any directory and without SPADE_LAKE or
// SPADE_RUN ("spade --lake /data/lake --run r1 gate --step 0").
func Command(lk *lake.Lake, run string, words ...string) string {
	line := []string{"spade", "--lake", ShellWord(lk.URI()), "--run", ShellWord(run)}
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
