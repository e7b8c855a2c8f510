//go:build unix && !linux

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

package testenv

import "syscall"

// sysProcAttr puts a child in its own process group, so that Stop can signal everything it spawned.
// Only Linux has a parent-death signal: elsewhere a SIGKILL of the caller leaves the children running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// deathSignalSupported reports whether children die with us even when we are killed with SIGKILL.
const deathSignalSupported = false
