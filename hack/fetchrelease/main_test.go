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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The versions the tests fetch; the script's test fetches the script's own pins.
const (
	kubeV = "v1.37.2"
	etcdV = "v3.6.16"
)

// release is a local release host: the Kubernetes binaries under /k8s, etcd's under /etcd, laid out
// as dl.k8s.io and etcd's GitHub releases lay them out. Tests change files to break them.
type release struct {
	mu       sync.Mutex
	files    map[string][]byte
	requests []string
}

func (r *release) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.URL.Path)
	body, ok := r.files[req.URL.Path]
	r.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	_, _ = w.Write(body)
}

func (r *release) set(path string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[path] = body
}

func (r *release) requested() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

func kubePath(version, name string) string {
	return fmt.Sprintf("/k8s/%s/bin/linux/%s/%s", version, runtime.GOARCH, name)
}

func etcdAsset(version string) string {
	return fmt.Sprintf("etcd-%s-linux-%s.tar.gz", version, runtime.GOARCH)
}

// binary is the content a test expects to find installed as name.
func binary(name string) []byte { return []byte("#!/bin/sh\necho this is " + name + "\n") }

func sumHex(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// etcdTarball is a release tarball as etcd publishes it: a folder with etcd, etcdctl and docs.
func etcdTarball(t *testing.T, version string, etcd []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	folder := strings.TrimSuffix(etcdAsset(version), ".tar.gz")
	for _, f := range []struct {
		name string
		body []byte
	}{
		{folder + "/README.md", []byte("etcd\n")},
		{folder + "/etcdctl", binary("etcdctl")},
		{folder + "/etcd", etcd},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// newRelease serves every binary of kubeVersion and etcdVersion with its matching checksum.
func newRelease(t *testing.T, kubeVersion, etcdVersion string) (*release, *httptest.Server) {
	t.Helper()
	r := &release{files: map[string][]byte{}}
	for _, name := range kubeBinaries {
		r.files[kubePath(kubeVersion, name)] = binary(name)
		// dl.k8s.io's .sha256 files hold the bare digest, without a newline.
		r.files[kubePath(kubeVersion, name)+".sha256"] = []byte(sumHex(binary(name)))
	}
	tarball := etcdTarball(t, etcdVersion, binary("etcd"))
	asset := etcdAsset(etcdVersion)
	r.files["/etcd/"+etcdVersion+"/"+asset] = tarball
	r.files["/etcd/"+etcdVersion+"/SHA256SUMS"] = []byte(
		sumHex([]byte("another asset")) + "  etcd-" + etcdVersion + "-darwin-arm64.zip\n" +
			sumHex(tarball) + "  " + asset + "\n")
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func envFor(srv *httptest.Server) func(string) string {
	env := map[string]string{k8sURLEnv: srv.URL + "/k8s", etcdURLEnv: srv.URL + "/etcd/"}
	return func(k string) string { return env[k] }
}

// fetch runs the command as the script does and returns its exit code and its one line of reason.
func fetch(t *testing.T, getenv func(string) string, dir string, names ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"-dir", dir, "-kube", kubeV, "-etcd", etcdV}, names...)
	code := run(context.Background(), args, getenv, &stdout, &stderr)
	t.Logf("exit %d; stdout %q; stderr %q", code, stdout.String(), stderr.String())
	return code, strings.TrimSuffix(stdout.String(), "\n")
}

// assertCache checks that the cache folder holds exactly the named binaries, each executable with the
// content the release serves, and nothing else: no part of a refused download, executable or not.
func assertCache(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Name() != ".lock" { // the script's flock
			got = append(got, e.Name())
		}
	}
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Fatalf("cache folder holds %q, want exactly %q", got, want)
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("%s has mode %v, want 0755", name, st.Mode().Perm())
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, binary(name)) {
			t.Errorf("%s holds %q, want the release's %q", name, b, binary(name))
		}
	}
}

func TestFetchInstallsVerifiedBinaries(t *testing.T) {
	_, srv := newRelease(t, kubeV, etcdV)
	dir := t.TempDir()
	all := append([]string{etcdBinary}, kubeBinaries...)
	if code, reason := fetch(t, envFor(srv), dir, all...); code != 0 {
		t.Fatalf("exit %d (%s), want 0", code, reason)
	}
	assertCache(t, dir, all...)
}

