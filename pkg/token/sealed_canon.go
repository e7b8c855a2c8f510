package token

// The Sealed codec's only contact with canonical JSON. TEMPORARY: a stand-in on encoding/json until
// pkg/token/internal/canonical (the encoder shared with the Signed codec) lands; then these three
// functions become thin calls into it.

import (
	"bytes"
	"encoding/json"
	"errors"
)

// validJSON reports whether b is exactly one JSON value.
func validJSON(b []byte) bool { return json.Valid(b) }

// appendCanonicalValue appends the canonical JSON of the value v.
func appendCanonicalValue(dst []byte, v json.RawMessage) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return dst, err
	}
	if d.More() {
		return dst, errors.New("trailing data")
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(x); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendCanonicalBinding appends the canonical JSON of [method, salient params]: params without the
// top-level "_meta", "requestState" and "inputResponses".
func appendCanonicalBinding(dst []byte, method string, params json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return dst, err
	}
	delete(m, "_meta")
	delete(m, "requestState")
	delete(m, "inputResponses")
	b, err := json.Marshal([]any{method, m})
	if err != nil {
		return dst, err
	}
	return appendCanonicalValue(dst, b)
}
