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

// Command goreplica is the Go side of the TypeScript package's tests (clients/typescript), which
// run it with `go run`:
//
//	goreplica parse FILE...   keyring.Parse of each file: one JSON line each, its fingerprint and ids or its error
//	goreplica ttl FILE...     keyring.ParseTokenTTL of each file: one JSON line each, seconds or error
//	goreplica seal            token.Signed's Seal of each JSON line on stdin ({"keys":[{"id","secret"}],
//	                          "ttl","clock","method","params","principal","state"}, the last three
//	                          JSON text): one JSON line each, {"token"} or {"error","kind"}
//	goreplica cert DIR        a CA (DIR/ca.crt) and a certificate for 127.0.0.1 it signed
//	                          (DIR/server.crt, DIR/server.key): the TLS of the fake API server
//	                          of the acknowledgement tests
//	goreplica serve -keyring-dir DIR [-replica NAME] [-ttl 300s]
//	                          an MCP server on the official Go SDK, stateless streamable HTTP, whose
//	                          get_weather tool seals its request state with token.Signed (Snodo's
//	                          mrtr2) through mcpstate, binding every member of the params as
//	                          received; it prints "keyring FINGERPRINT" for each keyring it puts
//	                          in service and "listening on HOST:PORT" once it serves.
//
// The TypeScript replica serves the same tool with the same state, so that one balancer can send
// each round to either.
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goreplica parse|ttl FILE... | goreplica serve -keyring-dir DIR")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "parse":
		err = each(os.Args[2:], func(b []byte) map[string]any {
			r, err := keyring.Parse(b)
			if err != nil {
				return map[string]any{"error": err.Error()}
			}
			return map[string]any{"fingerprint": r.Fingerprint(), "ids": r.IDs()}
		})
	case "ttl":
		err = each(os.Args[2:], func(b []byte) map[string]any {
			d, err := keyring.ParseTokenTTL(b)
			if err != nil {
				return map[string]any{"error": err.Error()}
			}
			return map[string]any{"seconds": int64(d / time.Second)}
		})
	case "serve":
		err = serve(os.Args[2:])
	case "seal":
		err = sealLines()
	case "cert":
		if len(os.Args) != 3 {
			err = fmt.Errorf("usage: goreplica cert DIR")
			break
		}
		err = writeCert(os.Args[2])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goreplica:", err)
		os.Exit(1)
	}
}

func each(files []string, f func([]byte) map[string]any) error {
	enc := json.NewEncoder(os.Stdout)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		out := f(b)
		out["file"] = filepath.Base(name)
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return nil
}

type weatherState struct {
	Location string `json:"location"`
	SealedBy string `json:"sealedBy"`
	SealKey  string `json:"sealKey"`
}

func serve(args []string) error {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	dir := fl.String("keyring-dir", "", "folder of the mounted keyring Secret")
	replica := fl.String("replica", "go", "name of this replica, in the state it seals")
	ttl := fl.Duration("ttl", 300*time.Second, "lifetime of a request state")
	listen := fl.String("listen", "127.0.0.1:0", "address to serve on")
	if err := fl.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("replica", *replica)

	src, err := keyring.NewFileSource(filepath.Join(*dir, keyring.SecretDataKey), keyring.WithErrorHandler(func(err error) {
		log.Warn("keyring reload failed, keeping the last good keyring", "err", err)
	}))
	if err != nil {
		return err
	}
	// Each keyring put in service is announced on stdout, for the test to await.
	fmt.Printf("keyring %s\n", src.Keyring().Fingerprint())
	src.OnChange(func(r *keyring.Keyring) { fmt.Printf("keyring %s\n", r.Fingerprint()) })
	go func() { _ = src.Start(ctx) }()
	codec, err := token.NewSigned(src, token.SignedTTL(*ttl))
	if err != nil {
		return err
	}
	guard := mcpstate.New(codec, mcpstate.Anonymous, mcpstate.WholeParams(mcpstate.RecordedParams),
		mcpstate.CaseSensitiveDecoding())

	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr-interop", Version: "v0.1.0"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2026-07-28"},
	})
	s.AddTool(&mcp.Tool{
		Name:        "get_weather",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			Location string `json:"location"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil || a.Location == "" {
			return nil, fmt.Errorf("get_weather needs {\"location\": string}")
		}
		if req.Params.RequestState == "" {
			st, _ := json.Marshal(weatherState{Location: a.Location, SealedBy: *replica, SealKey: src.Keyring().Primary().ID()})
			return guard.CallToolInputRequired(req, st, mcp.InputRequestMap{"github_login": &mcp.ElicitParams{
				Mode:            "form",
				Message:         "Your GitHub username?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			}})
		}
		raw, err := guard.Open(req)
		if err != nil {
			log.Warn("rejected request state", "err", err)
			return nil, err
		}
		var st weatherState
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, err
		}
		login, _ := req.Params.InputResponses["github_login"].(*mcp.ElicitResult)
		name := ""
		if login != nil {
			name, _ = login.Content["name"].(string)
		}
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Sunny in %s for %s", st.Location, name)}},
			StructuredContent: map[string]any{"location": st.Location, "login": name, "sealedBy": st.SealedBy,
				"sealKey": st.SealKey, "openedBy": *replica},
		}, nil
	})
	h := mcpstate.RecordParams(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// writeCert writes a CA and a serving certificate for 127.0.0.1 signed by it, valid for a day.
func writeCert(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mrtr test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	for name, b := range map[string]*pem.Block{
		"ca.crt":     {Type: "CERTIFICATE", Bytes: caDER},
		"server.crt": {Type: "CERTIFICATE", Bytes: leafDER},
		"server.key": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// sealLines seals each case of stdin with token.Signed, for the differential test of the
// TypeScript codec.
func sealLines() error {
	type sealCase struct {
		Keys []struct {
			ID     string `json:"id"`
			Secret []byte `json:"secret"`
		} `json:"keys"`
		TTL       int64  `json:"ttl"`
		Clock     int64  `json:"clock"`
		Method    string `json:"method"`
		Params    string `json:"params"`
		Principal string `json:"principal"`
		State     string `json:"state"`
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var c sealCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return err
		}
		keys := make([]keyring.Key, len(c.Keys))
		for i, k := range c.Keys {
			keys[i] = keyring.NewKey(k.ID, k.Secret)
		}
		out := map[string]string{}
		r, err := keyring.New(keys...)
		if err == nil {
			var s *token.Signed
			clock := c.Clock
			s, err = token.NewSigned(keyring.Static(r), token.SignedTTL(time.Duration(c.TTL)*time.Second),
				token.SignedClock(func() time.Time { return time.Unix(clock, 0) }))
			if err == nil {
				var tok string
				tok, err = s.Seal(token.Binding{Method: c.Method, Params: json.RawMessage(c.Params),
					Principal: json.RawMessage(c.Principal)}, json.RawMessage(c.State))
				out["token"] = tok
			}
		}
		if err != nil {
			delete(out, "token")
			out["error"] = err.Error()
			switch {
			case token.IsInputError(err):
				out["kind"] = "input"
			case token.IsConfigError(err):
				out["kind"] = "config"
			default:
				out["kind"] = "other"
			}
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return sc.Err()
}
