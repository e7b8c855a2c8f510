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

// Command brokenconsumer is a keyring consumer with the mistakes the conformance check exists to
// catch, each chosen by a flag, so that TestBrokenConsumer can show every check fail for its own
// reason. It polls the files instead of watching them and acknowledges with a naive PATCH.
//
//	-lenient     parse keyring.json with encoding/json (unknown fields pass) and say nothing on errors
//	-links       read <dir>/keyring.json and <dir>/token-ttl through their own links, not ..data
//	-no-retry    send each acknowledgement once, whatever the answer
//	-cache-token read the service account token once, at start
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

var (
	lenient    = flag.Bool("lenient", false, "accept what encoding/json accepts, report nothing")
	links      = flag.Bool("links", false, "read each file through its user-visible link")
	noRetry    = flag.Bool("no-retry", false, "never retry an acknowledgement")
	cacheToken = flag.Bool("cache-token", false, "read the token once")
)

var out sync.Mutex

func say(word, fp, ttl string) {
	out.Lock()
	defer out.Unlock()
	fmt.Printf("%s %s %s\n", word, fp, ttl)
}

func main() {
	flag.Parse()
	dir := os.Getenv("MRTR_KEYRING_DIR")
	sa := os.Getenv(ack.ServiceAccountDirEnv)
	ca, err := os.ReadFile(filepath.Join(sa, "ca.crt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	token, _ := os.ReadFile(filepath.Join(sa, "token"))
	url := "https://" + os.Getenv("KUBERNETES_SERVICE_HOST") + ":" + os.Getenv("KUBERNETES_SERVICE_PORT") +
		"/api/v1/namespaces/" + os.Getenv("POD_NAMESPACE") + "/pods/" + os.Getenv("POD_NAME") + "?fieldManager=" + ack.FieldManager
	annotation := ack.AnnotationKey(os.Getenv("MRTR_SECRET_NAME"))

	var mu sync.Mutex
	serving, servingTTL := "", "none"
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "serving?" {
				mu.Lock()
				say("serving", serving, servingTTL)
				mu.Unlock()
			}
		}
	}()

	acked, pending := "", ""
	for {
		fp, ttl, err := load(dir)
		switch {
		case err != nil && !*lenient:
			fmt.Fprintln(os.Stderr, "brokenconsumer:", err)
		case err == nil:
			mu.Lock()
			if fp != serving || ttl != servingTTL {
				serving, servingTTL = fp, ttl
				say("loaded", fp, ttl)
				pending = fp
			}
			mu.Unlock()
		}
		if pending != "" && pending != acked {
			if !*cacheToken {
				token, _ = os.ReadFile(filepath.Join(sa, "token"))
			}
			body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: pending}}})
			req, _ := http.NewRequest(http.MethodPatch, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/merge-patch+json")
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			resp, err := client.Do(req)
			ok := err == nil && resp.StatusCode/100 == 2
			if resp != nil {
				_ = resp.Body.Close()
			}
			if ok || *noRetry {
				acked = pending
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// load reads the keyring and its token-ttl.
func load(dir string) (fp, ttl string, err error) {
	from := dir
	if !*links {
		target, err := os.Readlink(filepath.Join(dir, "..data"))
		if err != nil {
			return "", "", err
		}
		from = filepath.Join(dir, target)
		defer func() {
			if again, rerr := os.Readlink(filepath.Join(dir, "..data")); err == nil && (rerr != nil || again != target) {
				err = fmt.Errorf("..data moved while it was read")
			}
		}()
	}
	data, err := os.ReadFile(filepath.Join(from, keyring.SecretDataKey))
	if err != nil {
		return "", "", err
	}
	var kr *keyring.Keyring
	if *lenient {
		var doc struct{ Keys []struct{ ID, Secret string } }
		if err := json.Unmarshal(data, &doc); err != nil {
			return "", "", err
		}
		var keys []keyring.Key
		for _, k := range doc.Keys {
			b, _ := base64.StdEncoding.DecodeString(k.Secret)
			keys = append(keys, keyring.NewKey(k.ID, b))
		}
		if kr, err = keyring.New(keys...); err != nil {
			return "", "", err
		}
	} else if kr, err = keyring.Parse(data); err != nil {
		return "", "", err
	}
	ttl = "none"
	if b, rerr := os.ReadFile(filepath.Join(from, keyring.TokenTTLDataKey)); rerr == nil {
		if *lenient {
			if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n > 0 {
				ttl = strconv.Itoa(n)
			}
		} else {
			d, err := keyring.ParseTokenTTL(b)
			if err != nil {
				return "", "", err
			}
			ttl = strconv.Itoa(int(d / time.Second))
		}
	}
	return kr.Fingerprint(), ttl, nil
}
