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
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"
)

// textWriter writes the plugin's text: label and value fields, headings and tables, each aligned
// on its own, kubectl describe's way. It keeps the first write error (a closed pipe), so that the
// code that prints reads as a sequence of lines and reports a failure once, at the end.
type textWriter struct {
	out io.Writer
	now time.Time // what relative times in the text are relative to
	err error
}

// fields writes label, value pairs aligned on one tab stop.
func (w *textWriter) fields(pairs ...string) {
	rows := make([][]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		rows = append(rows, []string{pairs[i] + ":", pairs[i+1]})
	}
	w.table(0, rows)
}

// heading starts a section: "Label:" and a summary, if any, on the same line.
func (w *textWriter) heading(label, summary string) {
	if summary != "" {
		summary = " " + summary
	}
	w.printf(0, "%s:%s\n", label, summary)
}

// table writes rows as aligned columns, indented by level.
func (w *textWriter) table(level int, rows [][]string) {
	if w.err != nil {
		return
	}
	tw := printers.GetNewTabWriter(w.out)
	for _, r := range rows {
		_, _ = fmt.Fprintln(tw, indent(level)+strings.Join(r, "\t")) // buffered: Flush reports
	}
	w.err = tw.Flush()
}

func (w *textWriter) printf(level int, format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.out, indent(level)+format, args...)
	}
}

func indent(level int) string { return strings.Repeat("  ", level) }
