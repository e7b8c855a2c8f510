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

package harness

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// Counts are the outcomes of the round trips a Load ran. A round trip is one MRTR call: round 1
// answered with an input request and a sealed requestState, the client's elicitation handler, and the
// retry that opens the state and completes.
type Counts struct {
	// Completed round trips returned the tool's answer.
	Completed uint64
	// Rejected round trips were answered -32602 "Invalid or expired requestState": the replica that
	// got the retry could not open the state another one sealed.
	Rejected uint64
	// Failed round trips ended any other way (transport errors, tool errors).
	Failed uint64
	// CrossReplica counts completed round trips whose state was opened by another replica than the
	// one that sealed it: the balancer is not sticky.
	CrossReplica uint64
}

func (c Counts) String() string {
	return fmt.Sprintf("%d completed (%d across replicas), %d rejected, %d failed", c.Completed, c.CrossReplica, c.Rejected, c.Failed)
}

// Load runs MRTR round trips continuously against an MCP endpoint with the official Go SDK client,
// whose multi round-trip middleware answers the server's elicitation and retries.
type Load struct {
	// URL is the MCP endpoint, e.g. the balancer's URL + "/mcp".
	URL string
	// Workers is the number of concurrent clients, each with its own session; 0 means 4.
	Workers int
	// OnCompleted, if set, is told of each completed round trip which replica sealed its state and
	// which opened it (on the worker's goroutine).
	OnCompleted func(sealedBy, openedBy string)

	completed, rejected, failed, cross atomic.Uint64

	mu     sync.Mutex
	errors []string // the last few failures, for a test to print
}

const keepErrors = 20

// Counts returns the outcomes so far.
func (l *Load) Counts() Counts {
	return Counts{Completed: l.completed.Load(), Rejected: l.rejected.Load(), Failed: l.failed.Load(), CrossReplica: l.cross.Load()}
}

// Errors returns the last failures and rejections, newest last.
func (l *Load) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

// Run runs round trips until ctx is done and returns when every worker has stopped.
func (l *Load) Run(ctx context.Context) {
	workers := l.Workers
	if workers == 0 {
		workers = 4
	}
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 30 * time.Second}
	defer httpClient.CloseIdleConnections()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { l.worker(ctx, w, httpClient) })
	}
	wg.Wait()
}

// Start runs Run in the background until ctx is done or stop is called; stop returns once every
// worker has stopped, and may be called more than once.
func (l *Load) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	return sync.OnceFunc(func() { cancel(); <-done })
}

func (l *Load) worker(ctx context.Context, w int, httpClient *http.Client) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mrtr-e2e-load", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
	})
	var cs *mcp.ClientSession
	defer func() {
		if cs != nil {
			_ = cs.Close()
		}
	}()
	for i := 0; ctx.Err() == nil; i++ {
		if cs == nil {
			var err error
			cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: l.URL, HTTPClient: httpClient, DisableStandaloneSSE: true, MaxRetries: -1,
			}, nil)
			if err != nil {
				if ctx.Err() == nil {
					l.fail(fmt.Errorf("worker %d: connect: %w", w, err))
					sleep(ctx, 100*time.Millisecond)
				}
				continue
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: "get_weather", Arguments: map[string]any{"location": fmt.Sprintf("city-%d-%d", w, i)},
		})
		switch {
		case ctx.Err() != nil:
			return // an interrupted call is not a result
		case mcpstate.IsInvalidRequestState(err):
			l.rejected.Add(1)
			l.note(fmt.Sprintf("worker %d: rejected: %v", w, err))
		case err != nil:
			l.fail(fmt.Errorf("worker %d: %w", w, err))
			_ = cs.Close() // start over with a fresh session
			cs = nil
		case res.IsError || len(res.Content) == 0:
			l.fail(fmt.Errorf("worker %d: tool error: %s", w, text(res)))
		default:
			l.completed.Add(1)
			m, _ := res.StructuredContent.(map[string]any)
			sealedBy, _ := m["sealedBy"].(string)
			openedBy, _ := m["openedBy"].(string)
			if sealedBy != openedBy {
				l.cross.Add(1)
			}
			if l.OnCompleted != nil {
				l.OnCompleted(sealedBy, openedBy)
			}
		}
	}
}

func (l *Load) fail(err error) {
	l.failed.Add(1)
	l.note(err.Error())
}

func (l *Load) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, time.Now().Format("15:04:05.000 ")+s)
	if len(l.errors) > keepErrors {
		l.errors = l.errors[len(l.errors)-keepErrors:]
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
