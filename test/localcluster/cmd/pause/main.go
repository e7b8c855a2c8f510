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

// Command pause is the local cluster's pod sandbox: the process that holds a pod's namespaces while
// its containers come and go, as registry.k8s.io/pause does (which cannot be pulled here). As PID 1
// of the pod it reaps whatever is reparented to it, and it exits on SIGTERM or SIGINT, which is how
// containerd stops a sandbox. It is built static and put on an image by the local cluster itself.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-children:
			// Reap every child that has exited; one SIGCHLD may stand for several.
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
