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

// Command fetchrelease downloads the release binaries of the local control plane into the cache
// folder of hack/build-controlplane.sh, each checked against the SHA-256 its release publishes before
// it is made executable or put where it would run:
//
//   - kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl from the
//     Kubernetes release host, $MRTR_K8S_RELEASE_URL/<kube>/bin/linux/<arch>/<name> (default
//     https://dl.k8s.io/release), against <name>.sha256 beside it;
//   - etcd from its release tarball, $MRTR_ETCD_RELEASE_URL/<etcd>/etcd-<etcd>-linux-<arch>.tar.gz
//     (default https://github.com/etcd-io/etcd/releases/download), against the release's SHA256SUMS.
//
// Everything is written into a private folder inside -dir first, so that a binary appears under its
// name only whole and verified: the script counts an executable of that name as done. It exits 0 when
// every named binary is in place; else 1, with one line on stdout saying what failed and why (the
// script prints it and builds the rest from source); binaries verified before the failure stay.
//
//	go run ./hack/fetchrelease -dir DIR -kube v1.37.2 -etcd v3.6.16 etcd kube-apiserver ...
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The release hosts, each overridable by its environment variable (tests point them at a local server;
// a mirror serves the same paths).
const (
	k8sURLEnv      = "MRTR_K8S_RELEASE_URL"
	etcdURLEnv     = "MRTR_ETCD_RELEASE_URL"
	defaultK8sURL  = "https://dl.k8s.io/release"
	defaultEtcdURL = "https://github.com/etcd-io/etcd/releases/download"
)

// kubeBinaries are the binaries the Kubernetes release host publishes one by one; etcd comes from its
// own release.
var kubeBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}

const etcdBinary = "etcd"

// Bounds on what is read: a release binary is about 100 MB, a checksum file a few lines. A server that
// sends more is not a release host.
const (
	maxBinary   = 1 << 30
	maxChecksum = 1 << 20
)

// Where the hosts cannot be reached the request fails at once (no DNS, no route); these bound a
// network that drops packets, so the source build takes over in seconds rather than minutes. A
// download that keeps receiving data runs as long as it needs: on a slow link it still beats the build.
const (
	dialTimeout   = 10 * time.Second
	headerTimeout = 30 * time.Second
	stallTimeout  = 60 * time.Second
)

// tmpPrefix names the private folders downloads are written into, inside the cache folder (the same
// file system, so the final rename is atomic). The script runs this command under the cache folder's
// lock, so any such folder found at the start is left over from a killed run.
const tmpPrefix = ".download-"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main with its inputs and outputs passed in, for the tests.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fetchrelease", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the cache folder the binaries go to (must exist)")
	kube := fs.String("kube", "", "the Kubernetes release, e.g. v1.37.2")
	etcd := fs.String("etcd", "", "the etcd release, e.g. v3.6.16")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	names := fs.Args()
	if err := checkArgs(*dir, *kube, *etcd, names); err != nil {
		_, _ = fmt.Fprintf(stderr, "fetchrelease: %v\n", err)
		return 2
	}
	if runtime.GOOS != "linux" {
		_, _ = fmt.Fprintf(stdout, "no download: the releases are fetched for linux only, this is %s\n", runtime.GOOS)
		return 1
	}
	f := &fetcher{
		client:      newClient(),
		k8sURL:      strings.TrimSuffix(envOr(getenv, k8sURLEnv, defaultK8sURL), "/"),
		etcdURL:     strings.TrimSuffix(envOr(getenv, etcdURLEnv, defaultEtcdURL), "/"),
		kubeVersion: *kube,
		etcdVersion: *etcd,
		arch:        runtime.GOARCH,
		dir:         *dir,
		stall:       stallTimeout,
		log:         stderr,
	}
	if err := f.fetchAll(ctx, names); err != nil {
		_, _ = fmt.Fprintln(stdout, oneLine(err.Error()))
		return 1
	}
	return 0
}

