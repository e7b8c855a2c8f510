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

package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]struct {
		limit int64
		ok    bool
		err   bool
	}{
		"268435456\n":         {limit: 268435456, ok: true},
		"max\n":               {},
		"9223372036854771712": {}, // cgroup v1's unlimited
		"":                    {err: true},
		"-1":                  {err: true},
		"256Mi":               {err: true},
	} {
		limit, ok, err := parse(in)
		if limit != want.limit || ok != want.ok || (err != nil) != want.err {
			t.Errorf("parse(%q) = %d, %v, %v; want %d, %v, error %v", in, limit, ok, err, want.limit, want.ok, want.err)
		}
	}
}

func TestSetTakesTheContainersLimitUnlessGOMEMLIMITIsSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore whatever the test binary had
	dir := t.TempDir()
	file := filepath.Join(dir, "memory.max")
	defer func(files []string) { cgroupFiles = files }(cgroupFiles)
	cgroupFiles = []string{filepath.Join(dir, "absent"), file}

	t.Setenv("GOMEMLIMIT", "")
	if err := os.WriteFile(file, []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Set()
	limit := float64(268435456)
	if want := int64(limit * Fraction); got != want || err != nil || debug.SetMemoryLimit(-1) != want {
		t.Errorf("Set() = %d, %v; want %d, the runtime's limit too", got, err, want)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if err := os.WriteFile(file, []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Set(); got != 0 || err != nil || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("without a limit: Set() = %d, %v, and the runtime's limit changed", got, err)
	}

	if err := os.WriteFile(file, []byte("lots"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(); err == nil {
		t.Error("an unreadable limit was not reported")
	}

	t.Setenv("GOMEMLIMIT", "100MiB")
	if err := os.WriteFile(file, []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Set(); got != 0 || err != nil || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: Set() = %d, %v, and the runtime's limit changed", got, err)
	}
}

// gogc is the runtime's GOGC, read without setting it (a collection's cleanup may set it meanwhile).
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestTuneGCOnlyUnderASoftLimitAndWithoutGOGC(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	debug.SetMemoryLimit(math.MaxInt64)
	if got, stop := TuneGC(); got != 100 || gogc() != 100 {
		t.Errorf("without a soft limit: TuneGC() = %d, want GOGC left at 100", got)
	} else {
		stop()
	}

	// A limit whose floor is below the live heap: GCPercent, before and after a collection.
	debug.SetMemoryLimit(1 << 20)
	got, stop := TuneGC()
	if got != GCPercent || gogc() != GCPercent {
		t.Errorf("under a soft limit: TuneGC() = %d, want %d", got, GCPercent)
	}
	runtime.GC()
	runtime.GC()
	if g := gogc(); g != GCPercent {
		t.Errorf("under a soft limit below the live heap: GOGC %d after a collection, want %d", g, GCPercent)
	}
	stop()

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	if got, _ := TuneGC(); got != 50 || gogc() != 50 {
		t.Errorf("with GOGC=50 set: TuneGC() = %d, want 50 kept", got)
	}
}

func TestTuneGCKeepsTheHeapFloorAfterEachCollection(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")

	debug.SetMemoryLimit(2 << 30) // floor MaxHeapFloor, far above a test's live heap
	_, stop := TuneGC()
	defer stop()
	// The cleanup that raises GOGC runs after a collection, on a goroutine of its own: collect until
	// it has (a bound, not a time: a broken tuner fails here instead of hanging).
	for i := 0; gogc() <= GCPercent; i++ {
		if i == 1000 {
			t.Fatalf("GOGC still %d after %d collections with a heap floor of %d", gogc(), i, MaxHeapFloor)
		}
		runtime.GC()
		runtime.Gosched()
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if g, want := gogc(), gcPercentFor(live[0].Value.Uint64(), MaxHeapFloor); g < want/2 || g > want*2 {
		t.Errorf("GOGC %d after collections with %d live bytes, want about %d (a heap goal of %d)", g, live[0].Value.Uint64(), want, MaxHeapFloor)
	}

	// Stopped, a collection leaves GOGC as it is.
	stop()
	debug.SetGCPercent(GCPercent)
	runtime.GC()
	runtime.GC()
	if g := gogc(); g != GCPercent {
		t.Errorf("after stop: GOGC %d, want %d left alone", g, GCPercent)
	}
}

func TestHeapFloorAndGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		limit int64
		want  uint64
	}{{460 << 20, MaxHeapFloor}, {256 << 20, 64 << 20}, {100 << 20, 25 << 20}, {2 << 30, MaxHeapFloor}} {
		if got := HeapFloor(c.limit); got != c.want {
			t.Errorf("HeapFloor(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
	const floor = 120 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, GCPercent},         // nothing measured yet
		{floor / 10, 900},      // collect at 10x the live heap: at the floor
		{floor / 3, GCPercent}, // 3x live is the floor: GCPercent does it
		{floor / 2, GCPercent}, // never below GCPercent
		{floor * 2, GCPercent}, // above the floor
	} {
		if got := gcPercentFor(c.live, floor); got != c.want {
			t.Errorf("gcPercentFor(%d, %d) = %d, want %d", c.live, floor, got, c.want)
		}
	}
}
