//go:build unix

package canonical

import (
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

func BenchmarkAppendObjectParams(b *testing.B) {
	b.SetBytes(int64(len(benchParams)))
	b.ReportAllocs()
	var dst []byte
	n, start := 0, processCPU(b)
	defer func() { b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op") }()
	for ; b.Loop(); n++ {
		var err error
		if dst, err = AppendParams(dst[:0], benchParams, "_meta", "requestState", "inputResponses"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendState(b *testing.B) {
	b.SetBytes(int64(len(benchState)))
	b.ReportAllocs()
	var dst []byte
	n, start := 0, processCPU(b)
	defer func() { b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op") }()
	for ; b.Loop(); n++ {
		var err error
		if dst, err = Append(dst[:0], benchState); err != nil {
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