func checkArgs(dir, kube, etcd string, names []string) error {
	switch {
	case dir == "":
		return errors.New("-dir is required")
	case len(names) == 0:
		return errors.New("name at least one binary: etcd, " + strings.Join(kubeBinaries, ", "))
	}
	for _, n := range names {
		switch {
		case n == etcdBinary && etcd == "":
			return errors.New("etcd needs -etcd, the release to fetch")
		case slices.Contains(kubeBinaries, n) && kube == "":
			return fmt.Errorf("%s needs -kube, the release to fetch", n)
		case n != etcdBinary && !slices.Contains(kubeBinaries, n):
			return fmt.Errorf("no release binary is named %q: etcd, %s", n, strings.Join(kubeBinaries, ", "))
		}
	}
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("-dir %s is not a folder", dir)
	}
	return nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// oneLine keeps the reason on the one line the script prints.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone() // keeps HTTPS_PROXY and friends
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = headerTimeout
	return &http.Client{
		Transport: tr,
		// The release hosts redirect to their CDNs; a redirect from HTTPS to plain HTTP would let
		// anyone on the path swap a checksum file together with its binary.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("refused a redirect from HTTPS to %s", req.URL.Redacted())
			}
			return nil
		},
	}
}

type fetcher struct {
	client      *http.Client
	k8sURL      string
	etcdURL     string
	kubeVersion string
	etcdVersion string
	arch        string
	dir         string
	tmp         string // the private folder inside dir, for one run
	stall       time.Duration
	log         io.Writer
}

// fetchAll puts each named binary missing from the cache folder there. After a failure it fetches no
// more from the same host (the next ones would most likely fail the same way) but still tries the
// other host's: each binary that arrives verified is a build saved.
func (f *fetcher) fetchAll(ctx context.Context, names []string) error {
	if err := f.removeLeftovers(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(f.dir, tmpPrefix)
	if err != nil {
		return err
	}
	f.tmp = tmp
	defer func() { _ = os.RemoveAll(tmp) }()

	var failures []string
	kubeFailed := false
	if slices.Contains(names, etcdBinary) && !f.installed(etcdBinary) {
		if err := f.fetchEtcd(ctx); err != nil {
			failures = append(failures, fmt.Sprintf("downloading etcd %s failed (%v)", f.etcdVersion, err))
		}
	}
	for _, name := range names {
		if name == etcdBinary || f.installed(name) {
			continue
		}
		if kubeFailed {
			break
		}
		if err := f.fetchKube(ctx, name); err != nil {
			kubeFailed = true
			failures = append(failures, fmt.Sprintf("downloading %s %s failed (%v)", name, f.kubeVersion, err))
		}
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// installed reports whether the cache folder already has an executable of that name, as the script
// counts it.
func (f *fetcher) installed(name string) bool {
	st, err := os.Stat(filepath.Join(f.dir, name))
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func (f *fetcher) removeLeftovers() error {
	old, err := filepath.Glob(filepath.Join(f.dir, tmpPrefix+"*"))
	if err != nil {
		return err
	}
	for _, o := range old {
		if err := os.RemoveAll(o); err != nil {
			return err
		}
	}
	return nil
}

func (f *fetcher) fetchKube(ctx context.Context, name string) error {
	u := fmt.Sprintf("%s/%s/bin/linux/%s/%s", f.k8sURL, f.kubeVersion, f.arch, name)
	want, err := f.publishedSum(ctx, u+".sha256", "")
	if err != nil {
		return err
	}
	staged := filepath.Join(f.tmp, name)
	if err := f.download(ctx, u, staged, want); err != nil {
		return err
	}
	return f.install(staged, name)
}

func (f *fetcher) fetchEtcd(ctx context.Context) error {
	release := fmt.Sprintf("etcd-%s-linux-%s", f.etcdVersion, f.arch)
	asset := release + ".tar.gz"
	base := f.etcdURL + "/" + f.etcdVersion
	want, err := f.publishedSum(ctx, base+"/SHA256SUMS", asset)
	if err != nil {
		return err
	}
	tarball := filepath.Join(f.tmp, asset)
	if err := f.download(ctx, base+"/"+asset, tarball, want); err != nil {
		return err
	}
	// Only the verified tarball is opened.
	staged := filepath.Join(f.tmp, etcdBinary)
	if err := extract(tarball, release+"/"+etcdBinary, staged); err != nil {
		return fmt.Errorf("%s: %w", asset, err)
	}
	return f.install(staged, etcdBinary)
}

// install makes a verified binary executable and renames it to its place in one step, so the script
// never sees a part of it.
func (f *fetcher) install(staged, name string) error {
	if err := os.Chmod(staged, 0o755); err != nil {
		return err
	}
	if err := os.Rename(staged, filepath.Join(f.dir, name)); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(f.log, "fetchrelease: %s verified and installed\n", name)
	return nil
}

// publishedSum reads the SHA-256 a release publishes: the first field of a file that holds one (the
// Kubernetes release host's <name>.sha256), or the line that names asset in a sha256sum listing
// (etcd's SHA256SUMS).
func (f *fetcher) publishedSum(ctx context.Context, u, asset string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.stall) // a few lines: no reason to wait longer
	defer cancel()
	body, err := f.get(ctx, u)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	data, err := io.ReadAll(io.LimitReader(body, maxChecksum+1))
	if err != nil {
		return nil, f.describe(u, err)
	}
	if len(data) > maxChecksum {
		return nil, fmt.Errorf("%s: over %d bytes, not a checksum file", u, maxChecksum)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || (asset != "" && (len(fields) < 2 || strings.TrimPrefix(fields[1], "*") != asset)) {
			continue
		}
		sum, err := hex.DecodeString(fields[0])
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("%s: %q is not a SHA-256", u, fields[0])
		}
		return sum, nil
	}
	if asset != "" {
		return nil, fmt.Errorf("%s lists no %s", u, asset)
	}
	return nil, fmt.Errorf("%s is empty", u)
}

// download writes the body at u to path (created, never executable) and keeps it only if its SHA-256
// is want.
func (f *fetcher) download(ctx context.Context, u, path string, want []byte) (err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := time.AfterFunc(f.stall, func() { cancel(fmt.Errorf("no data for %s", f.stall)) })
	defer stalled.Stop()

	body, err := f.get(ctx, u)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), &progressReader{r: io.LimitReader(body, maxBinary+1), timer: stalled, stall: f.stall})
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return f.describe(u, err)
	}
	if n > maxBinary {
		return fmt.Errorf("%s: over %d bytes, not a release binary", u, maxBinary)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return fmt.Errorf("%s: SHA-256 %x, the release publishes %x: refused", u, got, want)
	}
	return nil
}

