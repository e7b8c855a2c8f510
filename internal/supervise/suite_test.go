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

package supervise

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv/testsuite"
)

// The managers run against a real kube-apiserver and etcd (envtest), reached through a TCP proxy
// that the tests cut and restore: to the manager that is an outage of the API server, while the
// tests themselves keep reaching it directly.

var (
	ctx       context.Context
	cfg       *rest.Config
	k8sClient client.Client
)

func TestSupervise(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Supervise Suite")
}

var _ = BeforeSuite(func() {
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	env := testsuite.Start(ctx, testenv.Options{CRDs: true})
	cfg, k8sClient = env.Config, env.Client
})

// proxy forwards TCP connections from a loopback port to the API server, and can cut them all
// (Down) and take new ones again on the same port (Up).
type proxy struct {
	addr, target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]struct{}
}

func newProxy(target string) *proxy {
	GinkgoHelper()
	p := &proxy{target: target, conns: map[net.Conn]struct{}{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p.addr = l.Addr().String()
	p.serve(l)
	DeferCleanup(p.Down)
	return p
}

// Up listens again on the proxy's port.
func (p *proxy) Up() {
	GinkgoHelper()
	var l net.Listener
	Eventually(func() (err error) { l, err = net.Listen("tcp", p.addr); return err }).Should(Succeed())
	p.serve(l)
}

// Down stops listening and closes every connection: requests in flight fail, new ones are refused.
func (p *proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		_ = p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return // closed by Down
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				GinkgoWriter.Printf("proxy: %v\n", err)
				_ = in.Close()
				continue
			}
			if !p.track(in, out) {
				continue
			}
			go p.pipe(in, out)
			go p.pipe(out, in)
		}
	}()
}

// track records a connection pair, or closes it when the proxy went down meanwhile.
func (p *proxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l == nil {
		_ = in.Close()
		_ = out.Close()
		return false
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	return true
}

func (p *proxy) pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		GinkgoWriter.Printf("proxy: %v\n", err)
	}
	_ = dst.Close()
	_ = src.Close()
}
