//go:build linux

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

package container

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Mount types and options.
const (
	tmpfs                 = "tmpfs"
	nosuid, noexec, nodev = "nosuid", "noexec", "nodev"
)

// runtimeConfig is the config.json of a bundle whose rootfs/ holds img: the process and user of s
// over the image's defaults, as a kubelet would make them (Args replace the image's Cmd after its
// Entrypoint, Env adds to and overrides the image's); no capabilities and no new privileges; the
// mounts, masked and read-only /proc and /sys paths and device rules of runc's own default spec
// (`runc spec`), plus the bind mounts of s; and its own pid, mount, ipc and uts namespaces but the
// host's network, so that the process reaches an API server on 127.0.0.1 as a kubelet's
// hostNetwork pod would.
func runtimeConfig(s Spec, img ocispec.ImageConfig, hostname string) (*specs.Spec, error) {
	user := s.User
	if user == "" {
		user = img.User
	}
	uid, gid, err := parseUser(user)
	if err != nil {
		return nil, err
	}
	args := append([]string{}, img.Entrypoint...)
	if s.Args != nil {
		args = append(args, s.Args...)
	} else {
		args = append(args, img.Cmd...)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("the image has no Entrypoint or Cmd, and Spec.Args is empty: nothing to run")
	}
	cwd := img.WorkingDir
	if cwd == "" {
		cwd = "/"
	}

	// What `runc spec` writes.
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: tmpfs, Source: tmpfs, Options: []string{nosuid, "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
			Options: []string{nosuid, noexec, "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: tmpfs, Source: "shm", Options: []string{nosuid, noexec, nodev, "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{nosuid, noexec, nodev}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{nosuid, noexec, nodev, "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{nosuid, noexec, nodev, "relatime", "ro"}},
	}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Destination) {
			return nil, fmt.Errorf("mount destination %q is not an absolute path", m.Destination)
		}
		src, err := filepath.Abs(m.Source)
		if err != nil {
			return nil, err
		}
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		mounts = append(mounts, specs.Mount{
			Destination: m.Destination, Type: "bind", Source: src,
			Options: []string{"rbind", mode, nosuid, nodev},
		})
	}

	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			User: specs.User{UID: uid, GID: gid},
			Args: args,
			Env:  mergeEnv(img.Env, s.Env),
			Cwd:  cwd,
			// Every set empty, the bounding set too, said rather than left to the runtime's default.
			Capabilities:    &specs.LinuxCapabilities{},
			NoNewPrivileges: true,
		},
		Root:     &specs.Root{Path: "rootfs", Readonly: s.ReadOnlyRoot},
		Hostname: hostname,
		Mounts:   mounts,
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
			Resources: &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}},
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}, nil
}

// parseUser reads "uid:gid". Names would need the image's /etc/passwd; the images run here give ids.
func parseUser(u string) (uid, gid uint32, err error) {
	if u == "" {
		return 0, 0, nil
	}
	us, gs, ok := strings.Cut(u, ":")
	if ok {
		var uid64, gid64 uint64
		if uid64, err = strconv.ParseUint(us, 10, 32); err == nil {
			if gid64, err = strconv.ParseUint(gs, 10, 32); err == nil {
				return uint32(uid64), uint32(gid64), nil
			}
		}
	}
	return 0, 0, fmt.Errorf("user %q: only a numeric uid:gid is supported", u)
}

// mergeEnv is base with over applied: a variable of over replaces base's in place (Go programs read
// the first of duplicate variables, so a plain append would not override anything).
func mergeEnv(base, over []string) []string {
	out := append([]string{}, base...)
	at := map[string]int{}
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		at[k] = i
	}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := at[k]; ok {
			out[i] = kv
			continue
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	return out
}
