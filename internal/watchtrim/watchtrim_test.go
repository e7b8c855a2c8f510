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

package watchtrim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// withoutManagedFields is event decoded, without object.metadata.managedFields: what Trim's answer
// must decode to.
func withoutManagedFields(t testing.TB, event []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(event, &v); err != nil {
		t.Fatalf("%q: %v", event, err)
	}
	if ev, ok := v.(map[string]any); ok {
		if obj, ok := ev["object"].(map[string]any); ok {
			if meta, ok := obj["metadata"].(map[string]any); ok {
				delete(meta, "managedFields")
			}
		}
	}
	return v
}

func TestTrimDropsOnlyTheObjectsManagedFields(t *testing.T) {
	keyring, err := os.ReadFile("testdata/keyring-event.json")
	if err != nil {
		t.Fatal(err)
	}
	keyring = bytes.TrimSpace(keyring)
	mf := `"managedFields":[{"manager":"m","fieldsV1":{"f:metadata":{"f:annotations":{"f:x":{}}}},"time":"2026-12-07T00:00:00Z"}]`
	for _, tc := range []struct {
		name, event string
		trimmed     bool
	}{
		{"a keyring's event, as the API server sends it", string(keyring), true},
		{"first of metadata", `{"type":"ADDED","object":{"kind":"K","metadata":{` + mf + `,"name":"a"}}}`, true},
		{"last of metadata", `{"type":"ADDED","object":{"metadata":{"name":"a",` + mf + `},"spec":{}}}`, true},
		{"all of metadata", `{"type":"ADDED","object":{"metadata":{` + mf + `}}}`, true},
		{"with white space", "{ \"type\" : \"ADDED\" , \"object\" : { \"metadata\" : { \"name\" : \"a\" , " + mf + " , \"uid\" : \"u\" } } }\n", true},
		{"after values that look like JSON", `{"type":"MODIFIED","object":{"metadata":{"annotations":{"a":"{\"managedFields\":[}","b":"\\"},` + mf + `}}}`, true},
		{"object before type", `{"object":{"metadata":{` + mf + `}},"type":"DELETED"}`, true},
		{"none", `{"type":"ADDED","object":{"metadata":{"name":"a"}}}`, false},
		{"a bookmark", `{"type":"BOOKMARK","object":{"kind":"K","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}`, false},
		{"an error", `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":410}}`, false},
		{"managedFields elsewhere", `{"type":"ADDED","object":{"spec":{` + mf + `},"metadata":{"name":"a"}}}`, false},
	} {
		out := Trim([]byte(tc.event))
		if trimmed := len(out) < len(strings.TrimSpace(tc.event)); trimmed != tc.trimmed {
			t.Errorf("%s: trimmed %v, want %v: %s", tc.name, trimmed, tc.trimmed, out)
			continue
		}
		if !tc.trimmed && string(out) != tc.event {
			t.Errorf("%s: changed to %s", tc.name, out)
		}
		if got, want := withoutManagedFields(t, out), withoutManagedFields(t, []byte(tc.event)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodes to %v, want %v", tc.name, got, want)
		}
		if tc.trimmed && bytes.Contains(out, []byte(`"fieldsV1"`)) {
			t.Errorf("%s: managed fields left in %s", tc.name, out)
		}
	}
	for _, bad := range []string{``, `null`, `{"type":"ADDED","object":`, `{"object":{"metadata":{"managedFields":[{"a":"}]}}}`, `[1,2]`, `{"object":{"metadata":{"managedFields":tru`} {
		if out := Trim([]byte(bad)); string(out) != bad {
			t.Errorf("%q: changed to %q, want it left for the decoder to refuse", bad, out)
		}
	}
}

