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

package check

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// streamStdout names the consumer's standard output, where the probe protocol's lines are.
const streamStdout = "stdout"

// line is one line the consumer wrote.
type line struct {
	at     int    // event number
	stream string // "stdout" or "stderr"
	text   string
}

// probe is a parsed "loaded" or "serving" line of the probe protocol (docs/consumers.md,
// "Conformance"): the fingerprint and the token-ttl, "none" when none is declared.
type probe struct {
	at          int
	fingerprint string
	ttl         string
}

// consumer is the process under test.
type consumer struct {
	rec   *recorder
	cmd   *exec.Cmd
	stdin io.WriteCloser
	echo  io.Writer

	mu      sync.Mutex
	raw     map[string][]byte // each stream's bytes as written, for the leak scan: lines lose \r
	lines   []line
	loaded  []probe
	serving []probe
	sealed  []sealed
	exited  bool
	exitErr error
	done    chan struct{}
	readers sync.WaitGroup
}

// sealed is a "sealed <token>" line of the probe protocol.
type sealed struct {
	at    int
	token string
}

// maxRaw bounds what is kept of each stream for the leak scan.
const maxRaw = 16 << 20

func startConsumer(rec *recorder, argv, env []string, echo io.Writer) (*consumer, error) {
	c := &consumer{rec: rec, echo: echo, done: make(chan struct{}), raw: map[string][]byte{}}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Env = env
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so stop reaches what it starts too
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %q: %w", argv, err)
	}
	c.readers.Add(2)
	go c.read(streamStdout, stdout)
	go c.read("stderr", stderr)
	go func() {
		c.readers.Wait() // Wait closes the pipes: read them to the end first
		err := c.cmd.Wait()
		c.rec.event(func() {
			c.mu.Lock()
			c.exited, c.exitErr = true, err
			c.mu.Unlock()
		})
		close(c.done)
	}()
	return c, nil
}

// rawWriter keeps a stream's bytes, up to maxRaw.
type rawWriter struct {
	c      *consumer
	stream string
}

func (w rawWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if room := maxRaw - len(w.c.raw[w.stream]); room > 0 {
		w.c.raw[w.stream] = append(w.c.raw[w.stream], p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *consumer) read(stream string, r io.Reader) {
	defer c.readers.Done()
	sc := bufio.NewScanner(io.TeeReader(r, rawWriter{c, stream}))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		if c.echo != nil {
			_, _ = fmt.Fprintf(c.echo, "  consumer %s: %s\n", stream, text)
		}
		c.rec.event(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			at := c.rec.n
			c.lines = append(c.lines, line{at: at, stream: stream, text: text})
			if stream != streamStdout {
				return
			}
			f := strings.Fields(text)
			if len(f) == 2 && f[0] == "sealed" {
				c.sealed = append(c.sealed, sealed{at: at, token: f[1]})
			}
			if len(f) == 3 && (f[0] == "loaded" || f[0] == "serving") {
				p := probe{at: at, fingerprint: f[1], ttl: f[2]}
				if f[0] == "loaded" {
					c.loaded = append(c.loaded, p)
				} else {
					c.serving = append(c.serving, p)
				}
			}
		})
	}
}

// ask writes one line to the consumer's stdin.
func (c *consumer) ask(q string) { _, _ = io.WriteString(c.stdin, q+"\n") }

func (c *consumer) snapshot() (lines []line, loaded, serving []probe, exited bool, exitErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]line(nil), c.lines...), append([]probe(nil), c.loaded...), append([]probe(nil), c.serving...), c.exited, c.exitErr
}

// output returns what the consumer wrote on each stream, and its "sealed" lines.
func (c *consumer) output() (raw map[string][]byte, seals []sealed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	raw = map[string][]byte{}
	for k, v := range c.raw {
		raw[k] = append([]byte(nil), v...)
	}
	return raw, append([]sealed(nil), c.sealed...)
}

// stop ends the consumer's process group: SIGTERM, then SIGKILL after grace.
func (c *consumer) stop(grace time.Duration) {
	pgid := c.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
}
