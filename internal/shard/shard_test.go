package shard

import (
	"fmt"
	"testing"
)

func TestOfIsStableAndPartitions(t *testing.T) {
	counts := make([]int, 3)
	for i := 0; i < 3000; i++ {
		id := fmt.Sprintf("env-%d", i)
		owners := 0
		for s := 0; s < 3; s++ {
			if (Spec{Index: s, Count: 3}).Owns(id) {
				owners++
				counts[s]++
			}
		}
		if owners != 1 {
			t.Fatalf("%s owned by %d shards, want exactly 1", id, owners)
		}
	}
	for s, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("shard %d got %d of 3000 keys: hash badly unbalanced", s, c)
		}
	}
	if Of("anything", 1) != 0 || Of("anything", 0) != 0 {
		t.Errorf("one shard must own everything")
	}
}

func TestHashGolden(t *testing.T) {
	// Pins the hash (changing it would move envs of stored runs between shards): SHA-256 of "a" starts
	// ca978112, and 0xca978112 = 3398926610, which is 2 modulo 7.
	if got := Of("a", 7); got != 2 {
		t.Fatalf("Of(a, 7) = %d", got)
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []Spec{{0, 1}, {0, 0}, {2, 3}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
	for _, s := range []Spec{{3, 3}, {-1, 2}, {1, 0}, {0, -2}} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: want error", s)
		}
	}
}