// FuzzTrim: whatever the stream holds, Trim never panics, and an event that is JSON decodes the
// same after it, but for object.metadata.managedFields.
func FuzzTrim(f *testing.F) {
	keyring, err := os.ReadFile("testdata/keyring-event.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(keyring)
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"m":"\"]}"}]}}}`))
	f.Add([]byte(`{"object":{"metadata":{"managedFields":1,"managedFields":2}}}`))
	f.Fuzz(func(t *testing.T, event []byte) {
		in := bytes.Clone(event)
		out := Trim(event)
		if !json.Valid(in) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q trimmed to %q, not JSON", in, out)
		}
		if got, want := withoutManagedFields(t, out), withoutManagedFields(t, in); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q trimmed to %q: decodes to %v, want %v", in, out, got, want)
		}
	})
}

func TestTrimmingBodyTrimsEachEventOfAStream(t *testing.T) {
	mf := `"managedFields":[{"manager":"m"}]`
	long := `{"type":"ADDED","object":{"metadata":{"annotations":{"a":"` + strings.Repeat("x", 3*bufferSize) + `"},` + mf + `}}}`
	events := []string{
		`{"type":"ADDED","object":{"metadata":{"name":"a",` + mf + `}}}`,
		long,
		`{"type":"MODIFIED","object":{"metadata":{` + mf + `,"name":"b"}}}`,
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}`,
	}
	var stream, want bytes.Buffer
	for _, e := range events {
		stream.WriteString(e + "\n")
		want.Write(Trim([]byte(e + "\n")))
	}
	stream.WriteString(`{"type":"ADDED","object":{"metadata":{` + mf + `}}}`) // cut off: no newline
	want.WriteString(`{"type":"ADDED","object":{"metadata":{}}}`)
	body := &trimmingBody{body: io.NopCloser(nil), r: newReader(iotest.HalfReader(&stream))}
	got, err := io.ReadAll(iotest.OneByteReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) || bytes.Contains(got, []byte("managedFields")) {
		t.Errorf("read %d bytes, want the %d of the events trimmed", len(got), want.Len())
	}
}

func TestTransportTrimsOnlyWatchesOfItsGroups(t *testing.T) {
	event := `{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}}}` + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("as") == "text" {
			w.Header().Set("Content-Type", "text/plain")
		} else {
			w.Header().Set("Content-Type", "application/json;stream=watch")
		}
		io.WriteString(w, event) //nolint:errcheck // the test reads what arrives
	}))
	defer srv.Close()
	c := &http.Client{Transport: Transport("mrtr.dev")(http.DefaultTransport)}
	for _, tc := range []struct {
		path    string
		trimmed bool
	}{
		{"/apis/mrtr.dev/v1alpha1/namespaces/a/mrtrkeyrings?watch=true", true},
		{"/prefix/apis/mrtr.dev/v1alpha1/mrtrkeyrings?watch=1&resourceVersion=5", true},
		{"/apis/mrtr.dev/v1alpha1/namespaces/a/mrtrkeyrings", false},       // a list
		{"/apis/mrtr.dev/v1alpha1/mrtrkeyrings?watch=false", false},        // not a watch
		{"/apis/apps/v1/deployments?watch=true", false},                    // another group
		{"/apis/mrtr.devices.example/v1/things?watch=true", false},         // a group that only starts alike
		{"/apis/mrtr.dev/v1alpha1/mrtrkeyrings?watch=true&as=text", false}, // not JSON
	} {
		resp, err := c.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close() //nolint:errcheck // read whole
		if err != nil {
			t.Fatal(err)
		}
		if trimmed := !bytes.Contains(body, []byte("managedFields")); trimmed != tc.trimmed {
			t.Errorf("GET %s: trimmed %v, want %v", tc.path, trimmed, tc.trimmed)
		}
	}
}

func BenchmarkTrim(b *testing.B) {
	keyring, err := os.ReadFile("testdata/keyring-event.json")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(keyring))
	b.SetBytes(int64(len(keyring)))
	for b.Loop() {
		copy(buf, keyring)
		Trim(buf)
	}
}
