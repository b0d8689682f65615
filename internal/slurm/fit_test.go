package slurm

import (
	"testing"
)

// TestParseNodes: sinfo's node lines become nodes with the default partition marked, memory in MB and
// gres counted by name and by name:type, socket bindings with commas included; a malformed line is an
// error.
func TestParseNodes(t *testing.T) {
	body := "n1|debug*|2|1991|(null)\nn1|long|2|1991|(null)\n\ng1|gpu|64|515000|gpu:a100:4(S:0,1),gpu:v100:2(S:1),mps:1K\n"
	nodes, err := ParseNodes(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3: %+v", len(nodes), nodes)
	}
	if n := nodes[0]; n.Name != "n1" || n.Partition != "debug" || !n.Default || n.CPUs != 2 || n.MemMB != 1991 || len(n.Gres) != 0 {
		t.Errorf("first node %+v", n)
	}
	if n := nodes[1]; n.Partition != "long" || n.Default {
		t.Errorf("second node %+v", n)
	}
	g := nodes[2].Gres
	if g["gpu"] != 6 || g["gpu:a100"] != 4 || g["gpu:v100"] != 2 || g["mps"] != 1024 {
		t.Errorf("gres of g1: %v, want gpu 6, gpu:a100 4, gpu:v100 2, mps 1024", g)
	}
	if _, err := ParseNodes("n1|debug|two|1991|(null)\n"); err == nil {
		t.Error("a CPU count that is not a number parsed")
	}
	if _, err := ParseNodes("n1 debug 2 1991\n"); err == nil {
		t.Error("a line in another format parsed")
	}
}

// TestParseMem: Slurm's memory notation in megabytes: no suffix is MB, K rounds up, G and T are powers
// of 1024.
func TestParseMem(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "4096M": 4096, "16G": 16384, "16g": 16384, "1T": 1048576, "1K": 1, "2048K": 2, "2049K": 3} {
		got, err := ParseMem(in)
		if err != nil || got != want {
			t.Errorf("ParseMem(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "1.5G", "-1G", "16GB"} {
		if _, err := ParseMem(bad); err == nil {
			t.Errorf("ParseMem(%q) accepted", bad)
		}
	}
}

// TestFit: a request fits when one node of its partitions (the default one when it names none) offers
// all of it; otherwise the first field no node offers alone is named with the largest node's offer.
func TestFit(t *testing.T) {
	nodes, err := ParseNodes("s1|debug*|2|2000|(null)\ns2|debug*|4|1000|(null)\n" +
		"b1|big|64|256000|(null)\ng1|gpu|16|64000|gpu:a100:4\ng2|gpu|8|512000|gpu:2\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req                   Request
		field, offer, suggest string
	}{
		{Request{CPUs: 4}, "", "", ""},                                // s2 of the default partition
		{Request{CPUs: 8}, "cpus", "4 CPUs", "4"},                     // the default partition is debug
		{Request{CPUs: 2, Mem: "2000M"}, "", "", ""},                  // s1
		{Request{CPUs: 4, Mem: "2000"}, "together", "", ""},           // s2 has the CPUs, s1 the memory
		{Request{CPUs: 1, Mem: "2G"}, "mem", "2000M memory", "2000M"}, // 2048 MB > 2000
		{Request{CPUs: 8, Partition: "debug,big"}, "", "", ""},        // b1
		{Request{CPUs: 128, Partition: "debug,big"}, "cpus", "64 CPUs", "64"},
		{Request{CPUs: 1, Gres: "gpu:1"}, "gres", "no gpu", ""},
		{Request{CPUs: 8, Gres: "gpu:4", Partition: "gpu"}, "", "", ""},      // g1
		{Request{CPUs: 8, Gres: "gpu:a100:4", Partition: "gpu"}, "", "", ""}, // g1 by type
		{Request{CPUs: 1, Gres: "gpu:8", Partition: "gpu"}, "gres", "gpu:4", "gpu:4"},
		{Request{CPUs: 1, Gres: "gpu:v100:1", Partition: "gpu"}, "gres", "no gpu:v100", ""},
		{Request{CPUs: 16, Mem: "100G", Partition: "gpu"}, "together", "", ""}, // g1 CPUs, g2 memory
		{Request{CPUs: 1, Partition: "nosuch"}, "partition", "big, debug, gpu", ""},
	} {
		sf, err := Fit(nodes, tc.req)
		if err != nil {
			t.Fatalf("%+v: %v", tc.req, err)
		}
		switch {
		case tc.field == "" && sf != nil:
			t.Errorf("%+v: %+v, want a fit", tc.req, sf)
		case tc.field == "":
		case sf == nil:
			t.Errorf("%+v fits, want a shortfall of %s", tc.req, tc.field)
		case tc.field == "together" && sf.Field != "":
			t.Errorf("%+v: field %q, want none (each fits alone)", tc.req, sf.Field)
		case tc.field != "together" && (sf.Field != tc.field || sf.Offer != tc.offer || sf.Suggest != tc.suggest):
			t.Errorf("%+v: %+v, want field %s offer %q suggest %q", tc.req, sf, tc.field, tc.offer, tc.suggest)
		}
	}
	// No default partition and none named: sbatch judges.
	if sf, err := Fit(nodes[2:], Request{CPUs: 1000}); sf != nil || err != nil {
		t.Errorf("no default partition: %+v, %v; want no judgement", sf, err)
	}
}

// TestNeverClears: holds, failed dependencies, partition configuration and per-job limits never clear;
// waits for nodes, other jobs or aggregate limits do.
func TestNeverClears(t *testing.T) {
	for _, r := range []string{"JobHeldUser", "JobHeldAdmin", "DependencyNeverSatisfied", "PartitionConfig",
		"PartitionTimeLimit", "BadConstraints", "InvalidAccount", "InvalidQOS", "AssocMaxCpuPerJobLimit",
		"QOSMaxGRESPerJob", "QOSMaxWallDurationPerJobLimit"} {
		if !NeverClears(r) {
			t.Errorf("%s may clear, want never", r)
		}
	}
	for _, r := range []string{"Resources", "Priority", "Dependency", "ReqNodeNotAvail", "PartitionDown",
		"PartitionNodeLimit", "AssocGrpCpuLimit", "QOSMaxJobsPerUserLimit", "QOSMaxCpuPerUserLimit", "BeginTime", "None"} {
		if NeverClears(r) {
			t.Errorf("%s never clears, want may", r)
		}
	}
	for r, want := range map[string]bool{"Resources": true, "Priority": true, "ReqNodeNotAvail, UnavailableNodes:n1": true, "JobHeldUser": false, "Dependency": false} {
		if MayWaitForNodes(r) != want {
			t.Errorf("MayWaitForNodes(%q) = %v", r, !want)
		}
	}
}
