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

package keyring_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Example keys: 32 recognisable bytes each, never use such keys for real.
var (
	keyA = strings.Repeat("QUFB", 10) + "QUE=" // "A" * 32
	keyB = strings.Repeat("QkJC", 10) + "QkI=" // "B" * 32
)

func doc(ids ...string) []byte {
	secrets := map[string]string{"a": keyA, "b": keyB}
	entries := make([]string, 0, len(ids))
	for _, id := range ids {
		entries = append(entries, `{"id":"`+id+`","secret":"`+secrets[id]+`"}`)
	}
	return []byte(`{"keys":[` + strings.Join(entries, ",") + `]}`)
}

func ExampleParse() {
	r, err := keyring.Parse(doc("b", "a"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("seals with:", r.Primary().ID())
	fmt.Println("opens with:", r.IDs())
	k, _ := r.Lookup("a")
	fmt.Println(k) // printing a key shows its id and length only

	_, err = keyring.Parse([]byte(`{"keys":[{"id":"a","secret":"` + keyA + `"},{"id":"a","secret":"` + keyB + `"}]}`))
	fmt.Println(err)
	// Output:
	// seals with: b
	// opens with: [b a]
	// Key{id: "a", secret: <redacted 32 bytes>}
	// keyring.json: keys[1] (id "a"): id already used by keys[0]
}

func ExampleNewFileSource() {
	dir, err := os.MkdirTemp("", "mrtr-keyring")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // a leftover temporary directory harms nothing
	path := filepath.Join(dir, keyring.SecretDataKey)
	if err := os.WriteFile(path, doc("a"), 0o600); err != nil {
		log.Fatal(err)
	}

	// In a workload: path is the mounted Secret's keyring.json.
	src, err := keyring.NewFileSource(path, keyring.WithErrorHandler(func(err error) {
		log.Printf("keyring not reloaded, still serving the last good one: %v", err)
	}))
	if err != nil {
		log.Fatal(err) // no valid keyring at startup: do not serve
	}
	changed := make(chan *keyring.Keyring, 1)
	src.OnChange(func(r *keyring.Keyring) { changed <- r })
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		if err := src.Start(ctx); err != nil {
			log.Print(err)
		}
	}()
	fmt.Println("serving:", src.Keyring().IDs())

	// The operator's first rotation step: b is accepted, a still seals. Here a plain rewrite; the
	// kubelet's symlink swap is followed the same way.
	if err := os.WriteFile(path, doc("a", "b"), 0o600); err != nil {
		log.Fatal(err)
	}
	select {
	case r := <-changed:
		fmt.Println("changed:", r.IDs())
	case <-time.After(time.Minute):
		fmt.Println("no change")
	}
	fmt.Println("serving:", src.Keyring().IDs())
	// Output:
	// serving: [a]
	// changed: [a b]
	// serving: [a b]
}

func ExampleFromEnv() {
	if err := os.Setenv(keyring.EnvVar, string(doc("a"))); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.Unsetenv(keyring.EnvVar) }() // the process ends with the example

	r, err := keyring.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	src := keyring.Static(r) // the environment only changes with a restart
	fmt.Println(src.Keyring().IDs())
	// Output: [a]
}

func ExampleMarshal() {
	k, err := keyring.GenerateKey("2026-07", keyring.MinSecretBytes)
	if err != nil {
		log.Fatal(err)
	}
	r, err := keyring.New(k)
	if err != nil {
		log.Fatal(err)
	}
	data, err := keyring.Marshal(r) // the Secret's keyring.json: it holds the key bytes
	if err != nil {
		log.Fatal(err)
	}
	back, err := keyring.Parse(data)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Equal(r), back.Fingerprint() == r.Fingerprint())
	// Output: true true
}
