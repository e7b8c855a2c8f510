//go:build e2e && linux

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

package container_test

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mrtr-dev/mrtr-operator/test/container"
)

// These tests run the manager's image (make image: IMAGE_LAYOUT or bin/image/oci, and IMG or
// controller:latest) under runc, for real; they need root and runc (apt-get install runc). If runc
// cannot work here, they fail with Available's reason.

func image(t *testing.T) (layout, ref string) {
	t.Helper()
	layout = os.Getenv("IMAGE_LAYOUT")
	if layout == "" {
		layout = "../../bin/image/oci"
	}
	layout, err := filepath.Abs(layout)
	if err != nil {
		t.Fatal(err)
	}
	ref = os.Getenv("IMG")
	if ref == "" {
		ref = "controller:latest"
	}
	if err := container.Available(t.Context(), layout, ref); err != nil {
		t.Fatalf("cannot run the image under runc: %v", err)
	}
	return layout, ref
}

func TestHelpAndExitStatus(t *testing.T) {
	g := NewWithT(t)
	layout, ref := image(t)

	c, err := container.Run(t.Context(), container.Spec{
		Layout: layout, Ref: ref, Args: []string{"--help"}, ReadOnlyRoot: true, WorkDir: t.TempDir(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Wait()).To(Succeed())
	g.Expect(os.ReadFile(c.LogPath())).To(ContainSubstring("Usage of /manager:"))
	g.Expect(c.Stop()).To(Succeed())

	c, err = container.Run(t.Context(), container.Spec{
		Layout: layout, Ref: ref, Args: []string{"--no-such-flag"}, WorkDir: t.TempDir(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Wait()).To(MatchError(And(ContainSubstring("exit status 2"), ContainSubstring(c.LogPath()))))
	g.Expect(os.ReadFile(c.LogPath())).To(ContainSubstring("flag provided but not defined: -no-such-flag"))
	g.Expect(c.Stop()).To(Succeed())
}

func TestRuncErrorsAreReported(t *testing.T) {
	g := NewWithT(t)
	layout, ref := image(t)

	missing := filepath.Join(t.TempDir(), "no-such-dir")
	c, err := container.Run(t.Context(), container.Spec{
		Layout: layout, Ref: ref, WorkDir: t.TempDir(),
		Mounts: []container.Mount{{Source: missing, Destination: container.ServiceAccountDir}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Wait()).To(MatchError(And(ContainSubstring("runc: "), ContainSubstring(missing))))
	g.Expect(c.PID()).To(BeZero(), "the process never ran")
	g.Expect(c.Stop()).To(Succeed())
}

// apiServer is a TLS server on 127.0.0.1 that reports each request and then holds it open until
// the test ends, so that a manager pointed at it stays up, waiting for discovery.
type apiServer struct {
	*httptest.Server
	requests chan *http.Request
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{requests: make(chan *http.Request, 16)}
	release := make(chan struct{})
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.requests <- r:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); s.Close() })
	return s
}

// serviceAccount writes what a kubelet mounts at container.ServiceAccountDir for s.
func (s *apiServer) serviceAccount(t *testing.T, token string) string {
	dir := filepath.Join(t.TempDir(), "serviceaccount")
	// Readable by the container's user: the bind mount shows this directory's own mode.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	for name, content := range map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte("mrtr-system")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// managerSpec runs the manager in-cluster against s, as a pod with hostNetwork would.
func (s *apiServer) managerSpec(t *testing.T, layout, ref, saDir string) container.Spec {
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return container.Spec{
		Layout: layout, Ref: ref, Name: "manager", ReadOnlyRoot: true, WorkDir: t.TempDir(),
		// The host's network: no port of the host's own.
		Args:   []string{"--health-probe-bind-address=0"},
		Env:    []string{"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()},
		Mounts: []container.Mount{{Source: saDir, Destination: container.ServiceAccountDir, ReadOnly: true}},
	}
}

func TestManagerRunsAsNonrootOnAReadOnlyRoot(t *testing.T) {
	g := NewWithT(t)
	layout, ref := image(t)
	api := newAPIServer(t)
	const token = "token-of-the-manager"
	spec := api.managerSpec(t, layout, ref, api.serviceAccount(t, token))

	c, err := container.Run(t.Context(), spec)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = c.Stop()
		if t.Failed() {
			out, _ := os.ReadFile(c.LogPath())
			t.Logf("%s:\n%s", c.LogPath(), out)
		}
	})

	// Its first request proves the host's network, the mounted token and the trust in its ca.crt.
	select {
	case r := <-api.requests:
		g.Expect(r.URL.Path).To(HavePrefix("/api"))
		g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + token))
	case <-c.Done():
		t.Fatalf("the manager exited before reaching the API server: %v", c.Wait())
	case <-time.After(time.Minute):
		t.Fatal("no request from the manager in a minute")
	}

	pid := c.PID()
	g.Expect(pid).To(BeNumerically(">", 0))
	status := procStatus(t, pid)
	g.Expect(status).To(HaveKeyWithValue("Uid", "65532\t65532\t65532\t65532"), "the image's user, 65532")
	g.Expect(status).To(HaveKeyWithValue("Gid", "65532\t65532\t65532\t65532"))
	g.Expect(status).To(HaveKeyWithValue("Groups", ""))
	g.Expect(status).To(HaveKeyWithValue("NoNewPrivs", "1"))
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		g.Expect(status).To(HaveKeyWithValue(set, "0000000000000000"), "no capabilities: %s", set)
	}
	g.Expect(namespace(t, pid, "net")).To(Equal(namespace(t, os.Getpid(), "net")), "the host's network")
	for _, ns := range []string{"pid", "mnt", "ipc", "uts"} {
		g.Expect(namespace(t, pid, ns)).NotTo(Equal(namespace(t, os.Getpid(), ns)), "its own %s namespace", ns)
	}
	mounts := mountOptions(t, pid)
	g.Expect(mounts).To(HaveKeyWithValue("/", ContainElement("ro")), "a read-only root")
	g.Expect(mounts).To(HaveKeyWithValue(container.ServiceAccountDir, ContainElement("ro")))

	// The files as the image has them: root's, but for the nonroot user's home.
	root := fmt.Sprintf("/proc/%d/root", pid)
	g.Expect(owner(t, root+"/manager")).To(Equal("0:0 -rwxr-xr-x"))
	g.Expect(owner(t, root+"/etc/ssl/certs/ca-certificates.crt")).To(Equal("0:0 -rw-r--r--"))
	g.Expect(owner(t, root+"/tmp")).To(Equal("0:0 dtrwxrwxrwx"))
	g.Expect(owner(t, root+"/home/nonroot")).To(Equal("65532:65532 drwx------"))

	g.Expect(c.Stop()).To(Succeed())
	g.Expect(c.Done()).To(BeClosed())
	g.Expect(alive(pid)).To(BeFalse())
	g.Expect(filepath.Join(spec.WorkDir, "runc-state", c.ID())).NotTo(BeAnExistingFile(), "runc's state is removed")
	g.Expect(c.Stop()).To(Succeed(), "a second Stop is a no-op")
}

