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

package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kindClusterRole is a RoleRef's kind for a ClusterRole (the rbac API has no constant for it).
const kindClusterRole = "ClusterRole"

// Permission is one verb on one resource ("group/resource" or "group/resource/subresource"; the
// core group is ""), as RBAC grants it and as the audit log records its use.
type Permission struct{ Resource, Verb string }

func (p Permission) String() string { return p.Verb + " " + p.Resource }

// Permissions compares what the operator's ServiceAccount did, by the API server's audit log,
// with what the RBAC bound to it grants: the requests refused (403), and the permissions granted
// but never used. A permission on a resource the cluster does not serve (the Argo Rollouts CRD
// not installed) cannot be used, and is not counted unused; where the cluster serves it, it is.
func (e *Env) Permissions(ctx context.Context) (forbidden []string, unused []Permission, err error) {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", OperatorNamespace, OperatorServiceAccount)
	used, forbidden, err := readAudit(e.Cluster.AuditLogPath(), user)
	if err != nil {
		return nil, nil, err
	}
	granted, err := grantedTo(ctx, e.Client, OperatorNamespace, OperatorServiceAccount)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range granted {
		if !used[p] && served(e.Client, p.Resource) {
			unused = append(unused, p)
		}
	}
	return forbidden, unused, nil
}

// served reports whether the API server serves resource ("group/resource[/subresource]"), by the
// client's RESTMapper; a resource it cannot tell about counts as served, so that nothing is left
// unchecked by mistake.
func served(c client.Client, resource string) bool {
	parts := strings.SplitN(resource, "/", 3)
	if len(parts) < 2 || parts[1] == "*" {
		return true
	}
	_, err := c.RESTMapper().KindFor(schema.GroupVersionResource{Group: parts[0], Resource: parts[1]})
	return !meta.IsNoMatchError(err)
}

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// SecretWrites lists, by the API server's audit log, every request of the operator's
// ServiceAccount that writes a Secret (create, update, patch, delete), answered or refused: by
// namespace, each as "verb name code".
func (e *Env) SecretWrites() (map[string][]string, error) {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", OperatorNamespace, OperatorServiceAccount)
	return readSecretWrites(e.Cluster.AuditLogPath(), user)
}

// readSecretWrites lists, by the audit log at path, every request of user that writes a Secret:
// by namespace, each as "verb name code".
func readSecretWrites(path, user string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	defer f.Close() //nolint:errcheck // read only
	writes := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("the audit log: %w", err)
		}
		ref := ev.ObjectRef
		if ev.User.Username != user || ev.Stage != "ResponseComplete" || ref == nil || ref.APIGroup != "" ||
			ref.Resource != "secrets" || !slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, ev.Verb) {
			continue
		}
		code := 0
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		writes[ref.Namespace] = append(writes[ref.Namespace], fmt.Sprintf("%s %s %d", ev.Verb, ref.Name, code))
	}
	return writes, sc.Err()
}

// readAudit returns the permissions user used, and a line for each request of user refused.
func readAudit(path, user string) (used map[Permission]bool, forbidden []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("the audit log: %w", err)
	}
	defer f.Close() //nolint:errcheck // read only
	used = map[Permission]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, nil, fmt.Errorf("the audit log: %w", err)
		}
		// A watch is answered for as long as it lasts: the API server logs ResponseStarted once it
		// authorized it and began to stream, ResponseComplete only when it ends, which an informer's
		// watch may not have yet when this runs. Every other request is read once it completed.
		watching := ev.Stage == "ResponseStarted" && ev.Verb == "watch"
		if ev.User.Username != user || (ev.Stage != "ResponseComplete" && !watching) || ev.ObjectRef == nil {
			continue
		}
		r := ev.ObjectRef.APIGroup + "/" + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			r += "/" + ev.ObjectRef.Subresource
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 403 {
			forbidden = append(forbidden, ev.Verb+" "+ev.RequestURI)
			continue
		}
		used[Permission{Resource: r, Verb: ev.Verb}] = true
		if ev.Verb == "watch" && strings.Contains(ev.RequestURI, "sendInitialEvents=true") {
			// A watch-list informer's list: the API server streams it on the watch, authorized as
			// a list too; an informer falls back to a plain list where streaming is not served.
			used[Permission{Resource: r, Verb: "list"}] = true
		}
	}
	return used, forbidden, sc.Err()
}

// grantedTo lists, sorted, every permission the Roles and ClusterRoles bound to the ServiceAccount
// grant it.
func grantedTo(ctx context.Context, c client.Client, ns, name string) ([]Permission, error) {
	isSubject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == ns && s.Name == name
		})
	}
	var rules []rbacv1.PolicyRule
	var crbs rbacv1.ClusterRoleBindingList
	if err := c.List(ctx, &crbs); err != nil {
		return nil, err
	}
	var rbs rbacv1.RoleBindingList
	if err := c.List(ctx, &rbs); err != nil {
		return nil, err
	}
	type binding struct {
		ref rbacv1.RoleRef
		ns  string
	}
	var bindings []binding
	for _, b := range crbs.Items {
		if isSubject(b.Subjects) {
			bindings = append(bindings, binding{b.RoleRef, ""})
		}
	}
	for _, b := range rbs.Items {
		if isSubject(b.Subjects) {
			bindings = append(bindings, binding{b.RoleRef, b.Namespace})
		}
	}
	for _, b := range bindings {
		if b.ref.Kind == kindClusterRole {
			var r rbacv1.ClusterRole
			if err := c.Get(ctx, client.ObjectKey{Name: b.ref.Name}, &r); err != nil {
				return nil, fmt.Errorf("get ClusterRole %s: %w", b.ref.Name, err)
			}
			rules = append(rules, r.Rules...)
			continue
		}
		var r rbacv1.Role
		if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.ref.Name}, &r); err != nil {
			return nil, fmt.Errorf("get Role %s/%s: %w", b.ns, b.ref.Name, err)
		}
		rules = append(rules, r.Rules...)
	}
	seen := map[Permission]bool{}
	var out []Permission
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					p := Permission{Resource: g + "/" + res, Verb: v}
					if !seen[p] {
						seen[p] = true
						out = append(out, p)
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Permission) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}
