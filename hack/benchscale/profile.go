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

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// profileCPU records CPU profiles of kube-apiserver (its /debug/pprof, which envtest serves to its
// admin) and of the manager (when it serves pprof) over the same time d, into dir, in the
// background: where the API server's time goes is what decides how fast a rotation of every
// keyring can be, and the manager's is what the operator can change. The returned function waits
// for both.
func profileCPU(ctx context.Context, cfg *rest.Config, m *manager, d time.Duration, dir string, n int) func() {
	query := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
	var wg sync.WaitGroup
	record := func(who, file string, hc *http.Client, url string) {
		defer wg.Done()
		path := filepath.Join(dir, fmt.Sprintf("%s-n%d.pprof", file, n))
		if err := fetchTo(ctx, hc, url, path); err != nil {
			progress("warning: %s's CPU profile: %v", who, err)
			return
		}
		progress("%s's CPU profile over %v: %s (go tool pprof -top %s)", who, d, path, path)
	}
	if hc, err := rest.HTTPClientFor(cfg); err != nil {
		progress("warning: the API server's CPU profile: %v", err)
	} else {
		wg.Add(1)
		go record("the API server", "apiserver", hc, apiURL(cfg, query))
	}
	if m.pprofURL != "" {
		wg.Add(1)
		go record("the manager", "manager-cpu", http.DefaultClient, strings.TrimSuffix(m.pprofURL, "/debug/pprof")+query)
	}
	return wg.Wait
}

// profileManagerHeap saves the manager's heap profile (live objects, after a GC) into path.
func profileManagerHeap(ctx context.Context, m *manager, path string) {
	if m.pprofURL == "" {
		return
	}
	if err := fetchTo(ctx, http.DefaultClient, m.pprofURL+"/heap?gc=1", path); err != nil {
		progress("warning: the manager's heap profile: %v", err)
		return
	}
	progress("the manager's heap profile: %s (go tool pprof -sample_index=inuse_space -top %s)", path, path)
}

// apiURL is the URL of path on the API server of cfg.
func apiURL(cfg *rest.Config, path string) string { return strings.TrimSuffix(cfg.Host, "/") + path }

// fetchTo saves what a GET of url answers into path.
func fetchTo(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// saveObjects writes the first target's keyring and Secret, as the API server serves them (managed
// fields included), into dir: what every status write and watch event of a keyring carries.
func saveObjects(ctx context.Context, cfg *rest.Config, t target, dir string) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		progress("warning: %v", err)
		return
	}
	for name, path := range map[string]string{
		"keyring": fmt.Sprintf("/apis/%s/namespaces/%s/mrtrkeyrings/%s", mrtrv1alpha1.GroupVersion, t.namespace, t.name),
		"secret":  fmt.Sprintf("/api/v1/namespaces/%s/secrets/%s", t.namespace, t.name),
	} {
		file := filepath.Join(dir, name+".json")
		if err := fetchTo(ctx, hc, apiURL(cfg, path), file); err != nil {
			progress("warning: %v", err)
			continue
		}
		if fi, err := os.Stat(file); err == nil {
			progress("one %s as served: %d bytes of JSON, in %s", name, fi.Size(), file)
		}
	}
}