// Every way a download can be wrong leaves the binary out of the cache folder (the script then builds
// it), says which and why in the one line the script prints, and keeps what did verify.
func TestFetchRefusesWhatDoesNotVerify(t *testing.T) {
	apiserver, sums := kubePath(kubeV, "kube-apiserver"), "/etcd/"+etcdV+"/SHA256SUMS"
	tests := []struct {
		name      string
		breakIt   func(*release)
		reason    []string
		installed []string // of etcd, kube-apiserver, kube-scheduler
	}{{
		name: "a binary that is not the one its checksum names",
		breakIt: func(r *release) {
			r.set(apiserver, []byte("#!/bin/sh\necho tampered\n"))
		},
		reason: []string{"downloading kube-apiserver v1.37.2 failed (", "/kube-apiserver: SHA-256 " +
			sumHex([]byte("#!/bin/sh\necho tampered\n")) + ", the release publishes " + sumHex(binary("kube-apiserver")) + ": refused)"},
		installed: []string{etcdBinary},
	}, {
		name: "an etcd tarball that is not the one SHA256SUMS names",
		breakIt: func(r *release) {
			r.set("/etcd/"+etcdV+"/"+etcdAsset(etcdV), etcdTarball(t, etcdV, []byte("#!/bin/sh\necho tampered\n")))
		},
		reason:    []string{"downloading etcd v3.6.16 failed (", ".tar.gz: SHA-256 ", ": refused)"},
		installed: []string{"kube-apiserver", "kube-scheduler"},
	}, {
		name:      "a SHA256SUMS that does not list the tarball",
		breakIt:   func(r *release) { r.set(sums, []byte(sumHex(nil)+"  etcd-"+etcdV+"-linux-s390x.tar.gz\n")) },
		reason:    []string{"downloading etcd v3.6.16 failed (", "/SHA256SUMS lists no " + etcdAsset(etcdV) + ")"},
		installed: []string{"kube-apiserver", "kube-scheduler"},
	}, {
		name:      "a checksum file that holds no SHA-256",
		breakIt:   func(r *release) { r.set(apiserver+".sha256", []byte("<html>not found</html>")) },
		reason:    []string{"downloading kube-apiserver v1.37.2 failed (", `kube-apiserver.sha256: "<html>not` + `" is not a SHA-256)`},
		installed: []string{etcdBinary},
	}, {
		name:      "a binary the host does not have",
		breakIt:   func(r *release) { delete(r.files, apiserver) },
		reason:    []string{"downloading kube-apiserver v1.37.2 failed (", "/kube-apiserver: 404 Not Found)"},
		installed: []string{etcdBinary},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, srv := newRelease(t, kubeV, etcdV)
			tt.breakIt(r)
			dir := t.TempDir()
			code, reason := fetch(t, envFor(srv), dir, etcdBinary, "kube-apiserver", "kube-scheduler")
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			for _, want := range tt.reason {
				if !strings.Contains(reason, want) {
					t.Errorf("reason %q lacks %q", reason, want)
				}
			}
			if strings.Contains(reason, "\n") {
				t.Errorf("reason %q is more than one line", reason)
			}
			assertCache(t, dir, tt.installed...)
		})
	}
}

