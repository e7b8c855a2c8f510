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
	"runtime/debug"
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

func TestTuneGCOnlyUnderASoftLimitAndWithoutGOGC(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	debug.SetMemoryLimit(math.MaxInt64)
	if got := TuneGC(); got != 100 || debug.SetGCPercent(100) != 100 {
		t.Errorf("without a soft limit: TuneGC() = %d, want GOGC left at 100", got)
	}

	debug.SetMemoryLimit(256 << 20)
	if got := TuneGC(); got != GCPercent || debug.SetGCPercent(100) != GCPercent {
		t.Errorf("under a soft limit: TuneGC() = %d, want %d", got, GCPercent)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	if got := TuneGC(); got != 50 || debug.SetGCPercent(100) != 50 {
		t.Errorf("with GOGC=50 set: TuneGC() = %d, want 50 kept", got)
	}
}
