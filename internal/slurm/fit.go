package slurm

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// Node is one node of one partition as sinfo reports it (a node in two partitions is two Nodes).
type Node struct {
	// Name is the node's name; Partition the partition's, without sinfo's "*".
	Name, Partition string
	// Default reports that Partition is the cluster's default partition.
	Default bool
	// CPUs is the node's CPU count; MemMB its configured memory in megabytes (RealMemory).
	CPUs  int
	MemMB int64
	// Gres counts the node's generic resources by name ("gpu") and by name and type ("gpu:a100").
	Gres map[string]int64
}

// sinfoFormat is the sinfo --format of one line per node and partition: name, partition (with "*" for
// the default), CPUs, memory in MB, gres. The fields have no width, so sinfo truncates none.
const sinfoFormat = "%N|%P|%c|%m|%G"

// Nodes returns every node of every partition, hidden ones included, as sinfo reports them.
func Nodes(ctx context.Context) ([]Node, error) {
	body, err := exec.CommandContext(ctx, "sinfo", "--all", "--noheader", "--Node", "--format="+sinfoFormat).Output()
	if err != nil {
		return nil, fmt.Errorf("slurm: sinfo: %v%s", err, stderrOf(err))
	}
	return ParseNodes(string(body))
}

// ParseNodes parses sinfo's lines in sinfoFormat ("n1|debug*|4|15872|gpu:a100:2(S:0)"); blank lines are
// skipped and any other malformed line is an error naming it.
func ParseNodes(body string) ([]Node, error) {
	var out []Node
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 5 {
			return nil, fmt.Errorf("slurm: sinfo line %q: want 5 fields", line)
		}
		n := Node{Name: f[0], Partition: strings.TrimSuffix(f[1], "*"), Default: strings.HasSuffix(f[1], "*")}
		var err error
		if n.CPUs, err = strconv.Atoi(strings.TrimSuffix(f[2], "+")); err != nil {
			return nil, fmt.Errorf("slurm: sinfo line %q: CPUs %q", line, f[2])
		}
		if n.MemMB, err = strconv.ParseInt(strings.TrimSuffix(f[3], "+"), 10, 64); err != nil {
			return nil, fmt.Errorf("slurm: sinfo line %q: memory %q", line, f[3])
		}
		if n.Gres, err = ParseGres(f[4]); err != nil {
			return nil, fmt.Errorf("slurm: sinfo line %q: %v", line, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseMem returns a memory amount in Slurm's notation (--mem: an integer with an optional K, M, G or T
// suffix, megabytes without one) in megabytes, rounded up.
func ParseMem(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult, div := int64(1), int64(1)
	if s != "" {
		switch strings.ToUpper(s[len(s)-1:]) {
		case "K":
			div = 1024
		case "M":
		case "G":
			mult = 1024
		case "T":
			mult = 1024 * 1024
		default:
			s += "M"
		}
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("memory %q: want an integer with an optional K, M, G or T suffix", s)
	}
	return (v*mult + div - 1) / div, nil
}

// ParseGres returns generic resources in Slurm's notation ("gpu:a100:4(S:0-1),mps:100", "gpu:2",
// "gpu", "(null)") as counts by name and by name:type; a count without a number is 1, and K, M, G
// suffixes multiply by powers of 1024. A name without a type counts under the name alone.
func ParseGres(s string) (map[string]int64, error) {
	items, err := gresItems(s)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, it := range items {
		out[it.name] += it.count
		if it.kind != "" {
			out[it.name+":"+it.kind] += it.count
		}
	}
	return out, nil
}

// parseGresRequest returns a --gres request as the counts a node must have: by name:type for a typed
// item, by name otherwise.
func parseGresRequest(s string) (map[string]int64, error) {
	items, err := gresItems(s)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, it := range items {
		key := it.name
		if it.kind != "" {
			key += ":" + it.kind
		}
		out[key] += it.count
	}
	return out, nil
}

type gresItem struct {
	name, kind string
	count      int64
}

// gresItems splits generic resources in Slurm's notation into name, type and count.
func gresItems(s string) ([]gresItem, error) {
	// Drop the socket bindings "(S:0,1)" (and "(null)") first: they hold commas.
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	var out []gresItem
	for _, item := range strings.Split(b.String(), ",") {
		item = strings.TrimPrefix(strings.TrimSpace(item), "gres/")
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		it := gresItem{name: parts[0], count: 1}
		last := parts[len(parts)-1]
		if len(parts) > 1 && last != "" && last[0] >= '0' && last[0] <= '9' {
			n, err := parseCount(last)
			if err != nil {
				return nil, fmt.Errorf("gres %q: count %q", s, last)
			}
			it.count, parts = n, parts[:len(parts)-1]
		}
		if len(parts) > 1 {
			it.kind = parts[1]
		}
		out = append(out, it)
	}
	return out, nil
}

// parseCount returns a gres count, with K, M and G multiplying by powers of 1024.
func parseCount(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1024
	case "M":
		mult = 1024 * 1024
	case "G":
		mult = 1024 * 1024 * 1024
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v * mult, err
}

// Request is what one job asks of one node: --cpus-per-task, --mem, --gres and --partition in Slurm's
// notation ("" leaves the cluster's default).
type Request struct {
	CPUs                 int
	Mem, Gres, Partition string
}

// Shortfall says how a request exceeds every node of its partitions.
type Shortfall struct {
	// Field is the request's field that no node offers even alone: "cpus", "mem" or "gres" (the first
	// of them, in that order), "partition" when a named partition does not exist, or "" when each
	// field fits some node but no node offers them all at once.
	Field string
	// Partitions are the partitions searched (the default one for a request naming none).
	Partitions []string
	// Offer is what the largest node offers of Field ("2 CPUs", "15872M memory", "gpu:4", "no gpu"),
	// or the partitions that exist for "partition"; Suggest the value that would fit ("" when none).
	Offer, Suggest string
}

// Fit compares req with the nodes of its partitions (comma-separated; none: the default partition) and
// returns nil when some node could hold it, or what no node offers. A request naming no partition on a
// cluster with no default partition is not judged (nil): sbatch says what is missing. Nodes in any
// state count: a node that is down may come back.
func Fit(nodes []Node, req Request) (*Shortfall, error) {
	var parts []string
	if req.Partition != "" {
		parts = strings.Split(req.Partition, ",")
	} else {
		for _, n := range nodes {
			if n.Default {
				parts = []string{n.Partition}
				break
			}
		}
		if parts == nil {
			return nil, nil
		}
	}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Partition] = true
	}
	for _, p := range parts {
		if !known[p] {
			var names []string
			for k := range known {
				names = append(names, k)
			}
			sort.Strings(names)
			return &Shortfall{Field: "partition", Partitions: parts, Offer: strings.Join(names, ", ")}, nil
		}
	}
	var memMB int64
	if req.Mem != "" {
		var err error
		if memMB, err = ParseMem(req.Mem); err != nil {
			return nil, err
		}
	}
	gres, err := parseGresRequest(req.Gres)
	if err != nil {
		return nil, err
	}
	var in []Node
	for _, n := range nodes {
		for _, p := range parts {
			if n.Partition == p {
				in = append(in, n)
			}
		}
	}
	cpusFit := func(n Node) bool { return n.CPUs >= req.CPUs }
	memFit := func(n Node) bool { return memMB == 0 || n.MemMB >= memMB }
	gresFit := func(n Node) bool {
		for k, v := range gres {
			if n.Gres[k] < v {
				return false
			}
		}
		return true
	}
	some := func(ok func(Node) bool) bool {
		for _, n := range in {
			if ok(n) {
				return true
			}
		}
		return false
	}
	if some(func(n Node) bool { return cpusFit(n) && memFit(n) && gresFit(n) }) {
		return nil, nil
	}
	sf := &Shortfall{Partitions: parts}
	switch {
	case !some(cpusFit):
		most := 0
		for _, n := range in {
			most = max(most, n.CPUs)
		}
		sf.Field, sf.Offer = "cpus", fmt.Sprintf("%d CPUs", most)
		if most > 0 {
			sf.Suggest = strconv.Itoa(most)
		}
	case !some(memFit):
		var most int64
		for _, n := range in {
			most = max(most, n.MemMB)
		}
		sf.Field, sf.Offer = "mem", fmt.Sprintf("%dM memory", most)
		if most > 0 {
			sf.Suggest = fmt.Sprintf("%dM", most)
		}
	case !some(gresFit):
		sf.Field = "gres"
		var names []string
		for k := range gres {
			names = append(names, k)
		}
		sort.Strings(names)
		var offers []string
		for _, k := range names {
			var most int64
			for _, n := range in {
				most = max(most, n.Gres[k])
			}
			if most == 0 {
				offers = append(offers, "no "+k)
			} else {
				offers = append(offers, fmt.Sprintf("%s:%d", k, most))
				if sf.Suggest == "" && len(names) == 1 {
					sf.Suggest = fmt.Sprintf("%s:%d", k, most)
				}
			}
		}
		sf.Offer = strings.Join(offers, ", ")
	}
	return sf, nil
}

// NeverClears reports whether a pending job's reason (squeue %r) keeps it pending until the job or
// the cluster is changed by hand: a hold, a dependency that failed, a request outside its partition's
// configuration or time limit, constraints no node has, an invalid account or QOS, or a per-job limit
// of its association or QOS. Reasons that clear as other jobs end or nodes return (Resources,
// Priority, Dependency, ReqNodeNotAvail, PartitionNodeLimit, PartitionDown, the aggregate limits) are
// not among them.
func NeverClears(reason string) bool {
	switch reason {
	case "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin", "PartitionConfig", "PartitionTimeLimit",
		"BadConstraints", "InvalidAccount", "InvalidQOS":
		return true
	}
	return (strings.HasPrefix(reason, "AssocMax") || strings.HasPrefix(reason, "QOSMax")) && strings.Contains(reason, "PerJob")
}

// MayWaitForNodes reports whether a pending reason only says the job waits for nodes to free up
// (Resources, Priority, ReqNodeNotAvail, PartitionNodeLimit): it clears unless no node could ever
// hold the request (Fit).
func MayWaitForNodes(reason string) bool {
	switch reason {
	case "Resources", "Priority", "ReqNodeNotAvail", "PartitionNodeLimit", "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions":
		return true
	}
	return strings.HasPrefix(reason, "ReqNodeNotAvail")
}