// While a binary arrives it sits in the private download folder, not executable, and not under its
// name in the cache folder; one that does not verify never gets further.
func TestDownloadIsNeverExecutableBeforeItVerifies(t *testing.T) {
	dir := t.TempDir()
	tampered := []byte("#!/bin/sh\necho tampered\n")
	var mu sync.Mutex // the handler's findings, read once the download is over
	var staged []os.FileMode
	var inPlace bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".sha256") {
			_, _ = w.Write([]byte(sumHex(binary("kube-apiserver"))))
			return
		}
		_, _ = w.Write(tampered[:4])
		w.(http.Flusher).Flush()
		// The client creates the staged file once the headers are in: wait for it, then look.
		mu.Lock()
		defer mu.Unlock()
		for range 1000 {
			if m, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*", "kube-apiserver")); len(m) == 1 {
				if st, err := os.Stat(m[0]); err == nil {
					staged = append(staged, st.Mode().Perm())
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, inPlaceErr := os.Stat(filepath.Join(dir, "kube-apiserver"))
		inPlace = inPlaceErr == nil
		_, _ = w.Write(tampered[4:])
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{k8sURLEnv: srv.URL}
	if code, _ := fetch(t, func(k string) string { return env[k] }, dir, "kube-apiserver"); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	srv.Close() // waits for the handler
	mu.Lock()
	defer mu.Unlock()
	if len(staged) != 1 || staged[0]&0o111 != 0 {
		t.Errorf("staged file modes %v while downloading, want one, not executable", staged)
	}
	if inPlace {
		t.Error("kube-apiserver was in the cache folder while it was downloading")
	}
	assertCache(t, dir)
}

// After a binary of the Kubernetes host fails, the rest of that host's are not asked for: they would
// fail the same way, and the source build makes them.
func TestFetchStopsAtAHostsFirstFailure(t *testing.T) {
	r, srv := newRelease(t, kubeV, etcdV)
	delete(r.files, kubePath(kubeV, "kube-apiserver"))
	dir := t.TempDir()
	if code, _ := fetch(t, envFor(srv), dir, etcdBinary, "kube-apiserver", "kube-scheduler"); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, p := range r.requested() {
		if strings.Contains(p, "kube-scheduler") {
			t.Errorf("asked for %s after kube-apiserver failed", p)
		}
	}
	assertCache(t, dir, etcdBinary)
}

func TestFetchUnreachableHost(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	dir := t.TempDir()
	code, reason := fetch(t, envFor(srv), dir, etcdBinary, "kube-apiserver")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, want := range []string{
		"downloading etcd v3.6.16 failed (" + host + " unreachable: ",
		"; downloading kube-apiserver v1.37.2 failed (" + host + " unreachable: ",
	} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q lacks %q", reason, want)
		}
	}
	assertCache(t, dir)
}

// A binary already in the cache folder is neither asked for nor replaced.
func TestFetchLeavesInstalledBinaries(t *testing.T) {
	r, srv := newRelease(t, kubeV, etcdV)
	dir := t.TempDir()
	for _, name := range []string{etcdBinary, "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, name), binary(name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, reason := fetch(t, envFor(srv), dir, etcdBinary, "kube-apiserver"); code != 0 {
		t.Fatalf("exit %d (%s), want 0", code, reason)
	}
	if got := r.requested(); len(got) != 0 {
		t.Errorf("asked the release host for %q, want nothing", got)
	}
	assertCache(t, dir, etcdBinary, "kube-apiserver")
}

// A download folder left by a killed run (the script's lock says no other run is going on) is
// removed, whatever it holds.
func TestFetchRemovesALeftoverDownload(t *testing.T) {
	_, srv := newRelease(t, kubeV, etcdV)
	dir := t.TempDir()
	left := filepath.Join(dir, tmpPrefix+"123")
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "kube-apiserver"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, reason := fetch(t, envFor(srv), dir, "kube-apiserver"); code != 0 {
		t.Fatalf("exit %d (%s), want 0", code, reason)
	}
	assertCache(t, dir, "kube-apiserver")
}

// A host that stops sending mid-body fails the download once no data came for the stall timeout.
func TestDownloadStalled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte("#!/bin/sh\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for the handler
	dir := t.TempDir()
	f := &fetcher{client: newClient(), dir: dir, stall: 50 * time.Millisecond}
	path := filepath.Join(dir, "kube-apiserver")
	err := f.download(context.Background(), srv.URL+"/kube-apiserver", path, make([]byte, sha256.Size))
	if err == nil || !strings.Contains(err.Error(), "/kube-apiserver: no data for 50ms") {
		t.Fatalf("download: %v, want the stall named", err)
	}
	assertCache(t, dir)
}

