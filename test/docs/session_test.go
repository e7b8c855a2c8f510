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
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSession checks the runner the documents rely on: blocks share variables and the working
// folder like one terminal, and fail the way bash's strict mode makes them fail.
func TestSession(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := &session{env: []string{"PATH=" + os.Getenv("PATH"), "GIVEN=by the test"}, dir: dir}
	steps := []struct {
		code       string
		wantCode   int
		wantOutput string
	}{
		{code: "NAME=weather\nmkdir sub\ncd sub\n"},
		{code: "echo \"$NAME $GIVEN in $(basename \"$PWD\")\"\n", wantOutput: "weather by the test in sub\n"},
		{code: "LEFT=before\nfalse\nLEFT=after\n", wantCode: 1},
		{code: "echo \"$LEFT\"\n", wantOutput: "before\n"}, // set before the failure, carried
		{code: "false | true\n", wantCode: 1},              // pipefail
		{code: "echo \"$NOT_SET\"\n", wantCode: 1, wantOutput: "NOT_SET: unbound variable"},
		{code: "exit 3\n", wantCode: 3},
		{code: "printf 'line 1\\nline 2' > multi; V=$(cat multi)\n"},
		{code: "test \"$V\" = \"$(printf 'line 1\\nline 2')\"\n"}, // a value with a newline survives
	}
	for i, st := range steps {
		o, err := s.run(ctx, Block{File: "doc.md", Line: i + 1, Lang: "sh", Code: st.code}, time.Minute)
		if err != nil {
			t.Fatalf("step %d (%q): %v\n%s", i, st.code, err, o.output)
		}
		if o.code != st.wantCode || !strings.Contains(o.output, st.wantOutput) {
			t.Errorf("step %d (%q): exit %d, output %q; want exit %d, output containing %q",
				i, st.code, o.code, o.output, st.wantCode, st.wantOutput)
		}
	}
	if want := filepath.Join(dir, "sub"); s.dir != want {
		t.Errorf("the session's folder is %s, want %s", s.dir, want)
	}
}

// TestSessionTimeout checks that a block still running at its timeout is killed with what it
// started, and reported.
func TestSessionTimeout(t *testing.T) {
	s := &session{env: []string{"PATH=" + os.Getenv("PATH")}, dir: t.TempDir()}
	began := time.Now()
	// The child holds the output pipe open: if only bash were killed, Wait would hang on it.
	_, err := s.run(context.Background(), Block{File: "doc.md", Line: 1, Lang: "sh", Code: "sleep 60 & wait\n"}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still running after 300ms") {
		t.Errorf("run = %v, want the timeout reported", err)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("run returned after %v: the process group was not killed at the timeout", took)
	}
}