// helperEnv makes the test binary, run again by TestNoContainerOutlivesAKilledParent, start the
// container described by its JSON value, print its pid and block until it is killed.
const helperEnv = "CONTAINER_TEST_HELPER_SPEC"

func TestNoContainerOutlivesAKilledParent(t *testing.T) {
	if spec := os.Getenv(helperEnv); spec != "" {
		runHelper(spec)
		return
	}
	g := NewWithT(t)
	layout, ref := image(t)
	api := newAPIServer(t)
	spec := api.managerSpec(t, layout, ref, api.serviceAccount(t, "t"))
	raw, err := json.Marshal(spec)
	g.Expect(err).NotTo(HaveOccurred())

	helper := exec.Command(os.Args[0], "-test.run=^TestNoContainerOutlivesAKilledParent$")
	helper.Env = append(os.Environ(), helperEnv+"="+string(raw))
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helper.Start()).To(Succeed())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	pid, id := 0, ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "CONTAINER %d %s", &pid, &id); err == nil {
			break
		}
	}
	g.Expect(pid).To(BeNumerically(">", 0), "the helper never reported its container")
	// Should the container outlive the helper after all, it goes with this test.
	t.Cleanup(func() {
		_ = exec.Command("runc", "--root", filepath.Join(spec.WorkDir, "runc-state"), "delete", "--force", id).Run()
	})
	select {
	case <-api.requests:
	case <-time.After(time.Minute):
		t.Fatal("the helper's manager never reached the API server")
	}

	g.Expect(helper.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = helper.Wait()
	g.Eventually(alive).WithArguments(pid).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).
		Should(BeFalse(), "the container's process %d outlived its killed parent", pid)
	state := filepath.Join(spec.WorkDir, "runc-state", id)
	g.Eventually(func() bool { _, err := os.Stat(state); return os.IsNotExist(err) }).WithTimeout(30*time.Second).
		WithPolling(50*time.Millisecond).Should(BeTrue(), "runc deletes the container when it ends")
}

func runHelper(raw string) {
	var spec container.Spec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	c, err := container.Run(context.Background(), spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	fmt.Printf("CONTAINER %d %s\n", c.PID(), c.ID())
	select {} // never stopped: the parent kills us with SIGKILL
}

// procStatus reads /proc/<pid>/status as a map of its fields.
func procStatus(t *testing.T, pid int) map[string]string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func namespace(t *testing.T, pid int, ns string) string {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// mountOptions maps each mount point the process sees to its per-mount options (mountinfo's
// sixth field); a later mount on the same point wins, as it hides the earlier one.
func mountOptions(t *testing.T, pid int) map[string][]string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 5 {
			m[f[4]] = strings.Split(f[5], ",")
		}
	}
	return m
}

func owner(t *testing.T, p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d %s", st.Uid, st.Gid, fi.Mode())
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
