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

package main

import (
	"bytes"
	"strings"
	"testing"
)

// sample is two -count runs of every benchmark (three of Signed, to test an odd median), as go test
// prints them, with the header and trailer lines benchratio must skip.
const sample = `goos: linux
goarch: amd64
pkg: github.com/mrtr-dev/mrtr-operator/pkg/token
cpu: AMD EPYC 9R45
BenchmarkSigned-2        	  100000	      7000 ns/op	      6000 cpu-ns/op	     720 B/op	       2 allocs/op
BenchmarkSigned-2        	  100000	      9000 ns/op	      7000 cpu-ns/op	     720 B/op	       2 allocs/op
BenchmarkSigned-2        	  100000	      8000 ns/op	      9000 cpu-ns/op	     720 B/op	       2 allocs/op
BenchmarkSealed-2        	  100000	      6000 ns/op	      5000 cpu-ns/op	     752 B/op	       2 allocs/op
BenchmarkSealed-2        	  100000	      6200 ns/op	      7000 cpu-ns/op	     752 B/op	       2 allocs/op
BenchmarkFloorSigned-2   	  500000	      2400 ns/op	      2000 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkFloorSigned-2   	  500000	      2500 ns/op	      2000 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkFloorSealed-2   	  500000	      1500 ns/op	      1500 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkFloorSealed-2   	  500000	      1600 ns/op	      1500 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkFloorAEAD-2     	  900000	      1200 ns/op	      1000 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkFloorAEAD-2     	  900000	      1200 ns/op	      1000 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkJOSE-2          	   10000	     90000 ns/op	     60000 cpu-ns/op	   36214 B/op	     326 allocs/op
BenchmarkJOSE-2          	   10000	     80000 ns/op	     60000 cpu-ns/op	   36210 B/op	     326 allocs/op
BenchmarkJOSEJWS-2       	   20000	     30000 ns/op	     30000 cpu-ns/op	   12000 B/op	     120 allocs/op
BenchmarkJOSEJWS-2       	   20000	     30000 ns/op	     30000 cpu-ns/op	   12000 B/op	     120 allocs/op
BenchmarkJOSEJWE-2       	   20000	     40000 ns/op	     50000 cpu-ns/op	   20000 B/op	     150 allocs/op
BenchmarkJOSEJWE-2       	   20000	     40000 ns/op	     50000 cpu-ns/op	   20000 B/op	     150 allocs/op
BenchmarkGolangJWT-2     	   20000	     20000 ns/op	     24000 cpu-ns/op	    9000 B/op	     100 allocs/op
BenchmarkGolangJWT-2     	   20000	     20000 ns/op	     24000 cpu-ns/op	    9000 B/op	     100 allocs/op
BenchmarkTink-2          	   30000	     15000 ns/op	     12000 cpu-ns/op	    7000 B/op	      80 allocs/op
BenchmarkTink-2          	   30000	     15000 ns/op	     12000 cpu-ns/op	    7000 B/op	      80 allocs/op
PASS
ok  	github.com/mrtr-dev/mrtr-operator/pkg/token	42.000s
`

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader(sample), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| Benchmark | runs | cpu-ns/op | ns/op | B/op | allocs/op |\n",
		"| Signed | 3 | 7000 | 8000 | 720 | 2 |\n", // odd count: the middle value
		"| Sealed | 2 | 6000 | 6100 | 752 | 2 |\n", // even count: the mean of the middle two
		"| JOSE | 2 | 60000 | 85000 | 36212 | 326 |\n",
		"| Tink | 2 | 12000 | 15000 | 7000 | 80 |\n",
		"Medians of 3 runs on AMD EPYC 9R45.",
		"| Signed / FloorSigned | 3.50x |\n",
		"| Sealed / FloorSealed | 4.00x |\n",
		"| Sealed / FloorAEAD | 6.00x |\n",
		"| cpu-ns/op over | JOSE | JOSEJWS | JOSEJWE | GolangJWT | Tink |\n",
		"| Signed | 0.12x | 0.23x | 0.14x | 0.29x | 0.58x |\n",
		"| Sealed | 0.10x | 0.20x | 0.12x | 0.25x | 0.50x |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; it is:\n%s", want, got)
		}
	}
	// The known benchmarks come in a fixed order, whatever the order of the input.
	if i, j := strings.Index(got, "| FloorSigned |"), strings.Index(got, "| Sealed |"); i < 0 || j < 0 || i > j {
		t.Errorf("FloorSigned should come right after Signed:\n%s", got)
	}
}

func TestRunWithoutTink(t *testing.T) {
	var in []string
	for l := range strings.SplitSeq(sample, "\n") {
		if !strings.HasPrefix(l, "BenchmarkTink") {
			in = append(in, l)
		}
	}
	var out bytes.Buffer
	if err := run(strings.NewReader(strings.Join(in, "\n")), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "Tink") ||
		!strings.Contains(got, "| cpu-ns/op over | JOSE | JOSEJWS | JOSEJWE | GolangJWT |\n") {
		t.Errorf("without BenchmarkTink, Tink should be left out:\n%s", got)
	}
}

func TestRunMissing(t *testing.T) {
	var in []string
	for l := range strings.SplitSeq(sample, "\n") {
		if !strings.HasPrefix(l, "BenchmarkFloorAEAD") && !strings.HasPrefix(l, "BenchmarkGolangJWT") {
			in = append(in, l)
		}
	}
	err := run(strings.NewReader(strings.Join(in, "\n")), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "BenchmarkFloorAEAD, BenchmarkGolangJWT") {
		t.Fatalf("run without FloorAEAD and GolangJWT = %v, want an error naming both", err)
	}
}

func TestRunNoCPUMetric(t *testing.T) {
	// Output of benchmarks without the cpu-ns/op metric (another package, or an old bench_test.go).
	in := strings.ReplaceAll(sample, "cpu-ns/op", "MB/s")
	if err := run(strings.NewReader(in), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "cpu-ns/op") {
		t.Fatalf("run without cpu-ns/op = %v, want an error", err)
	}
}
