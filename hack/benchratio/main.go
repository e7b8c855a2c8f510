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

// Command benchratio summarizes the benchmarks of pkg/token: it reads `go test -bench` output on
// stdin (any number of -count runs), takes the median of cpu-ns/op, ns/op, B/op and allocs/op per
// benchmark, and prints a markdown table of the medians and the ratios that docs/benchmarks.md
// discusses. It exits 1 with a message on stderr if a benchmark it needs is missing.
//
//	cd pkg && go test ./token/ -run '^$' -bench . -benchmem -count 5 | (cd .. && go run ./hack/benchratio)
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// signed and sealed are pkg/token's two codecs, the benchmarks every ratio is about.
const signed, sealed = "Signed", "Sealed"

// required are the benchmarks of pkg/token the ratios need, in the order of the table; optional ones
// are used when present.
var (
	required = []string{signed, "FloorSigned", sealed, "FloorSealed", "FloorAEAD",
		"JOSE", "JOSEJWS", "JOSEJWE", "GolangJWT"}
	optional = []string{"Tink"}
)

// The ratios, numerator over denominator, of cpu-ns/op: the codecs over their floors, then over
// every alternative.
var (
	floorRatios  = [][2]string{{signed, "FloorSigned"}, {sealed, "FloorSealed"}, {sealed, "FloorAEAD"}}
	alternatives = []string{"JOSE", "JOSEJWS", "JOSEJWE", "GolangJWT", "Tink"}
)

// units are the metrics of the table, in its order; cpu-ns/op is the one the ratios compare.
var units = []string{"cpu-ns/op", "ns/op", "B/op", "allocs/op"}

const cpuUnit = "cpu-ns/op"

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
}

// bench is every run of one benchmark: the values of each unit, one per run.
type bench struct {
	name   string
	values map[string][]float64
}

// procSuffix is the -GOMAXPROCS suffix go test appends to a benchmark's name.
var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output and returns its benchmarks in the order they first appear, and
// the "cpu:" line of the header, if any.
func parse(r io.Reader) ([]*bench, string, error) {
	var (
		order []*bench
		byKey = map[string]*bench{}
		cpu   string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, "cpu: "); ok {
			cpu = strings.TrimSpace(c)
			continue
		}
		f := strings.Fields(line)
		// BenchmarkName-N  iterations  value unit  value unit ...
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue // e.g. a benchmark's own log line
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		b := byKey[name]
		if b == nil {
			b = &bench{name: name, values: map[string][]float64{}}
			byKey[name] = b
			order = append(order, b)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, "", fmt.Errorf("%s: value %q of %s is not a number", f[0], f[i], f[i+1])
			}
			b.values[f[i+1]] = append(b.values[f[i+1]], v)
		}
	}
	return order, cpu, sc.Err()
}

// median of values, which must not be empty.
func median(values []float64) float64 {
	s := slices.Sorted(slices.Values(values))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// format writes a metric as the table shows it: whole numbers from 100 on, three significant
// digits below.
func format(v float64) string {
	if v >= 100 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func run(r io.Reader, out io.Writer) error {
	benches, cpu, err := parse(r)
	if err != nil {
		return err
	}
	byName := map[string]*bench{}
	for _, b := range benches {
		byName[b.name] = b
	}
	var missing []string
	for _, n := range required {
		if b := byName[n]; b == nil || len(b.values[cpuUnit]) == 0 {
			missing = append(missing, "Benchmark"+n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing benchmark(s) or their %s: %s (is stdin the output of "+
			"`go test ./token/ -run '^$' -bench . -benchmem` in pkg, and did it pass?)",
			cpuUnit, strings.Join(missing, ", "))
	}
	if len(byName[signed].values["B/op"]) == 0 {
		return errors.New("no B/op in the input: run go test with -benchmem")
	}

	// Written out whole at the end: a failed write is one error, and no half table is printed.
	w := &strings.Builder{}
	// The table: the known benchmarks in their order, then any others as they came.
	var rows []*bench
	for _, n := range append(slices.Clone(required), optional...) {
		if b := byName[n]; b != nil {
			rows = append(rows, b)
		}
	}
	for _, b := range benches {
		if !slices.Contains(rows, b) {
			rows = append(rows, b)
		}
	}
	med := map[string]map[string]float64{}
	runs := 0
	fmt.Fprintf(w, "| Benchmark | runs | %s |\n", strings.Join(units, " | "))
	fmt.Fprintf(w, "|---|---:|%s\n", strings.Repeat("---:|", len(units)))
	for _, b := range rows {
		med[b.name] = map[string]float64{}
		n := len(b.values[cpuUnit])
		runs = max(runs, n)
		cells := make([]string, len(units))
		for i, u := range units {
			if vs := b.values[u]; len(vs) > 0 {
				med[b.name][u] = median(vs)
				cells[i] = format(med[b.name][u])
			} else {
				cells[i] = "–"
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", b.name, n, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	if cpu != "" {
		fmt.Fprintf(w, "Medians of %d runs on %s.\n\n", runs, cpu)
	} else {
		fmt.Fprintf(w, "Medians of %d runs.\n\n", runs)
	}

	ratio := func(num, den string) string {
		d := med[den][cpuUnit]
		if d == 0 {
			return "–"
		}
		return strconv.FormatFloat(med[num][cpuUnit]/d, 'f', 2, 64) + "x"
	}
	fmt.Fprintf(w, "| Ratio of %s | value |\n|---|---:|\n", cpuUnit)
	for _, r := range floorRatios {
		fmt.Fprintf(w, "| %s / %s | %s |\n", r[0], r[1], ratio(r[0], r[1]))
	}
	fmt.Fprintln(w)

	var alts []string
	for _, a := range alternatives {
		if _, ok := med[a]; ok {
			alts = append(alts, a)
		}
	}
	fmt.Fprintf(w, "| %s over | %s |\n", cpuUnit, strings.Join(alts, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(alts)))
	for _, c := range []string{signed, sealed} {
		cells := make([]string, len(alts))
		for i, a := range alts {
			cells[i] = ratio(c, a)
		}
		fmt.Fprintf(w, "| %s | %s |\n", c, strings.Join(cells, " | "))
	}
	_, err = io.WriteString(out, w.String())
	return err
}