// The release hosts redirect to their CDNs; a redirect that leaves HTTPS is refused.
func TestRedirectFromHTTPSToHTTPRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(sumHex(nil)))
	}))
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/kube-apiserver.sha256", http.StatusFound))
	t.Cleanup(tlsSrv.Close)
	client := newClient()
	client.Transport.(*http.Transport).TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig
	f := &fetcher{client: client, stall: time.Minute}
	_, err := f.publishedSum(context.Background(), tlsSrv.URL+"/kube-apiserver.sha256", "")
	if err == nil || !strings.Contains(err.Error(), "refused a redirect from HTTPS to "+plain.URL) {
		t.Fatalf("publishedSum: %v, want the redirect refused", err)
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-kube", kubeV, "kube-apiserver"},
		{"-dir", dir, "-kube", kubeV},
		{"-dir", dir, "-kube", kubeV, "kwok"},
		{"-dir", dir, "-kube", kubeV, "etcd"},
		{"-dir", dir, "-etcd", etcdV, "kubelet"},
		{"-dir", filepath.Join(dir, "missing"), "-kube", kubeV, "kubelet"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if stderr.Len() == 0 {
			t.Errorf("%q: no message", args)
		}
	}
}

// hack/build-controlplane.sh, the caller, against the local release host: a verified download fills
// the cache folder and builds nothing; a refused one says why and installs nothing; a complete cache
// folder makes the script a no-op. MRTR_CONTROLPLANE_FROM=download stands in for the source build a
// failure would start in the default mode (minutes of compiling).
func TestBuildControlplaneScript(t *testing.T) {
	for _, tool := range []string{"bash", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("hack/build-controlplane.sh needs %s: %v", tool, err)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "build-controlplane.sh"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	pin := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=(v\S+)$`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("%s pins no %s", script, name)
		}
		return string(m[1])
	}
	kube, etcd := pin("KUBE_VERSION"), pin("ETCD_VERSION")
	runScript := func(t *testing.T, srv *httptest.Server, cache string) (string, string, error) {
		t.Helper()
		cmd := exec.Command("bash", script, "envtest")
		cmd.Env = append(os.Environ(), "MRTR_TOOLS_CACHE="+cache, "MRTR_CONTROLPLANE_FROM=download",
			k8sURLEnv+"="+srv.URL+"/k8s", etcdURLEnv+"="+srv.URL+"/etcd")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("stderr:\n%s", stderr.String())
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		return lines[len(lines)-1], stderr.String(), err
	}
	cacheDir := func(t *testing.T, cache string) string {
		t.Helper()
		matches, err := filepath.Glob(filepath.Join(cache, "controlplane-k8s-"+kube+"-etcd-"+etcd+"-kwok-*"))
		if err != nil || len(matches) != 1 {
			t.Fatalf("the script's cache folder under %s: %q, %v", cache, matches, err)
		}
		return matches[0]
	}
	t.Run("verified", func(t *testing.T) {
		r, srv := newRelease(t, kube, etcd)
		cache := t.TempDir()
		dir, stderr, err := runScript(t, srv, cache)
		if err != nil {
			t.Fatalf("script: %v", err)
		}
		if want := cacheDir(t, cache); dir != want {
			t.Fatalf("script printed %q last, want its cache folder %q", dir, want)
		}
		if !strings.Contains(stderr, "downloaded etcd kube-apiserver in ") || strings.Contains(stderr, "building") {
			t.Errorf("stderr does not say the binaries were downloaded, and only that")
		}
		assertCache(t, dir, etcdBinary, "kube-apiserver")

		// Complete now: nothing is asked for, nothing said, the same folder printed.
		asked := len(r.requested())
		again, stderr, err := runScript(t, srv, cache)
		if err != nil || again != dir || stderr != "" {
			t.Errorf("second run: %v, printed %q, said %q; want a silent no-op printing %q", err, again, stderr, dir)
		}
		if got := r.requested(); len(got) != asked {
			t.Errorf("second run asked the release host for %q", got[asked:])
		}
	})
	t.Run("refused", func(t *testing.T) {
		r, srv := newRelease(t, kube, etcd)
		r.set(kubePath(kube, "kube-apiserver"), []byte("#!/bin/sh\necho tampered\n"))
		cache := t.TempDir()
		_, stderr, err := runScript(t, srv, cache)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("script: %v, want exit 1", err)
		}
		want := "build-controlplane: downloading kube-apiserver " + kube + " failed ("
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, ": refused); MRTR_CONTROLPLANE_FROM=download: building nothing\n") {
			t.Errorf("stderr lacks the one line of reason %q...: refused); ...", want)
		}
		assertCache(t, cacheDir(t, cache), etcdBinary)
	})
}
