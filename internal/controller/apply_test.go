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

package controller

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAPIReasonScrubsEncodedData: an API error that echoes the request (a webhook's message) keeps
// its reason and words, never what could be key material, and refusal reads it.
func TestAPIReasonScrubsEncodedData(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	raw := &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonInvalid, Code: 422,
		Message: `secrets "payments" is forbidden: ValidatingAdmissionPolicy 'locked' denied request: data ` + key + ` is locked`}}
	err := apiReason(raw)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%v: the reason is lost", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[:24]) {
		t.Fatalf("%v: holds the data", err)
	}
	why := refusal(err)
	for _, want := range []string{"Invalid: ", "ValidatingAdmissionPolicy 'locked' denied request", "[redacted] is locked"} {
		if !strings.Contains(why, want) {
			t.Errorf("refusal %q lacks %q", why, want)
		}
	}
	if refusal(apiReason(apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "payments", errors.New("modified")))) != "" {
		t.Errorf("a conflict is a race, not a refusal")
	}
}
