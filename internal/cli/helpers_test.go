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

package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// update rewrites the golden files instead of comparing with them:
// go test ./internal/cli -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// now is the clock of every test: ages and deadlines in the outputs are relative to it.
var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// result is what one run of the plugin printed and returned.
type result struct {
	out, errOut string
	err         error
}

// run runs the plugin's root command with args, as kubectl would, and the options given (the
// streams are the test's).
func run(t *testing.T, o Options, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	o.Streams = genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	if o.Now == nil {
		o.Now = func() time.Time { return now }
	}
	root := NewRootCommand(o)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

// golden compares got with testdata/name.golden, or rewrites the file under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (if the change is meant, rerun with -update):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// squash collapses each line's runs of spaces (the tables' alignment) to one, so that a test can
// look for a row whatever the widths of the other rows.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
