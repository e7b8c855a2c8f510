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
//	-insecure    do not verify the API server's certificate
//	-follow      follow redirects (Go's http.Client default)
//	-proxy       send the acknowledgements through $HTTPS_PROXY
//	-log-repr    print each key it loads as Python's bytes repr (b'\x8f…')
//	-log-ints    print each key it loads as a list of ints ([143, 3, …])
//	-log-buffer  print each key it loads as Node prints a Buffer (<Buffer 8f 03 …>)
//	-stale-seal  seal with the keyring it started with
//	-long-ttl    seal tokens that live 600 s, whatever token-ttl says
//
// It answers seal? with a Signed (mrtr2) token of keys[0] of the keyring it serves, living 60 s.
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
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

var (
	lenient    = flag.Bool("lenient", false, "accept what encoding/json accepts, report nothing")
	links      = flag.Bool("links", false, "read each file through its user-visible link")
	noRetry    = flag.Bool("no-retry", false, "never retry an acknowledgement")
	cacheToken = flag.Bool("cache-token", false, "read the token once")
	insecure   = flag.Bool("insecure", false, "skip TLS verification")
	follow     = flag.Bool("follow", false, "follow redirects")
	useProxy   = flag.Bool("proxy", false, "use $HTTPS_PROXY")
	logRepr    = flag.Bool("log-repr", false, "print keys as Python's bytes repr")
	logInts    = flag.Bool("log-ints", false, "print keys as a list of ints")
	logBuffer  = flag.Bool("log-buffer", false, "print keys as Node prints a Buffer")
	staleSeal  = flag.Bool("stale-seal", false, "seal with the first keyring")
	longTTL    = flag.Bool("long-ttl", false, "seal tokens of 600 s")
)

// logKeys prints the keys of kr in the spelling its flag chooses: the mistake of a debug line.
func logKeys(kr *keyring.Keyring) {
	for _, k := range kr.Keys() {
		b := k.Secret()
		var parts []string
		if *logRepr {
			var sb strings.Builder
			for _, c := range b {
				if c >= 0x20 && c < 0x7f && c != '\\' && c != '\'' {
					sb.WriteByte(c)
				} else {
					fmt.Fprintf(&sb, `\x%02x`, c)
				}
			}
			fmt.Fprintf(os.Stderr, "DEBUG key %s: b'%s'\n", k.ID(), sb.String())
		}
		if *logInts {
			for _, c := range b {
				parts = append(parts, strconv.Itoa(int(c)))
			}
			fmt.Printf("debug: key %s = [%s]\n", k.ID(), strings.Join(parts, ", "))
			parts = nil
		}
		if *logBuffer {
			for _, c := range b {
				parts = append(parts, fmt.Sprintf("%02x", c))
			}
			fmt.Printf("key %s <Buffer %s>\n", k.ID(), strings.Join(parts, " "))
		}
	}
}

// seal seals the probe's token with ring's keys[0].
func seal(ring *keyring.Keyring) (string, error) {
	ttl := 60 * time.Second
	if *longTTL {
		ttl = 600 * time.Second
	}
	codec, err := token.NewSigned(keyring.Static(ring), token.SignedTTL(ttl))
	if err != nil {
		return "", err
	}
	return codec.Seal(token.Binding{Method: "tools/call", Params: []byte(`{"name":"conformance"}`), Principal: token.Anonymous},
		[]byte(`{"probe":true}`))
}

var out sync.Mutex

func say(words ...string) {
	out.Lock()
	defer out.Unlock()
	fmt.Println(strings.TrimSpace(strings.Join(words, " ")))
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
	// -insecure is the mistake shown.
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, InsecureSkipVerify: *insecure}} //nolint:gosec
	if *useProxy {
		// Go's ProxyFromEnvironment never proxies a loopback address, the check's API server: name it.
		proxy, _ := neturl.Parse(os.Getenv("HTTPS_PROXY"))
		transport.Proxy = http.ProxyURL(proxy)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: transport}
	if !*follow {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	saToken, _ := os.ReadFile(filepath.Join(sa, "token"))
	url := "https://" + os.Getenv("KUBERNETES_SERVICE_HOST") + ":" + os.Getenv("KUBERNETES_SERVICE_PORT") +
		"/api/v1/namespaces/" + os.Getenv("POD_NAMESPACE") + "/pods/" + os.Getenv("POD_NAME") + "?fieldManager=" + ack.FieldManager
	annotation := ack.AnnotationKey(os.Getenv("MRTR_SECRET_NAME"))

	var mu sync.Mutex
	serving, servingTTL := "", "none"
	var ring, first *keyring.Keyring
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "serving?":
				mu.Lock()
				say("serving", serving, servingTTL)
				mu.Unlock()
			case "seal?":
				mu.Lock()
				r := ring
				if *staleSeal {
					r = first
				}
				mu.Unlock()
				tok, err := seal(r)
				if err != nil {
					fmt.Fprintln(os.Stderr, "brokenconsumer:", err)
					continue
				}
				say("sealed", tok, "")
			}
		}
	}()

	acked, pending := "", ""
	for {
		kr, ttl, err := load(dir)
		switch {
		case err != nil && !*lenient:
			fmt.Fprintln(os.Stderr, "brokenconsumer:", err)
		case err == nil:
			mu.Lock()
			if fp := kr.Fingerprint(); fp != serving || ttl != servingTTL {
				serving, servingTTL, ring = fp, ttl, kr
				if first == nil {
					first = kr
				}
				logKeys(kr)
				say("loaded", fp, ttl)
				pending = fp
			}
			mu.Unlock()
		}
		if pending != "" && pending != acked {
			if !*cacheToken {
				saToken, _ = os.ReadFile(filepath.Join(sa, "token"))
			}
			body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: pending}}})
			req, _ := http.NewRequest(http.MethodPatch, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/merge-patch+json")
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(saToken)))
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
func load(dir string) (kr *keyring.Keyring, ttl string, err error) {
	from := dir
	if !*links {
		target, err := os.Readlink(filepath.Join(dir, "..data"))
		if err != nil {
			return nil, "", err
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
		return nil, "", err
	}
	if *lenient {
		var doc struct{ Keys []struct{ ID, Secret string } }
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, "", err
		}
		var keys []keyring.Key
		for _, k := range doc.Keys {
			b, _ := base64.StdEncoding.DecodeString(k.Secret)
			keys = append(keys, keyring.NewKey(k.ID, b))
		}
		if kr, err = keyring.New(keys...); err != nil {
			return nil, "", err
		}
	} else if kr, err = keyring.Parse(data); err != nil {
		return nil, "", err
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
				return nil, "", err
			}
			ttl = strconv.Itoa(int(d / time.Second))
		}
	}
	return kr, ttl, nil
}