// progressReader restarts the stall timer whenever data arrives.
type progressReader struct {
	r     io.Reader
	timer *time.Timer
	stall time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.timer.Reset(p.stall)
	}
	return n, err
}

// get returns the body of a 200 answer to GET u.
func (f *fetcher) get(ctx context.Context, u string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return nil, f.describe(u, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return resp.Body, nil
}

// describe names the host of a transport failure first: "dl.k8s.io unreachable: ..." says more to a
// newcomer than Go's `Get "https://...": dial tcp: ...`.
func (f *fetcher) describe(u string, err error) error {
	host := u
	if p, perr := url.Parse(u); perr == nil {
		host = p.Host
	}
	if uerr, ok := errors.AsType[*url.Error](err); ok {
		err = uerr.Err
	}
	_, isOp := errors.AsType[*net.OpError](err)
	if nerr, ok := errors.AsType[net.Error](err); isOp || (ok && nerr.Timeout()) {
		return fmt.Errorf("%s unreachable: %w", host, err)
	}
	return fmt.Errorf("%s: %w", u, err)
}

// extract copies the regular file member of a .tar.gz to dst (created, never executable).
func extract(tarball, member, dst string) (err error) {
	in, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	gz, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("holds no %s", member)
		}
		if err != nil {
			return err
		}
		if strings.TrimPrefix(hdr.Name, "./") != member {
			continue
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Size > maxBinary {
			return fmt.Errorf("%s is not a regular file of at most %d bytes", member, maxBinary)
		}
		return copyFile(tr, dst)
	}
}

func copyFile(r io.Reader, dst string) (err error) {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	_, err = io.Copy(out, r)
	return err
}
