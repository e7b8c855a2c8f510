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

// Command image builds the manager's container image without a container engine (`make image`):
// the static manager binary on a distroless-like base assembled here, because the distroless base
// cannot be pulled. It writes the image twice, as an OCI image layout (for skopeo, crane, umoci,
// test/container), as that layout in one tar (for `ctr images import`, the local cluster's real node)
// and as a docker-archive (for `docker load`), and prints its digest and sizes. Given one binary per
// platform it makes an image index of them; -push sends the result to the tag's registry. -entrypoint puts
// another static program on the same base: the local cluster builds its example-server and pause
// images so.
//
// The build is reproducible: every timestamp is SOURCE_DATE_EPOCH (0 when unset), tar entries are
// sorted and carry numeric owners only, and gzip writes no name or time, so the same binary and CA
// bundle always give the same digest.
//
// It is a module of its own, as hack/promrules is: a tool of the build, not of the operator.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	o := options{}
	var binaries string
	flag.StringVar(&binaries, "binary", "bin/manager-static",
		"The manager binary: static (CGO_ENABLED=0), for Linux. Several, comma-separated, one per platform, make an image index.")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt",
		"The PEM bundle of CA certificates the image trusts (Debian's ca-certificates package).")
	flag.StringVar(&o.tag, "tag", "controller:latest", "The image's name and tag, as in `make image IMG=...`.")
	flag.StringVar(&o.outDir, "out", "bin/image",
		"Where oci/ (the OCI layout), oci.tar (the same as one tar, for ctr images import) and <entrypoint's name>.tar (the docker-archive) go.")
	flag.StringVar(&o.entrypoint, "entrypoint", binaryPath,
		"Where the binary goes in the image, and what it runs: another program on the same base "+
			"(the local cluster's example server and pause container).")
	flag.StringVar(&o.title, "title", imageTitle, "The org.opencontainers.image.title label.")
	flag.StringVar(&o.source, "source", "https://github.com/mrtr-dev/mrtr-operator", "The org.opencontainers.image.source label.")
	flag.StringVar(&o.version, "version", "dev", "The org.opencontainers.image.version label.")
	flag.StringVar(&o.revision, "revision", "", "The org.opencontainers.image.revision label: the commit the binary is built from.")
	flag.BoolVar(&o.push, "push", false,
		"Push the image to the registry of -tag, with the credentials of ~/.docker/config.json (docker login, crane auth login).")
	var layers, env repeated
	flag.Var(&layers, "layer", "A directory whose tree is a layer of the image, in the order given (repeatable): "+
		"an image of trees (a Debian root, a server with its runtime) instead of a binary on the distroless-like base.")
	flag.StringVar(&o.trees.cmd, "cmd", "", `With -layer: the entrypoint, as a JSON array ("["/usr/bin/python3","/app/server.py"]").`)
	flag.Var(&env, "env", "With -layer: VAR=value added to the image's environment (repeatable).")
	flag.Parse()
	o.binaries = strings.Split(binaries, ",")
	o.trees.layers, o.trees.env = layers, env

	epoch, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fail(err)
	}
	o.created = epoch

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := build(ctx, o)
	if err != nil {
		fail(err)
	}
	if len(res.images) > 1 {
		fmt.Printf("image index %s %s: %d platforms\n", o.tag, res.digest, len(res.images))
	}
	for _, pi := range res.images {
		fmt.Printf("image %s %s (%s): %s compressed, %s uncompressed, %d layers\n",
			o.tag, pi.digest, pi.platform, mib(pi.compressed), mib(pi.uncompressed), pi.layers)
	}
	fmt.Printf("  OCI image layout: %s (skopeo inspect oci:%s:%s)\n", res.layoutDir, res.layoutDir, o.tag)
	fmt.Printf("  OCI layout tar:   %s (ctr -n k8s.io images import %s)\n", res.layoutTar, res.layoutTar)
	for _, pi := range res.images {
		fmt.Printf("  docker-archive:   %s (docker load -i %s)\n", pi.archive, pi.archive)
	}
	if res.pushed != "" {
		fmt.Printf("  pushed:           %s\n", res.pushed)
	}
}

// sourceDateEpoch reads SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/).
func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil || s < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970", v)
	}
	return time.Unix(s, 0).UTC(), nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
