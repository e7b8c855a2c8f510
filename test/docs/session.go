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

package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// session is one reader's terminal: the environment and the working folder that each block leaves
// to the next.
type session struct {
	env []string
	dir string
}

// outcome is what one block did.
type outcome struct {
	code   int    // exit status
	output string // stdout and stderr, interleaved
	took   time.Duration
}

// prelude runs before every block: bash's strict mode (a failing command, an unset variable or a
// failing stage of a pipe stops the block), every assignment exported, so that the next block sees
// it, and an EXIT trap that hands the environment (env -0: NUL-separated, values may hold
// newlines) to fd 3 and the working folder to fd 4. The trap runs also when set -e stops the
// block, so a block expected to fail still leaves what it set before.
const prelude = "set -euo pipefail\nset -a\ntrap 'env -0 >&3; pwd >&4' EXIT\n"

// run runs b's code with bash in the session and returns how it went; the session then holds the
// environment and the folder the block left. An error means bash could not run it, or it was still
// running after timeout and was killed, with the whole process group it started.
func (s *session) run(ctx context.Context, b Block, timeout time.Duration) (outcome, error) {
	state, err := os.MkdirTemp("", "mrtr-docs-block-")
	if err != nil {
		return outcome{}, err
	}
	defer func() { _ = os.RemoveAll(state) }()
	envFile, err := os.Create(filepath.Join(state, "env"))
	if err != nil {
		return outcome{}, err
	}
	defer func() { _ = envFile.Close() }()
	dirFile, err := os.Create(filepath.Join(state, "dir"))
	if err != nil {
		return outcome{}, err
	}
	defer func() { _ = dirFile.Close() }()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+b.Code, "bash")
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.ExtraFiles = []*os.File{envFile, dirFile}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A process group of its own, killed whole on timeout: kubectl wait and the like with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	began := time.Now()
	err = cmd.Run()
	o := outcome{output: out.String(), took: time.Since(began).Round(time.Millisecond)}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return o, fmt.Errorf("still running after %v: killed", timeout)
	case errors.As(err, &exitErr):
		o.code = exitErr.ExitCode()
	case err != nil:
		return o, fmt.Errorf("run bash: %w", err)
	}
	if env, err := os.ReadFile(envFile.Name()); err == nil && len(env) > 0 {
		s.env = carried(env)
	}
	if dir, err := os.ReadFile(dirFile.Name()); err == nil && len(dir) > 0 {
		s.dir = strings.TrimSuffix(string(dir), "\n")
	}
	return o, nil
}

// carried is the environment env -0 printed, without what bash sets for itself.
func carried(env []byte) []string {
	out := make([]string, 0, bytes.Count(env, []byte{0}))
	for kv := range strings.SplitSeq(strings.TrimSuffix(string(env), "\x00"), "\x00") {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "_", "PWD", "OLDPWD", "SHLVL":
			continue
		}
		out = append(out, kv)
	}
	return out
}
