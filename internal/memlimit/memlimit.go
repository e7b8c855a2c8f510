/*
Copyright 2026 The mrtr-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package memlimit gives the Go runtime a soft memory limit below the container's: the garbage
// collector then works harder as the heap nears the limit, instead of letting it grow to twice
// what is live (GOGC=100) and the kernel kill the manager. With thousands of keyrings the heap is
// mostly the caches' objects, live for good, so twice that is most of what a manager's memory
// limit must cover; with the soft limit it need cover little more than what is live.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
)

// Fraction of the container's limit given to the Go runtime: the rest is for what the runtime does
// not count (the binary, thread stacks outside the heap, the kernel's page cache of the process).
const Fraction = 0.9

// cgroupFiles hold the memory limit of the process's cgroup: v2 first, then v1.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Set gives the runtime Fraction of the container's memory limit as its soft limit, unless
// GOMEMLIMIT already set one (the runtime has read it) or there is no limit. It returns the limit
// set, 0 when none.
func Set() (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	for _, f := range cgroupFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		limit, ok, err := parse(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if !ok {
			return 0, nil
		}
		soft := int64(float64(limit) * Fraction)
		debug.SetMemoryLimit(soft)
		return soft, nil
	}
	return 0, nil
}

// parse reads a cgroup memory limit: a number of bytes, or "max" (v2) or a value past any real
// machine's memory (v1's unlimited) for none.
func parse(s string) (limit int64, ok bool, err error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false, fmt.Errorf("memory limit %q is not a positive number of bytes", s)
	}
	if n >= 1<<62 { // cgroup v1 writes 9223372036854771712 for no limit
		return 0, false, nil
	}
	return n, true, nil
}

// GCPercent is the GOGC the manager runs with under a soft memory limit, where GOGC is not set:
// twice Go's default. Each collection then comes after twice the allocation, which halves the
// collector's share of the manager's CPU in a rotation (11.8 % to 4 % at 1,000 keyrings,
// docs/benchmarks.md), while the soft limit, not GOGC, bounds the heap as it nears the container's
// limit. Without a limit GOGC stays 100, so that a manager outside a container does not hold
// three times its live heap.
const GCPercent = 200

// MaxHeapFloor caps the heap floor (HeapFloor): with the binary's 30 MB and the runtime's own
// memory, a manager at the floor stays within the chart's memory request (128Mi), and one with a
// large limit and few keyrings does not hold hundreds of megabytes because it may.
const MaxHeapFloor = 96 << 20

// HeapFloor is the heap below which the collector does not run, under a soft memory limit of
// limit bytes: a quarter of it, at most MaxHeapFloor. With few keyrings the live heap is small
// (about 20 MB at 1,000), so GCPercent alone collected every 40 MB or so of allocation, and the
// collector took 7 % of the manager's CPU in a rotation of them all (3.6 % with the floor,
// docs/benchmarks.md). With 3,000 keyrings or more, three times the live heap is above the floor,
// and GCPercent paces the collector as before.
func HeapFloor(limit int64) uint64 { return uint64(min(limit/4, MaxHeapFloor)) }

// gcPercentFor is the GOGC that starts the next collection once the heap reaches floor bytes, after
// one that left live bytes, and never less than GCPercent.
func gcPercentFor(live, floor uint64) int {
	if live == 0 || live >= floor {
		return GCPercent
	}
	return max(int(floor*100/live)-100, GCPercent)
}

// TuneGC sets GCPercent when the runtime has a soft memory limit (Set's or GOMEMLIMIT's) and GOGC
// does not say otherwise, and from then on, after each collection, raises it so that the next
// one comes no sooner than at HeapFloor of heap. It returns the GOGC in effect afterwards, and a
// function that stops the raising (for tests: a manager keeps it for its life).
func TuneGC() (gogc int, stop func()) {
	current := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	if os.Getenv("GOGC") != "" || limit == math.MaxInt64 {
		debug.SetGCPercent(current)
		return current, func() {}
	}
	debug.SetGCPercent(GCPercent)
	var stopped atomic.Bool
	afterEachGC(HeapFloor(limit), &stopped)
	return GCPercent, func() { stopped.Store(true) }
}

// afterEachGC sets GOGC from the live heap after each collection (gcPercentFor), until stopped. A
// sentinel object that nothing references is freed by the next collection, and its cleanup,
// which runs after that collection, arms the next one.
func afterEachGC(floor uint64, stopped *atomic.Bool) {
	type sentinel struct{ _ *byte } // with a pointer: never batched with other small objects
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		runtime.AddCleanup(new(sentinel), func(struct{}) {
			if stopped.Load() {
				return
			}
			metrics.Read(live)
			debug.SetGCPercent(gcPercentFor(live[0].Value.Uint64(), floor))
			arm()
		}, struct{}{})
	}
	arm()
}
