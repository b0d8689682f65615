package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrWorkersMemory is returned by Pool.Fit when the workers a step needs do not fit in the machine's memory.
var ErrWorkersMemory = errors.New("sandbox: not enough memory for the workers")

// MemoryError says how many workers were asked for and how many fit; it wraps ErrWorkersMemory.
type MemoryError struct {
	// Want is the number of workers asked for; Fits is how many fit beside what runs now.
	Want, Fits int
	// Need is the estimated memory of Want workers, Available what the machine has, bytes.
	Need, Available int64
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("sandbox: %d workers need about %d MiB, the machine has %d MiB available: %d fit",
		e.Want, e.Need>>20, e.Available>>20, e.Fits)
}

// Unwrap makes errors.Is(err, ErrWorkersMemory) true.
func (e *MemoryError) Unwrap() error { return ErrWorkersMemory }

// workerMemory is the estimated memory of one worker hosting a program that runs instances env
// instances at once: Options.WorkerMemory plus instances · Options.InstanceMemory.
func (o *Options) workerMemory(instances int) int64 {
	return o.WorkerMemory + int64(max(instances, 0))*o.InstanceMemory
}

// Workers returns the most workers alive at once now: Options.Workers, or what Fit raised it to.
func (p *Pool) Workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limit
}

// Fit makes room for programs loaded at once, each running instances env instances at once. With
// Options.FollowStep it raises the most workers alive to programs (it never lowers it), after checking
// the estimated memory of the workers it adds (Options.WorkerMemory + instances·Options.InstanceMemory
// each) against the memory the machine has available now (MemAvailable, and the cgroup's limit less its
// usage where one is set); a *MemoryError (ErrWorkersMemory) says how many fit, and the limit is left as it
// was. Without FollowStep it does nothing: the programs then wait for a worker (waves of
// Options.Workers). It returns the limit in force.
func (p *Pool) Fit(programs, instances int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.opts.FollowStep || programs <= p.limit {
		return p.limit, nil
	}
	each := p.opts.workerMemory(instances)
	added := int64(programs-p.limit) * each
	if avail, ok := availableMemory(); ok && added > avail {
		fits := p.limit + int(avail/max(each, 1))
		return p.limit, &MemoryError{Want: programs, Fits: fits, Need: int64(programs) * each, Available: avail + int64(p.limit)*each}
	}
	p.limit = programs
	p.broadcast()
	return p.limit, nil
}

// availableMemory returns the memory the machine can give new processes now, bytes: MemAvailable of
// /proc/meminfo, lowered to the cgroup v2 limit less its usage when the process runs under one. ok is
// false when neither can be read.
func availableMemory() (int64, bool) {
	avail, ok := memAvailable()
	if limit, err := readInt("/sys/fs/cgroup/memory.max"); err == nil {
		if used, err := readInt("/sys/fs/cgroup/memory.current"); err == nil {
			if free := max(limit-used, 0); !ok || free < avail {
				avail, ok = free, true
			}
		}
	}
	return avail, ok
}

// memAvailable reads MemAvailable from /proc/meminfo, bytes.
func memAvailable() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// readInt reads a file holding one integer ("max" and other text is an error).
func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
}
