//go:build ignore

// gen_keydocs writes keydocs_gen.go, the documentation of every key, from the field comments of this
// package (`go generate ./internal/config/`).
package main

import (
	"log"
	"os"

	"github.com/spadekit/spade/internal/config/internal/keydocgen"
)

func main() {
	src, err := keydocgen.Source(".")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(keydocgen.Output, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
