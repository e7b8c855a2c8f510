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
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// writeSecret makes the keyring Secret of owner hold d.Secret, with d's annotations (the phase it
// enters, and what a restart resumes from), labelled as owner's (writeKeyringSecret).
func (r *Shared) writeSecret(ctx context.Context, p keyringPlace, current *corev1.Secret, d rotation.Decision) error {
	target := secretTarget{key: types.NamespacedName{Namespace: p.Namespace, Name: p.SecretName},
		label: mrtrv1alpha1.KeyringLabel, owner: p.Name}
	return r.writeKeyringSecret(ctx, target, current, d, rotation.SettingsFrom(*p.Spec).TokenTTL, d.SecretAnnotations())
}

// secretTarget is a keyring Secret to write: where, and the label (label=owner) that says whose it is.
type secretTarget struct {
	key          types.NamespacedName
	label, owner string
}

// writeKeyringSecret makes the Secret t hold d.Secret and the token lifetime ttl, with annotations
// (an empty value removes one). It creates the Secret when current (the copy gather read) is nil,
// or updates current with its resourceVersion, so a change made since that read makes it fail
// rather than be overwritten. An unchanged Secret costs no write. Errors never include the data.
func (r *Shared) writeKeyringSecret(ctx context.Context, t secretTarget, current *corev1.Secret, d rotation.Decision,
	tokenTTL time.Duration, annotations map[string]string) error {
	kr := d.Secret
	data, err := keyring.Marshal(kr)
	if err != nil {
		return err
	}
	// The token lifetime the rotation waits for, declared to the servers beside keyring.json.
	ttl := keyring.FormatTokenTTL(tokenTTL)
	key := t.key
	if current == nil {
		maps.DeleteFunc(annotations, func(_, v string) bool { return v == "" })
		s := corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{t.label: t.owner}, Annotations: annotations},
			Type: keyring.SecretType,
			Data: map[string][]byte{keyring.SecretDataKey: data, keyring.TokenTTLDataKey: ttl},
		}
		if err := r.Create(ctx, &s, client.FieldOwner(mrtrv1alpha1.FieldManager)); err != nil {
			return fmt.Errorf("create Secret %s with keyring %s: %w", key, kr.Fingerprint(), apiReason(err))
		}
		return nil
	}
	s := current
	if s.Type != keyring.SecretType { // Step never asks this, but never overwrite a foreign Secret
		return fmt.Errorf("secret %s has type %q, not %s: not writing it", key, s.Type, keyring.SecretType)
	}
	changed := !bytes.Equal(s.Data[keyring.SecretDataKey], data) || !bytes.Equal(s.Data[keyring.TokenTTLDataKey], ttl) ||
		s.Labels[t.label] != t.owner
	for k, v := range annotations {
		changed = changed || s.Annotations[k] != v
	}
	if !changed {
		return nil
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[t.label] = t.owner
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		if v == "" {
			delete(s.Annotations, k)
		} else {
			s.Annotations[k] = v
		}
	}
	// A Secret made with kubectl apply repeats its first keys in this annotation: a key the
	// rotation removes, or a revoked one, must leave the Secret entirely. The cached copy has it
	// stripped, but one read live (readSecret: adopted, or changed behind our back) does not.
	delete(s.Annotations, lastAppliedAnnotation)
	// Only our key: other data an adopted Secret carries is kept, never lost.
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[keyring.SecretDataKey] = data
	s.Data[keyring.TokenTTLDataKey] = ttl
	// A cached copy keeps only the time of our own entry (stripSecret): sent back, that would
	// replace every manager's entries. Nil leaves them to the API server.
	s.ManagedFields = nil
	if err := r.Update(ctx, s, client.FieldOwner(mrtrv1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("update Secret %s to keyring %s: %w", key, kr.Fingerprint(), apiReason(err))
	}
	return nil
}

// apiReason keeps an API error's reason, code and message, but scrubs the message of anything that
// looks like encoded data and cuts it short: it could echo the request body (the API server does
// not, but a webhook in the path might). The result is still an API status, so apierrors.IsConflict
// and its kin work on it.
func apiReason(err error) error {
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		msg := encodedRun.ReplaceAllStringFunc(st.Message, func(run string) string {
			if len(run) < 24 {
				return run
			}
			return "[redacted]"
		})
		if len(msg) > 300 {
			msg = msg[:297] + "..."
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Reason: st.Reason, Code: st.Code,
			Message: fmt.Sprintf("%s (%d): %s", st.Reason, st.Code, msg),
		}}
	}
	return err
}

// encodedRun matches what could be key material in an error message: a long run of base64 or hex
// with a digit or a symbol in it (a keyring's data always has; a long word such as
// ValidatingAdmissionPolicy has not).
var encodedRun = regexp.MustCompile(`[A-Za-z0-9+/=_-]*[0-9+/=_-][A-Za-z0-9+/=_-]*`)

// evictionRetry is how soon a pass runs again after an eviction was refused (a PodDisruptionBudget
// allows no disruption now): the budget frees up as replaced pods become ready.
const evictionRetry = 5 * time.Second

// evict restarts the named pods of kr's namespace through the eviction API, which respects their
// PodDisruptionBudgets, each on the condition that it is still the pod at the version gather read
// (seen): a pod replaced or changed since (an acknowledgement that came in meanwhile) is left to
// the next pass. It reports whether an eviction was refused or conflicted for now, to be tried
// again; a pod already gone is no error.
func (r *Shared) evict(ctx context.Context, kr keyringPlace, names []string,
	seen map[string]seenPod) (retry bool, err error) {
	var errs []error
	evicted := 0
	defer func() { r.metrics().PodsRestarted(kr.Keyring.Namespace, kr.Keyring.Name, evicted) }()
	for _, name := range names {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: kr.Namespace, Name: name}}
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: kr.Namespace, Name: name}}
		if p, ok := seen[name]; ok {
			eviction.DeleteOptions = &metav1.DeleteOptions{Preconditions: &p.version}
		}
		switch err := r.SubResource("eviction").Create(ctx, pod, eviction); {
		case err == nil:
			evicted++
			if p, ok := seen[name]; ok && p.version.UID != nil {
				r.evictions.accepted(*p.version.UID, r.now().Now())
			}
		case apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err), apierrors.IsConflict(err):
			retry = true
		default:
			errs = append(errs, fmt.Errorf("evict pod %s/%s: %w", kr.Namespace, name, err))
		}
	}
	return retry, errors.Join(errs...)
}
