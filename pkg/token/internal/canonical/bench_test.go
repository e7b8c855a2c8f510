//go:build unix

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

package canonical

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The request of pkg/token's benchmarks: a tools/call retry whose objects, like most clients' JSON,
// are not in canonical order, and a typical server state.
var (
	benchParams = []byte(`{"_meta":{"protocolVersion":"2026-07-28","progressToken":"p-7"},` +
		`"name":"create_invoice","arguments":{"customer":{"id":"cus_8f3a2b","email":"ada@example.com",` +
		`"address":{"city":"Zürich","zip":"8001"}},"lines":[{"sku":"WID-42","qty":3,"unitPrice":19.99},` +
		`{"sku":"GAD-7","qty":1,"unitPrice":249.5}],"currency":"EUR","dueInDays":30,` +
		`"notes":"Deliver to the loading dock"},"inputResponses":{"approver":{"action":"accept",` +
		`"content":{"name":"grace"}}}}`)
	benchState = []byte(`{"step":2,"draftId":"inv_01J8ZQ4W7XK3M9TB2R5N6P","collected":` +
		`{"customer":"cus_8f3a2b","approver":null,"total":{"value":"309.47","currency":"EUR"}},` +
		`"pending":["approval","po_number"],"attempt":1,"startedAt":"2026-07-28T10:15:00Z"}`)
)

func BenchmarkAppendParams(b *testing.B) { benchParamsOf(b, benchParams) }

func BenchmarkAppendState(b *testing.B) { benchAppend(b, benchState, Append) }

// What a Signed Open does with the state of a payload sealed in Go: the canonical text, checked and
// copied by the fast path.
func BenchmarkAppendFirstWinsCanonicalState(b *testing.B) {
	canon, err := Append(nil, benchState)
	if err != nil {
		b.Fatal(err)
	}
	benchAppend(b, canon, AppendFirstWins)
}

// The fixture's principal, a string, which each Seal and each Open writes in canonical form.
func BenchmarkAppendPrincipal(b *testing.B) {
	benchAppend(b, []byte(`"user:ada@example.com"`), Append)
}

// adversarial builds params of about size bytes nested depth deep, each level an object with a
// filler string and the next level. In order the names come sorted ("a" holds the next level, "b"
// the filler); out of order every level needs sorting, which an encoder that sorts what it already
// wrote pays for once per level: quadratic in the depth.
func adversarial(size, depth int, inOrder bool) []byte {
	filler := `"` + strings.Repeat("x", size/depth) + `"`
	var b bytes.Buffer
	b.WriteString(`{"name":"t","arguments":`)
	for range depth {
		if inOrder {
			b.WriteString(`{"a":`)
		} else {
			b.WriteString(`{"b":` + filler + `,"a":`)
		}
	}
	b.WriteString(`0`)
	for range depth {
		if inOrder {
			b.WriteString(`,"b":` + filler + `}`)
		} else {
			b.WriteString(`}`)
		}
	}
	b.WriteString(`}`)
	return b.Bytes()
}

// wide is params whose arguments are an object of n members, sorted or in reverse. Sorted, the
// params are canonical text.
func wide(n int, inOrder bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"arguments":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k := i
		if !inOrder {
			k = n - 1 - i
		}
		fmt.Fprintf(&b, `"locationprefix%06d":%d`, k, k) // one long prefix for all: no shortcut
	}
	b.WriteString(`},"name":"t"}`)
	return b.Bytes()
}

// Out of order must cost at most 2x in order, however deep or wide (3 MiB nested 990 deep is inside
// the SDK's limits of 4 MiB and 1000 levels).
func BenchmarkAppendParamsDeepInOrder(b *testing.B) { benchParamsOf(b, adversarial(3<<20, 990, true)) }
func BenchmarkAppendParamsDeepOutOfOrder(b *testing.B) {
	benchParamsOf(b, adversarial(3<<20, 990, false))
}
func BenchmarkAppendParamsWideInOrder(b *testing.B)    { benchParamsOf(b, wide(100000, true)) }
func BenchmarkAppendParamsWideOutOfOrder(b *testing.B) { benchParamsOf(b, wide(100000, false)) }

func benchParamsOf(b *testing.B, params []byte) {
	benchAppend(b, params, func(dst, src []byte) ([]byte, error) {
		return AppendParams(dst, src, "_meta", "requestState", "inputResponses")
	})
}

// benchAppend runs f on src, reusing its output buffer, and reports allocations and cpu-ns/op.
func benchAppend(b *testing.B, src []byte, f func(dst, src []byte) ([]byte, error)) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	var dst []byte
	n, start := 0, processCPU(b)
	defer func() { b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op") }()
	for ; b.Loop(); n++ {
		var err error
		if dst, err = f(dst[:0], src); err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU is the user and system CPU time the process has used: on a shared machine it swings far
// less than wall time (pkg/token's benchmarks report the same metric).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
