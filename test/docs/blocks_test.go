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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := "# Title\n" +
		"\n" +
		"```sh\n" +
		"export NS=mcp\n" +
		"kubectl get mkr -n \"$NS\"\n" +
		"```\n" +
		"Some prose with ``` inline.\n" +
		"```console\n" +
		"$ kubectl delete secret x\n" +
		"```\n" +
		"1. A step:\n" +
		"\n" +
		"   ```sh exit=1\n" +
		"   kubectl mrtr inspect \"$TOKEN\"\n" +
		"     indented more\n" +
		"   ```\n" +
		"~~~~text\n" +
		"```sh\n" +
		"not a block of its own\n" +
		"```\n" +
		"~~~~\n" +
		"```\n" +
		"```\n"
	got, err := Parse("doc.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "doc.md", Line: 3, Lang: "sh", Code: "export NS=mcp\nkubectl get mkr -n \"$NS\"\n"},
		{File: "doc.md", Line: 8, Lang: "console", Code: "$ kubectl delete secret x\n"},
		{File: "doc.md", Line: 13, Lang: "sh", Exit: 1, Code: "kubectl mrtr inspect \"$TOKEN\"\n  indented more\n"},
		{File: "doc.md", Line: 17, Lang: "text", Code: "```sh\nnot a block of its own\n```\n"},
		{File: "doc.md", Line: 22},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
	var run []int
	for _, b := range got {
		if b.Runs() {
			run = append(run, b.Line)
		}
	}
	if !reflect.DeepEqual(run, []int{3, 13}) {
		t.Errorf("blocks that run start on lines %v, want [3 13]", run)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unterminated", "text\n```sh\nkubectl get mkr\n", "doc.md:2: the code block opened with ``` is never closed"},
		{"closed by a shorter fence", "````sh\nls\n```\n", "doc.md:1: the code block opened with ```` is never closed"},
		{"bash", "```bash\nls\n```\n", "doc.md:1: a bash block: tag commands sh"},
		{"shell", "```shell\nls\n```\n", "doc.md:1: a shell block"},
		{"unknown attribute", "```sh timeout=5\nls\n```\n", `doc.md:1: sh block attribute "timeout=5"`},
		{"exit not a number", "```sh exit=one\nls\n```\n", `sh block attribute "exit=one"`},
		{"exit out of range", "```sh exit=256\nls\n```\n", `sh block attribute "exit=256"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("doc.md", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", tc.src, err, tc.want)
			}
		})
	}
}

// TestDocsParse keeps the documentation well formed in make test, without a cluster: every file
// of docs/ parses, and every operator document (those the e2e test runs) has commands to run.
func TestDocsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md found (%v)", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Parse(filepath.Base(f), src)
		if err != nil {
			t.Error(err)
			continue
		}
		if _, skip := NotRun[filepath.Base(f)]; skip {
			continue
		}
		n := 0
		for _, b := range blocks {
			if b.Runs() {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s has no sh block: an operator document shows the commands that confirm what it says", f)
		}
	}
	for name := range NotRun {
		if _, err := os.Stat(filepath.Join("..", "..", "docs", name)); err != nil {
			t.Errorf("NotRun names %s, which is not in docs/: %v", name, err)
		}
	}
}
