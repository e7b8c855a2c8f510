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

// Package docs runs the operator's documentation. Every fenced code block tagged sh in docs/*.md
// is a command a reader runs as written; the e2e test of this package (make test-docs, and make
// test-e2e) runs each one with bash, in order, file by file, against a local cluster with the
// operator running, and fails on the first that fails. Blocks that must not run (destructive ones,
// or those that need what the local cluster lacks) are tagged console or text: shown, not run.
//
// The info string of an sh block may add exit=N: the block must exit with status N. The prose
// around it says so to the reader (kubectl mrtr inspect exits 1 for a token that does not open; the
// API server refuses a forged acknowledgement).
package docs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// NotRun are the files of docs/ whose sh blocks the test does not run, and why. Every other file
// of docs/ is an operator document, run in full.
var NotRun = map[string]string{
	"api.md":         "generated from the API types (make api-docs): fields, no commands",
	"benchmarks.md":  "its commands run the token and scale benchmarks on a developer's machine (minutes of CPU each), not against a cluster",
	"consumers.md":   "the contract for server authors: its commands run the conformance check on a developer's machine",
	"development.md": "its commands build and test the project on a developer's machine, not against a cluster",
	// Two clusters, a hub and a member, where the test has one local cluster.
	"multi-cluster.md": "its commands need a hub and a member cluster; the test's local cluster is one",
}

// Block is one fenced code block of a Markdown file.
type Block struct {
	// File and Line locate its opening fence (Line counts from 1).
	File string
	Line int
	// Lang is the first word of its info string ("sh", "console", "text", ...).
	Lang string
	// Exit is the status an sh block must exit with: 0 unless its info string says exit=N.
	Exit int
	// Code is its content, without the fences.
	Code string
}

// Runs reports whether the test runs the block.
func (b Block) Runs() bool { return b.Lang == "sh" }

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// shellLike are languages that read as commands to run but would not be: a block meant to run
// is tagged sh, one meant to be shown console or text, so that no command escapes the test by
// being tagged bash.
var shellLike = map[string]bool{"bash": true, "shell": true, "zsh": true, "shell-session": true}

// fenceOpen matches an opening fence (CommonMark: up to 3 spaces, then 3 or more backticks or
// tildes, then the info string; a backtick fence's info string holds no backtick).
var fenceOpen = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})(.*)$")

// Parse returns the fenced code blocks of the Markdown file src, named file in what it reports. It
// refuses what would make a block's meaning unclear: an unterminated fence, a shell block tagged
// other than sh, and an sh block with an attribute it does not know.
func Parse(file string, src []byte) ([]Block, error) {
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil || (m[2][0] == '`' && strings.Contains(m[3], "`")) {
			continue
		}
		indent, fence := len(m[1]), m[2]
		b := Block{File: file, Line: i + 1}
		if err := b.setInfo(strings.Fields(m[3])); err != nil {
			return nil, err
		}
		var code []string
		closed := false
		for i++; i < len(lines); i++ {
			if isFenceClose(lines[i], fence) {
				closed = true
				break
			}
			code = append(code, dedent(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s: the code block opened with %s is never closed", b, fence)
		}
		b.Code = strings.Join(code, "\n")
		if len(code) > 0 {
			b.Code += "\n"
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// setInfo reads the info string's words: the language, then (sh only) exit=N.
func (b *Block) setInfo(words []string) error {
	if len(words) == 0 {
		return nil
	}
	b.Lang = words[0]
	if shellLike[b.Lang] {
		return fmt.Errorf("%s: a %s block: tag commands sh (run by test/docs) or console/text (shown, not run)", b, b.Lang)
	}
	if !b.Runs() {
		return nil
	}
	for _, w := range words[1:] {
		v, ok := strings.CutPrefix(w, "exit=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n > 255 {
			return fmt.Errorf("%s: sh block attribute %q: the only one is exit=N, N from 0 to 255", b, w)
		}
		b.Exit = n
	}
	return nil
}

// isFenceClose reports whether line closes a block opened with fence: up to 3 spaces, at least as
// many of the same character, then only spaces.
func isFenceClose(line, fence string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	n := len(t) - len(strings.TrimLeft(t, fence[:1]))
	return n >= len(fence) && strings.TrimSpace(t[n:]) == ""
}

// dedent removes up to n leading spaces, the opening fence's indentation (CommonMark).
func dedent(line string, n int) string {
	for range n {
		if !strings.HasPrefix(line, " ") {
			break
		}
		line = line[1:]
	}
	return line
}
